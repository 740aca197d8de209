"""Shows that the exactness and hostile-client tests can fail: breaks the
code on purpose, one line at a time, and runs the tests that should notice.

Each mutation names a file, the exact line it changes (compared without
leading and trailing spaces; it must occur exactly once) and what it becomes.
For each one, in turn: apply it, rebuild what the tests use, run those tests
(under `nice`), put the file back and rebuild the same targets, so the tree
is clean before the next one. At the end a table is printed:

    mutation | where | result

where result is the first test that failed ("caught by ..."), NOT CAUGHT
when every test passed (a hole in the tests, or a mutation that changes
nothing observable), "not run" when every test was skipped (a model or a
program they need is missing: nothing was shown either way), "does not
apply" when the line is not in the file (the source moved: update the
mutation), or "build failed".

    /usr/bin/python3 tests/mutate.py --list          # the mutations
    /usr/bin/python3 tests/mutate.py                 # all of them (long: QEMU boots)
    /usr/bin/python3 tests/mutate.py batch-swap-tokens sysfuzz-unknown-call-succeeds

The QEMU tests need `make -j2 all test-models` first, as for `make test`.
Never leave it interrupted without checking `git status`: the file being
mutated is restored in a `finally`, but a killed run cannot do that."""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
NICE = ["nice", "-n", "10"]


def host(tags):
    """The Catch2 host tests with these tags."""
    return (f"unit_tests {tags}", ["build/host/unit_tests", tags])


def pytest(path, select=None):
    argv = [PY, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", path]
    if select:
        argv += ["-k", select]
    return (f"{os.path.basename(path)}" + (f" -k '{select}'" if select else ""), argv)


class Mutation:
    def __init__(self, name, path, line, becomes, build, tests, why):
        self.name, self.path, self.line, self.becomes = name, path, line, becomes
        self.build, self.tests, self.why = build, tests, why


KERNEL = ["build/kernel/kernel.elf"]
USER_AND_KERNEL = ["all"]
UNIT = ["build/host/unit_tests"]
HOST_RUNNER = ["build/host/llmrun"]
TOKTOOL = ["build/host/toktool"]

MUTATIONS = [
    Mutation("grammar-mask-lets-one-through", "lib/grammar_mask.cpp",
             "if (ok) {",
             "if (ok || id == v_.n_real / 2) {",
             UNIT + HOST_RUNNER,
             [host("[grammar]"), pytest("tests/tools/test_grammar_llmrun.py")],
             "one disallowed token (the middle id of the vocabulary) is let through every mask"),
    Mutation("grammar-apply-mask-skips-last", "lib/grammar_mask.cpp",
             "if (!mask_allows(mask, i)) logits[i] = minus_inf;",
             "if (!mask_allows(mask, i) && i + 1 < n) logits[i] = minus_inf;",
             UNIT,
             [host("[grammar]")],
             "the last id (a padding row on a padded model) keeps its logit when it is not allowed"),
    Mutation("grammar-warm-lets-favourite-through", "kernel/ai/request_grammar.cpp",
             "auto allowed = g->constraint.mask_logits(logits, vocab);",
             "uint32_t best = 0; for (uint32_t i = 1; i < vocab; i++) if (logits[i] > logits[best]) best = i; "
             "float keep = logits[best]; auto allowed = g->constraint.mask_logits(logits, vocab); logits[best] = keep;",
             KERNEL + UNIT,
             [host("[grammar][ai]"), pytest("tests/qemu/test_grammar_warm.py")],
             "the kernel's mask lets one disallowed token through: the model's favourite of the row"),
    Mutation("grammar-warm-greedy-fused-argmax", "kernel/ai/scheduler.cpp",
             "s.sampled = !s.params.greedy() || s.params.repeat_penalty != 1.0f || constrained;",
             "s.sampled = !s.params.greedy() || s.params.repeat_penalty != 1.0f;",
             KERNEL,
             [pytest("tests/qemu/test_grammar_warm.py")],
             "a greedy constrained request takes the classifier's fused argmax, so it is never masked"),
    Mutation("grammar-warm-masks-first-token-only", "kernel/ai/worker.cpp",
             "if (Request* r = s.request; r->grammar != nullptr) {",
             "if (Request* r = s.request; r->grammar != nullptr && r->n_generated == 0) {",
             KERNEL,
             [pytest("tests/qemu/test_grammar_warm.py")],
             "only a constrained request's first token is masked"),
    Mutation("grammar-warm-no-prefix-reason", "kernel/ai/requests.cpp",
             "if (finish == llm::Finish::Length && !grammar_matched(r.grammar)) return KAI_AI_FINISH_PREFIX;",
             "if (false) return KAI_AI_FINISH_PREFIX;",
             KERNEL,
             [pytest("tests/qemu/test_grammar_warm.py")],
             "a constrained request cut by its token limit says finish=length though its output is no match"),
    Mutation("grammar-warm-stuck-is-plain-failure", "kernel/ai/scheduler.cpp",
             "fail(r, static_cast<int32_t>(s.error.code), s.grammar_stuck ? KAI_AI_FINISH_NO_TOKEN : KAI_AI_FINISH_FAILED);",
             "fail(r, static_cast<int32_t>(s.error.code), KAI_AI_FINISH_FAILED);",
             KERNEL,
             [pytest("tests/qemu/test_grammar_warm.py", "unspellable")],
             "a request whose grammar no token can continue fails without finish=no-token (the client cannot say why)"),
    Mutation("grammar-memory-not-reported", "kernel/ai/sys_ai.cpp",
             "res.grammar_mask_bytes = r->grammar_mask_bytes;",
             "res.grammar_mask_bytes = 0;",
             KERNEL,
             [pytest("tests/qemu/test_grammar_warm.py", "aistat")],
             "ai_wait reports no mask-cache bytes for a constrained request"),
    Mutation("grammar-compiles-not-counted", "kernel/ai/requests.cpp",
             "counters.grammars++;",
             "counters.grammars += n.n_predict > 30;",
             KERNEL,
             [pytest("tests/qemu/test_grammar_warm.py", "aistat")],
             "aistat's compiled= misses constrained requests (those with --predict 30 or less)"),
    Mutation("regex-range-misses-end", "lib/grammar_regex.cpp",
             "s.add_range(lo, hi);",
             "s.add_range(lo, hi - 1);",
             ["build/host/grammartool"],
             [pytest("tests/tools/test_grammar.py")],
             "a class range [a-c] leaves out its last character"),
    Mutation("json-int-range-top-digit", "lib/grammar_json.cpp",
             "char mid_hi = hi_nines ? hi[0] : char(hi[0] - 1);",
             "char mid_hi = hi_nines ? hi[0] : hi[0];",
             ["build/host/grammartool"],
             [pytest("tests/tools/test_grammar.py", "integer_bounds")],
             "an integer range [13, 2047] lets 2048..2999 through (any tail after the top digit)"),
    Mutation("json-number-max-any-fraction", "lib/grammar_json.cpp",
             'o.str("(\\\\.0+)?");',
             'o.str("(\\\\.[0-9]+)?");',
             ["build/host/grammartool"],
             [pytest("tests/tools/test_grammar.py", "number_bounds")],
             "a number with maximum 17 takes 17.5 (any fraction at the bound, not zeros only)"),
    Mutation("json-number-exclusive-min-zero-fraction", "lib/grammar_json.cpp",
             'o.str("\\\\.[0-9]*[1-9][0-9]*");',
             'o.str("\\\\.[0-9]+");',
             ["build/host/grammartool"],
             [pytest("tests/tools/test_grammar.py", "number_bounds")],
             "a number with exclusiveMinimum 9 takes 9.0 (a fraction of zeros at an open bound)"),
    Mutation("doc-c-example-stale-field", "docs/userspace.md",
             "req.grammar.error_text_len = sizeof why;",
             "req.grammar.error_len = sizeof why;",
             [],
             [pytest("tests/tools/test_doc_c_example.py")],
             "the C example in docs/userspace.md names a field kai_ai_grammar does not have"),
    Mutation("batch-swap-tokens", "lib/llm_batch.cpp",
             "for (uint32_t j = 0; j < m_argmax; j++) items[which_[j]].next = best[j].index;",
             "for (uint32_t j = 0; j < m_argmax; j++) items[which_[j]].next = best[m_argmax > 1 && j < 2 ? 1 - j : j].index;",
             UNIT + USER_AND_KERNEL,
             [host("[batch]"), pytest("tests/qemu/test_ai.py", "test_batched_tokens_equal_solo and 1-1-8")],
             "two requests in one batched pass get each other's next token"),
    Mutation("rows-fused-blocks-shifted", "lib/llm_rows.cpp",
             "first = end;",
             "first = end + 1;",
             UNIT,
             [host("[rows]"), host("[batch]")],
             "a fused job lays the products' 4-row blocks end to end with a gap, so rows are left out"),
    Mutation("rows-swiglu-last-row", "lib/llm_rows.cpp",
             "for (uint32_t r = r0; r < r1; r++) g[r] = silu_f(g[r]) * u[r];",
             "for (uint32_t r = r0; r + 1 < r1; r++) g[r] = silu_f(g[r]) * u[r];",
             UNIT,
             [host("[rows]"), host("[batch]")],
             "the SwiGLU step in the gate|up job misses the last row of every part"),
    Mutation("qkv-not-fused", "lib/llm_forward.cpp",
             "project_all(qkv, 3, a);",
             "for (const Product& p : qkv) project_all(&p, 1, a);",
             UNIT,
             [host("[batch][parallel]")],
             "q, k and v go to the row team as three jobs again (the same bits, three hand-offs)"),
    Mutation("paged-kv-wrong-row", "lib/llm_session.h",
             "size_t row = ((size_t(table_[pos / B]) * n_full_ + slot) * B + pos % B) * cfg_->kv_dim();",
             "size_t row = ((size_t(table_[pos / B]) * n_full_ + slot) * B + ((pos % B) & ~1u)) * cfg_->kv_dim();",
             UNIT,
             [host("[paged]")],
             "paged K/V rows of positions 2j and 2j+1 share one row (an odd position overwrites its even neighbour). "
             "A first version, row (pos + 1) % B, was a permutation inside each block: an equivalent mutation that "
             "no test can catch, since reads and writes both go through kv_rows"),
    Mutation("loader-refuses-float-weights", "lib/llm_model.cpp",
             "if (m.f) return check_finite(file, what, m.f, uint64_t(m.rows) * m.cols);",
             "if (m.f) return Error::make(ErrorCode::BadValue).str(file).str(\": float weights refused\");",
             UNIT,
             [host("[batch]"), host("[paged]")],
             "every bundle with float weights fails to load (the exactness tests must not quietly drop them)"),
    Mutation("drop-last-token", "kernel/ai/sys_ai.cpp",
             "return static_cast<uint64_t>(res.n_generated);",
             "return static_cast<uint64_t>(res.n_generated - (res.n_generated > 1));",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_ai.py", "test_batched_tokens_equal_solo and 1-1-8")],
             "ai_wait reports one token fewer than the request generated (solo and batched alike)"),
    Mutation("kv-release-while-referenced", "kernel/ai/kv_cache.cpp",
             "if (--k.refs[b] > 0) return;",
             "if (--k.refs[b] > 1) return;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_ai.py", "test_paged_kv_and_prefix_cache_are_exact")],
             "a KV block still held by one request goes back to the free list or LRU and can be taken by another"),
    Mutation("pass-checkpoint-one-late", "kernel/ai/scheduler.cpp",
             "if (s.pass_ckpt[c].pos == at + 1) item.keep_state = &s.pass_ckpt[c].writer.sink;",
             "if (s.pass_ckpt[c].pos == at) item.keep_state = &s.pass_ckpt[c].writer.sink;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_qwen_reuse.py", "reuse_prefixes_exactly")],
             "a checkpoint taken inside a pass holds the state one position past the one it is filed at"),
    Mutation("pass-checkpoint-skips-deltanet-state", "lib/llm_forward.cpp",
             "if (const StateSink* keep = b.items_[i].keep_state) keep->put(keep->ctx, s.ssm_offset(job.slot, j), S, size_t(dk) * dv);",
             "",
             UNIT,
             [host("[checkpoint]")],
             "a checkpoint taken inside a pass gets the conv windows but not the DeltaNet states"),
    Mutation("final-checkpoint-free-blocks-only", "kernel/ai/kv_checkpoint.cpp",
             "while (k.n_free < k.blocks_per_ckpt && ckpt_evict_oldest(k, true)) {",
             "while (false && k.n_free < k.blocks_per_ckpt && ckpt_evict_oldest(k, true)) {",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_qwen_reuse.py", "full_pool")],
             "a finished request's final checkpoint takes free blocks only: in a full pool the next chat turn "
             "resumes at the previous prompt, not at the previous answer"),
    Mutation("final-checkpoint-takes-awaited", "kernel/ai/kv_checkpoint.cpp",
             "while (k.n_free < k.blocks_per_ckpt && ckpt_evict_oldest(k, true)) {",
             "while (k.n_free < k.blocks_per_ckpt && ckpt_evict_oldest(k, false)) {",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_qwen_reuse.py", "preempted")],
             "a finished request's final checkpoint evicts the checkpoint a preempted request is to come back to"),
    Mutation("checkpoint-resume-one-off", "kernel/ai/kv_cache.cpp",
             "resume = found == kNoCkpt ? 0 : k.ckpt[found].pos;",
             "resume = found == kNoCkpt ? 0 : k.ckpt[found].pos - 1;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_qwen_reuse.py", "reuse_prefixes_exactly")],
             "a request of a recurrent model resumes one position before the checkpoint it restores"),
    Mutation("checkpoint-not-held", "kernel/ai/kv_checkpoint.cpp",
             "bool evictable(const Checkpoint& r) { return r.state == CkptState::Cached && r.readers == 0 && !r.held; }",
             "bool evictable(const Checkpoint& r) { return r.state == CkptState::Cached && r.readers == 0; }",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_qwen_reuse.py", "preempted")],
             "a running request's newest checkpoint is evicted like any other: a preempted request starts again from 0"),
    Mutation("rope-row-shifted", "lib/llm_rope.cpp",
             "sincos_d(double(pos) * inv_freq, &s, &co);",
             "sincos_d(double(pos + 1) * inv_freq, &s, &co);",
             UNIT,
             [host("[rope]")],
             "RoPE rows past the bundle's table are those of the next position"),
    Mutation("qwen-context-stays-bundles", "lib/llm_rope.cpp",
             "if (n == 0) n = c.is_qwen() && c.runtime_seq_len < kDefaultQwenContext ? kDefaultQwenContext : c.runtime_seq_len;",
             "if (n == 0) n = c.runtime_seq_len;",
             UNIT + USER_AND_KERNEL,
             [host("[rope]"), pytest("tests/qemu/test_qwen_reuse.py", "reuse_prefixes_exactly")],
             "a Qwen model keeps its bundle's 64 positions by default"),
    Mutation("qwen-key-without-output", "kernel/ai/scheduler.cpp",
             "if (models[r.model].summary.config.n_linear_layers() > 0) {",
             "if (false) {",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_qwen_reuse.py", "reuse_prefixes_exactly")],
             "a recurrent model's output is not cached: no checkpoint at the end of a finished request's sequence"),
    Mutation("final-checkpoint-one-early", "kernel/ai/scheduler.cpp",
             "if (s.recurrent && !s.rewind && (s.ckpt_write = kv_final_checkpoint(prefix_key(*r), r->kv, r->fed)) != kNoCkpt) {",
             "if (s.recurrent && !s.rewind && (s.ckpt_write = kv_final_checkpoint(prefix_key(*r), r->kv, r->fed - 1)) != kNoCkpt) {",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_qwen_reuse.py", "reuse_prefixes_exactly")],
             "a finished request's checkpoint is filed one position before the state it holds"),
    Mutation("recurrent-twin-stays-private", "kernel/ai/kv_cache.cpp",
             "if (twin != kNoBlock && k.recurrent) {",
             "if (twin != kNoBlock && false) {",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_qwen_chat.py")],
             "a recurrent request's recomputed copy of a cached block stays private: the chain of cached blocks, "
             "and the checkpoints after it, stop there (chat turns resume only at the first turn's prompt)"),
    Mutation("checkpoint-ignores-domain", "kernel/ai/kv_checkpoint.cpp",
             "if (r.state != CkptState::Cached || r.anchor != anchor || r.anchor_tag != tag || r.pos != pos) return false;",
             "if (r.state != CkptState::Cached || r.anchor != anchor || r.pos != pos) return false;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_qwen_reuse.py", "domain")],
             "a checkpoint below the first block is found from any session domain"),
    Mutation("skip-cancel-check", "kernel/ai/scheduler.cpp",
             "if (r->cancel_requested) {",
             "if (false && r->cancel_requested) {",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_hostile.py", "test_kill_storm and 1-1")],
             "the scheduler no longer stops a running request whose client cancelled it"),
    Mutation("kthread-keeps-its-hart", "kernel/trap.cpp",
             "if (intr == Interrupt::Timer && this_cpu()->proc &&",
             "if (intr == Interrupt::Timer && this_cpu()->proc && !this_cpu()->proc->is_kthread &&",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_hostile.py", "test_shell_answers_while_a_request_runs_on_one_hart")],
             "the timer no longer preempts kernel threads: a worker keeps its hart until its request is done"),
    Mutation("stream-waits-for-finish", "kernel/ai/sys_ai.cpp",
             "while (r->n_generated <= from && !finished(r->state)) {",
             "while (!finished(r->state)) {",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_ai.py", "test_streaming_sampling_and_stop_sequences")],
             "ai_read returns tokens only when the request has finished: no streaming"),
    Mutation("control-from-background", "kernel/ai/sys_ai.cpp",
             "if (pid != 1 && console_foreground() != pid) return Errno::Perm;",
             "if (false && pid != 1 && console_foreground() != pid) return Errno::Perm;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_ai.py", "test_scheduling_policies and 1")],
             "a background process may change the service's policy (only the console's foreground one should)"),
    Mutation("fair-output-not-charged", "kernel/ai/scheduler.cpp",
             "if (!r->orphaned) fair_counters.charge_output(r->owner_pid, 1);",
             "if (!r->orphaned) fair_counters.charge_output(r->owner_pid, 0);",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_sharing.py", "test_fair_policy_serves_flood_and_light_processes")],
             "the fair policy no longer charges a process for the tokens it is given"),
    Mutation("aging-ignored", "kernel/ai/scheduler.cpp",
             "if (now - ready[i]->t_submit >= aging_ns) return ready[i];",
             "if (false && now - ready[i]->t_submit >= aging_ns) return ready[i];",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_ai.py", "test_scheduling_policies and 1"), host("[policy]")],
             "an overdue request no longer runs before the policy's choice"),
    Mutation("load-meter-counts-queued-only", "kernel/ai/load_meter.cpp",
             "uint64_t in_system = queued + running_count();",
             "uint64_t in_system = queued;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_bench.py", "test_littles_law_holds"), host("[load_meter]")],
             "the load meter leaves running requests out of the number in the system"),
    Mutation("draft-kept-unchecked", "kernel/ai/scheduler.cpp",
             "bool accepted = !reject_drafts && p.items[s.first + j + 1].token == next;",
             "bool accepted = !reject_drafts;",
             UNIT,
             [host("[drafts]")],
             "commit() keeps a proposed token whatever the model chose at the position before it"),
    Mutation("verify-kept-unchecked", "user/llmrun/llmrun.cpp",
             "if (stop || j == d || toks[j + 1] != tok) break;",
             "if (stop || j == d) break;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_ai_speculate.py", "test_cold_path_speculation_same_tokens")],
             "llmrun keeps a draft whatever the model chose at the position before it"),
    Mutation("deltanet-head-items-reversed", "lib/llm_forward.cpp",
             "for (uint32_t i = 0; i < b.n_; i++) {",
             "for (uint32_t i = b.n_; i-- > 0;) {",
             UNIT,
             [host("[batch]")],
             "a DeltaNet head updates its state for a prompt chunk's tokens last to first"),
    Mutation("merge-needs-room-for-bytes", "lib/llm_tokenizer.cpp",
             "if (need > room && need <= kMergeScratch) {",
             "if (false) {",
             UNIT,
             [host("[tokenizer]")],
             "encode needs a slot per byte of a word in the caller's buffer (a stop text ' available' is 'more than 8 tokens')"),
    Mutation("prediction-cursor-one-ahead", "lib/llm_speculate.h",
             "uint32_t c = at + (g - at_output);",
             "uint32_t c = at + (g - at_output) + 1;",
             USER_AND_KERNEL + UNIT,
             [host("[drafts]"), pytest("tests/qemu/test_ai_speculate.py", "test_one_request_same_tokens_with_every_proposer")],
             "the predicted proposer drafts the prediction one id ahead of the output (an exact prediction loses its drafts)"),
    Mutation("rejected-drafts-free", "kernel/ai/scheduler.cpp",
             "if (s.drafts > drafts_kept && !r->orphaned) fair_counters.charge_rejected_drafts(r->owner_pid, s.drafts - drafts_kept);",
             "(void)0;   // rejected drafts cost their client nothing",
             UNIT,
             [host("[fair][drafts]")],
             "the fair policy does not charge a client for its rejected drafts"),
    Mutation("draft-control-ignores-misses", "lib/llm_draft_control.h",
             "missed_weight = static_cast<uint16_t>(missed_weight * 7 / 8 + (kept < d ? 16 : 0));",
             "missed_weight = static_cast<uint16_t>(missed_weight * 7 / 8);",
             UNIT,
             [host("[speculate]")],
             "adaptive speculation never learns from a rejected draft (a proposer that always misses keeps its drafts)"),
    Mutation("rollback-keeps-blocks", "kernel/ai/scheduler.cpp",
             "if (s.rewind) kv_shrink(r->model, r->kv, fed);",
             "(void)0;   // no shrink",
             UNIT,
             [host("[drafts]")],
             "a rollback leaves the block table covering the rejected positions"),
    Mutation("rollback-keeps-generator", "kernel/ai/scheduler.cpp",
             "if (s.sampled) r->rng_state = p.rng_after[s.first + j];   // the generator after this draw",
             "if (s.sampled && j + 1 == s.count) r->rng_state = p.rng_after[s.first + j];",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_ai.py", "test_batched_tokens_equal_solo and 2-1-8-2")],
             "after a rollback a sampled request goes on with the generator of its last computed position, not of its last accepted one"),
    Mutation("memory-victim-oldest", "kernel/ai/scheduler.cpp",
             "if (r.state == RequestState::Running && r.model == m && (!v || r.admitted_seq > v->admitted_seq)) v = &r;",
             "if (r.state == RequestState::Running && r.model == m && (!v || r.admitted_seq < v->admitted_seq)) v = &r;",
             UNIT,
             [host("[ai]")],
             "a request that needs KV blocks preempts the oldest running request of its model, not the youngest"),
    Mutation("uptime-runs-slow", "kernel/trap.cpp",
             "uint64_t uptime_ticks() { return clock_ns() / TICK_NS; }",
             "uint64_t uptime_ticks() { return clock_ns() / (TICK_NS + TICK_NS / 8); }",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "uptime() falls behind the clock that sleep() keeps (as a count of late timer interrupts did)"),
    Mutation("packed-int8-third-word-wrong-gain", "lib/matmul_int8.cpp",
             "take_next<L>(s2c, tot[2] + 2 * L, gc); take_next<L>(s3c, tot[3] + 2 * L, gc);",
             "take_next<L>(s2c, tot[2] + 2 * L, gc); take_next<L>(s3c, tot[3] + 2 * L, gb);",
             UNIT,
             [host("[matvec]")],
             "the 9-item int8 kernel shifts the third packed word's sums of one row by the second word's gains"),
    Mutation("idle-hart-keeps-ticking", "kernel/trap.cpp",
             "if (stop_tick_here()) {",
             "if (false && stop_tick_here()) {",
             KERNEL,
             [pytest("tests/qemu/test_idle.py")],
             "an idle hart keeps taking timer ticks (tickless idle undone)"),
    Mutation("profiler-misses-idle-harts", "kernel/trap.cpp",
             "if (ai::profiler_running()) resume_tick();",
             "if (false) resume_tick();",
             KERNEL,
             [pytest("tests/qemu/test_idle.py")],
             "starting the sampling profiler leaves idle harts without ticks (no idle samples)"),
    Mutation("profiler-race-no-look-before-wfi", "kernel/idle.cpp",
             "resume_tick_if_sampling();",
             "(void)0;   // no look before wfi",
             KERNEL,
             [pytest("tests/qemu/test_idle.py", "just_before")],
             "a hart whose tick stopped just before the profiler started, and was not yet flagged idle, "
             "sleeps untimed through the whole profile"),
    Mutation("cross-pair-gains-swapped", "lib/matmul_int8.cpp",
             "      gains |= uint64_t(32 - h) << (8 * i);",
             "      gains |= uint64_t(32 - h) << (8 * (m - 1 - i));",
             UNIT,
             [host("[matvec]")],
             "two items packed crosswise take each other's group gains"),
    Mutation("cross-pair-low-lane-kept", "lib/matmul_int8.cpp",
             "for (int k = 0; k < R; k++) tot[k][i] += int64_t(s[k][i] - uint64_t(low_lane(s[k][i]))) >> down;",
             "for (int k = 0; k < R; k++) tot[k][i] += int64_t(s[k][i]) >> down;",
             UNIT,
             [host("[matvec]")],
             "the two-item crosswise kernel keeps the low lane's cross terms in its sums"),
    Mutation("packed-int8-next-group-gain", "lib/matmul_int8.cpp",
             "uint32_t h = kMaxShift - xv[l].shift[gi];",
             "uint32_t h = kMaxShift - xv[l].shift[gi + 1 < groups ? gi + 1 : gi];",
             UNIT,
             [host("[matvec]")],
             "the packed stream's gain words carry the next group's gains"),
    Mutation("packed-int8-lane-bias-kept", "lib/matmul_int8.cpp",
             "for (uint32_t i = 0; i < m; i++) y[i * stride + k] = finish_int8_with(tot[k][i] - x[i].lane_fix, factor[i], scale);",
             "for (uint32_t i = 0; i < m; i++) y[i * stride + k] = finish_int8_with(tot[k][i], factor[i], scale);",
             UNIT,
             [host("[matvec]")],
             "the 4-row packed kernels leave the lane bias (2^(B-1) per group) in the totals"),
    Mutation("width-ignores-host-move", "kernel/ai/width_control.cpp",
             "if (diff * kHostMovedBy <= host_ps_) return;",
             "if (true) return;",
             UNIT,
             [host("[width]")],
             "after lost probes the row team waits up to 256 windows even when the host has changed"),
    Mutation("width-cut-on-any-drift", "kernel/ai/width_control.cpp",
             "if (diff * kHostMovedBy <= host_ps_) return;",
             "if (diff * 8 <= host_ps_) return;",
             UNIT,
             [host("[width]")],
             "a drift of a fifth counts as a host that moved (probes come back every 32 windows)"),
    Mutation("width-adopts-on-two-wins", "kernel/ai/width_control.h",
             "constexpr uint32_t kProbeWins = 3;          // wins in a row that adopt a neighbour",
             "constexpr uint32_t kProbeWins = 2;          // wins in a row that adopt a neighbour",
             UNIT,
             [host("[width]")],
             "two lucky probe windows move a row team to another width"),
    Mutation("width-reference-last-window", "kernel/ai/width_control.cpp",
             "reference_ps_ = median_of(recent_ps_, recent_count_);",
             "reference_ps_ = ps_per_mac(w);",
             UNIT,
             [host("[width]")],
             "a probe is judged against the last window at the settled width alone, stalled or not"),
    Mutation("width-event-every-product", "kernel/ai/row_team.cpp",
             "if (windows().product_done(clock_ns() - posted, macs)) trace_window();",
             "windows().product_done(clock_ns() - posted, macs); trace_window();",
             KERNEL,
             [pytest("tests/qemu/test_width.py")],
             "the trace's WIDTH event is recorded after every product, not once per closed window"),
    Mutation("width-recheck-not-a-reference", "kernel/ai/width_control.cpp",
             "verdict_ = Verdict::Reference;   // back at the settled width, as any settled window",
             "verdict_ = Verdict::Won;",
             UNIT + KERNEL,
             [host("[width]"), pytest("tests/qemu/test_width.py")],
             "a recheck window at the settled width is reported as a won probe"),
    Mutation("survey-takes-the-mean", "kernel/ai/width_survey.cpp",
             "return median_of(ps_[width], kSurveyRounds);",
             "return (ps_[width][0] + ps_[width][1] + ps_[width][2]) / 3;",
             UNIT,
             [host("[survey]")],
             "the survey judges a width by the mean of its rounds (one stalled window decides)"),
    Mutation("survey-no-margin", "kernel/ai/width_survey.cpp",
             "if (ps != UINT64_MAX && ps + ps / kBetterBy < ref) best = w;",
             "if (ps != UINT64_MAX && ps < ref) best = w;",
             UNIT,
             [host("[survey]")],
             "the survey takes a wider width that is faster by any margin"),
    Mutation("survey-ignored", "kernel/ai/row_team.cpp",
             "for (uint32_t k = 2; k <= threads_; k++) windows_by_limit_[k].start_at(survey.best(k));",
             "",
             KERNEL,
             [pytest("tests/qemu/test_width.py")],
             "the team times every width at boot but starts at its full width anyway"),
    Mutation("sh-console-after-fork", "user/bin/sh.cpp",
             "bool hand_over = !background && !in_subshell && pipe(handed) == 0;",
             "bool hand_over = false;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_userspace.py", "foreground")],
             "the shell's child runs before the shell has made it the console's foreground process"),
    Mutation("harts-limit-ignored", "kernel/ai/row_team.cpp",
             "return limit_ <= 1 ? 1 : chunks_;",
             "return chunks_;",
             KERNEL,
             [pytest("tests/qemu/test_ai.py", "aictl_limits")],
             "`aictl harts 1` leaves a pass cut into parts for the row team (not as ai.harts=1)"),
    Mutation("width-judges-other-work", "kernel/ai/width_control.cpp",
             "if (!comparable(product_size(w))) {",
             "if (false) {",
             UNIT,
             [host("[width]")],
             "a probe window of other work (a prompt chunk against decode steps) is judged as if comparable"),
    Mutation("width-probe-wait-ignores-loss", "kernel/ai/width_control.cpp",
             "if (wait < affordable) wait = affordable;",
             "",
             UNIT,
             [host("[width]")],
             "a badly lost probe is retried as soon as a narrowly lost one (the probe budget ignores the loss)"),
    Mutation("exp-one-term-short", "lib/llm_math.cpp",
             "constexpr int kExpTerms = 11;   // n = 0..10",
             "constexpr int kExpTerms = 10;   // n = 0..10",
             UNIT,
             [host("[math]")],
             "the integer exp's polynomial stops one term early (7e-9 instead of 5e-10)"),
    Mutation("float-of-double-ties-up", "lib/float_bits.h",
             "uint64_t rounded = (rebased + 0x0fffffffull + odd) >> 29;",
             "uint64_t rounded = (rebased + 0x10000000ull) >> 29;",
             UNIT,
             [host("[float_bits]")],
             "double -> float on the bits rounds ties up, not to even as the instruction does"),
    Mutation("int-of-double-rounds", "lib/float_bits.h",
             "uint64_t magnitude = e >= 0 ? m << e : m >> -e;",
             "uint64_t magnitude = e >= 0 ? m << e : (m + (uint64_t(1) << (-e - 1))) >> -e;",
             UNIT,
             [host("[float_bits]")],
             "double -> int64 on the bits rounds to nearest, where the cast truncates"),
    Mutation("int8-weights-read-unsigned", "lib/matvec.cpp",
             "for (int b = 0; b < 256; b++) value[b] = float(b < 128 ? b : b - 256);",
             "for (int b = 0; b < 256; b++) value[b] = float(b);",
             UNIT,
             [host("[matvec]")],
             "the float kernel's weight table reads int8 weights as unsigned bytes (-1 becomes 255)"),
    Mutation("quantize-round-half-down", "lib/matvec.cpp",
             "r = int32_t((m + (1u << (22 - e))) >> (23 - e));",
             "r = int32_t((m + (1u << (22 - e)) - 1) >> (23 - e));",
             UNIT,
             [host("[matvec]")],
             "quantize_act rounds halves towards zero (2.5 -> 2), not away from it as its float definition"),
    Mutation("quantize-no-float-add-quirk", "lib/matvec.cpp",
             "r = 1;",
             "r = 0;",
             UNIT,
             [host("[matvec]")],
             "quantize_act rounds 0.49999997 to 0, where its float definition's add rounds it to 1"),
    Mutation("width-window-whole-passes", "kernel/ai/width_control.cpp",
             "measuring_ = false;",
             "measuring_ = true;",
             UNIT,
             [host("[width]")],
             "a window goes on measuring after it closes, so windows drift through the passes"),
    Mutation("width-probe-runs-whole-pass", "kernel/ai/width_control.h",
             "uint32_t width() const { return measuring_ ? control_.width() : control_.settled_width(); }",
             "uint32_t width() const { return control_.width(); }",
             UNIT,
             [host("[width]")],
             "a probe runs the rest of its pass at the neighbour's width, not only its window"),
    Mutation("no-ownership-check", "kernel/ai/sys_ai.cpp",
             "if (r->owner_pid != me()->pid) return Errno::Perm;",
             "if (false && r->owner_pid != me()->pid) return Errno::Perm;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_hostile.py", "test_kill_storm and 1-1")],
             "any process may query, wait for or cancel another process's request"),
    Mutation("sysfuzz-unknown-call-succeeds", "kernel/syscall.cpp",
             "SyscallResult result = Errno::NoSys;",
             "SyscallResult result = uint64_t(0);",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_hostile.py", "test_sysfuzz_leaves_kernel_answering and 1")],
             "an unknown system-call number returns 0 (success) instead of ENOSYS"),
    Mutation("kernel-sampling-seed-off-by-one", "kernel/ai/requests.cpp",
             "r->rng_state = n.sampling.seed;",
             "r->rng_state = n.sampling.seed + 1;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_ai.py", "test_batched_tokens_equal_solo and 1-1-8")],
             "the kernel seeds a sampled request differently from the host runner (solo and batched alike)"),
    Mutation("commit-allocates-again", "kernel/fs/log.cpp",
             "auto r = write_blocks(true);",
             "void* page = kalloc(); auto r = page ? write_blocks(true) : ErrorOr<void>(Errno::NoMem); if (page) kfree(page);",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_oom.py", "test_commit_needs_no_memory")],
             "a log commit takes a page again (as its segment list once did) and fails when none is free"),
    Mutation("reserve-forgets-page-tables", "kernel/mem_policy.cpp",
             "return div_up(sz, PAGE_SIZE) + div_up(sz, MEGA2) + div_up(sz, GIGA) + FIXED_PAGES;",
             "return div_up(sz, PAGE_SIZE) + FIXED_PAGES;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_oom.py", "test_sbrkfail and 512M")],
             "sbrk's up-front check counts data pages only, so a big process grows into the others' headroom "
             "by the page-table pages (one per 2 MiB)"),
    Mutation("pipe-skips-accounting", "kernel/fs/pipe.cpp",
             "void* page = *f1 ? mem::take_page(mem::For::Process) : nullptr;",
             "void* page = *f1 ? kalloc() : nullptr;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_oom.py", "test_sbrkfail and 512M")],
             "a pipe's buffer comes from the kernel's reserve instead of going through the memory policy"),
    Mutation("bpe-highest-rank-first", "tools/tokenizer.py",
             "if r is not None and (best is None or r < best):",
             "if r is not None and (best is None or r > best):",
             [],
             [pytest("tests/tools/test_tokenizer_pinned.py", "python")],
             "the Python tokenizer merges the worst-ranked pair first"),
    Mutation("bpe-runtime-highest-rank-first", "lib/llm_tokenizer.cpp",
             "if (find_merge(t, w[i], w[i + 1], &rank, &merged) && rank < best_rank) {",
             "if (find_merge(t, w[i], w[i + 1], &rank, &merged) && (best_rank == kNoToken || rank > best_rank)) {",
             TOKTOOL,
             [pytest("tests/tools/test_tokenizer_pinned.py", "runtime")],
             "the runtime tokenizer merges the worst-ranked pair first. (An earlier mutation here, ignoring the "
             "split-every-digit rule, was not caught and cannot be on SmolLM2: its vocabulary has no token of two "
             "digits, so digits come out one by one either way)"),
    Mutation("bpe-learner-stale-counts", "tools/make_tokenizer.py",
             "pairs[q] -= freq[i]",
             "pairs[q] -= 0",
             [],
             [pytest("tests/tools/test_make_tokenizer.py", "naive")],
             "kai's BPE learner keeps counting the pairs a merge has just removed"),
    Mutation("stop-text-not-applied", "user/lib/kai_text.cpp",
             "if (n <= 0 || !ai_add_stop_ids(g, ids, uint32_t(n))) {",
             "if (n <= 0) {",
             USER_AND_KERNEL + ["build/fs-smol.img"],
             [pytest("tests/qemu/test_default_text.py", "stop_text")],
             "ai encodes --stop-text but never adds it to the request's stop sequences"),
    Mutation("options-missing-value-read", "user/lib/option_parser.cpp",
             'if (at_ + 1 >= argc_) fail({name, " needs a value"});',
             'if (at_ + 1 > argc_) fail({name, " needs a value"});',
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_cli.py", "every_program_names")],
             "an option given last without its value reads argv[argc] (null) instead of saying it needs a value"),
    Mutation("options-long-model-name-cut", "user/lib/kai_options.cpp",
             "if (strlen(v) >= KAI_AI_MODEL_NAME_MAX) {",
             "if (strlen(v) >= 2 * KAI_AI_MODEL_NAME_MAX) {",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_cli.py", "every_program_names")],
             "a --model name too long for the service is cut to 15 characters instead of refused"),
    Mutation("options-second-positional-taken", "user/lib/option_parser.cpp",
             "if (current()[0] == '-' || *out != nullptr) return false;",
             "if (current()[0] == '-') return false;",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_cli.py", "every_program_names")],
             "a second MODEL argument replaces the first instead of being named as unexpected"),
    Mutation("llmrun-forks-zero-taken", "user/llmrun/llmrun.cpp",
             'args.number("--forks", 1, 64, &opt.forks) || args.text("--speculate", &speculate) ||',
             'args.number("--forks", 0, 64, &opt.forks) || args.text("--speculate", &speculate) ||',
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_cli.py", "every_program_names")],
             "llmrun (on the shared parser) takes --forks 0 instead of naming it"),
    Mutation("aitests-topic-sees-its-name", "user/aitests/main.cpp",
             "if (const Topic* t = find(argv[1])) return t->run(argc - 1, argv + 1);",
             "if (const Topic* t = find(argv[1])) return t->run(argc, argv);",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_cli.py", "every_program_names")],
             "`aitests aiprefix ...` hands the driver its own name as an argument"),
    Mutation("help-usage-on-stderr", "user/lib/option_parser.cpp",
             "option_io::write(1, usage_);",
             "option_io::write(2, usage_);",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_cli.py", "help_prints_the_usage")],
             "--help prints the usage on standard error, where `ai --help | ...` and a redirection miss it"),
    Mutation("help-exits-nonzero", "user/lib/option_parser.cpp",
             "option_io::exit(0);",
             "option_io::exit(2);",
             USER_AND_KERNEL,
             [pytest("tests/qemu/test_cli.py", "help_prints_the_usage")],
             "--help, asked for, exits with the status of a bad command line"),
    Mutation("llmrun-links-copied", "Makefile",
             "ln -f $(B)/user/bin/llmrun $@",
             "rm -f $@ && cp $(B)/user/bin/llmrun $@",
             ["-W", "build/user/bin/llmrun", "build/user/bin/llmrun_smol", "build/user/bin/llmrun_qwen"],
             [pytest("tests/qemu/test_cli.py", "llmrun_smol_and_llmrun_qwen")],
             "llmrun_smol and llmrun_qwen are copies of llmrun in the image (three inodes) instead of its names"),
    Mutation("mkfsimg-links-copied", "tools/mkfsimg.py",
             "first = same_file.get((st.st_dev, st.st_ino))",
             "first = None",
             [],
             [pytest("tests/tools/test_mkfsimg.py", "one_host_file")],
             "a program under several names (/bin/aiprefix -> aitests) is stored once per name"),
    Mutation("since-slices-decoded-text", "tools/qemu_run.py",
             "return self.console.text(mark)",
             "return self.transcript[mark:]",
             [],
             [pytest("tests/tools/test_qemu_run.py", "since")],
             "since() cuts the decoded transcript at a byte offset: a non-ASCII answer shifts the cut"),
    Mutation("console-waits-decode-from-zero", "tools/qemu_run.py",
             'text = self.buf[start:].decode("utf-8", errors="replace")',
             'text = self.buf.decode("utf-8", errors="replace")[start:]',
             [],
             [pytest("tests/tools/test_qemu_run.py", "waits_read")],
             "the waits decode the whole console, then cut it at the byte mark: characters late"),
    Mutation("demo-rc-predicts-8", "user/etc/rc",
             "ai --model SMOL --int8 --timing --predict 16 504 3575 282 4649 314",
             "ai --model SMOL --int8 --timing --predict 8 504 3575 282 4649 314",
             [],   # the test builds its demo image from user/etc itself
             [pytest("tests/qemu/test_doc_examples.py", "boot")],
             "the demo's warm request asks for 8 tokens: README.md's boot output shows 16"),
    Mutation("page-cache-stale-after-write", "kernel/fs/inode.cpp",
             "page_cache_update(ip, bn, b.value()->data, in_block, m);   // a reader or a mapping sees the write",
             "// page_cache_update(ip, bn, b.value()->data, in_block, m);",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "write() leaves the cached page as it was: read() and MAP_SHARED maps see old data"),
    Mutation("page-cache-never-hits", "kernel/fs/page_cache.cpp",
             "if (Entry* e = find(ip->dev, ip->inum, index)) {",
             "if (Entry* e = find(ip->dev, ip->inum, index); e && false) {",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "every read is a miss: a file read twice is read from the disk twice"),
    Mutation("private-store-writes-cache-page", "kernel/mmap.cpp",
             "} else if (kpage_refs(old) == 1) {",
             "} else if (kpage_refs(old) >= 1) {",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "a store to a MAP_PRIVATE page writes the shared page-cache page instead of a copy"),
    Mutation("munmap-part-keeps-pages", "kernel/mmap.cpp",
             "uvm_unmap(p->pagetable, lo, (hi - lo) / PAGE_SIZE, true);   // part of the mapping goes",
             "// (mutated: the pages stay mapped)",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "munmap of part of a mapping leaves its pages mapped"),
    Mutation("fork-shares-private-pages", "kernel/mmap.cpp",
             "if ((a.flags & KAI_MAP_SHARED) || !(flags & PTE_W)) {",
             "if (true) {",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "fork shares a MAP_PRIVATE page the parent wrote: the child's stores reach the parent"),
    Mutation("dirty-page-evicted", "kernel/fs/page_cache.cpp",
             "bool held(uint32_t i) const { return kpage_refs(entries[i].page) > 1 || entries[i].dirty; }",
             "bool held(uint32_t i) const { return kpage_refs(entries[i].page) > 1; }",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "the clock evicts a dirty page nobody maps: a shared map's stores (after MADV_DONTNEED) are lost"),
    Mutation("unmap-skips-writeback", "kernel/mmap.cpp",
             "write_back_or_say(p, pt, a, a.start, a.end);",
             "// (mutated: no write-back at munmap, exit, exec)",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "munmap, exit and exec drop a shared map's pages without writing their stores back"),
    Mutation("fork-cows-shared-page", "kernel/mmap.cpp",
             "if ((a.flags & KAI_MAP_SHARED) || !(flags & PTE_W)) {",
             "if (!(flags & PTE_W)) {",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "fork copies a written MAP_SHARED page: the child's stores do not reach the parent or the file"),
    Mutation("msync-leaves-page-writable", "kernel/mmap.cpp",
             "if (protect) *pte &= ~PTE_W;",
             "if (false) *pte &= ~PTE_W;",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "after msync a page stays writable: its next store does not fault, the page is not dirty again"),
    Mutation("write-clobbers-map-stores", "kernel/fs/page_cache.cpp",
             "if (Entry* e = find(ip->dev, ip->inum, index)) memcpy(e->page + from, block + from, n);",
             "if (Entry* e = find(ip->dev, ip->inum, index)) memcpy(e->page, block, PAGE_SIZE);",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "write() copies its whole block into the cached page: a shared map's stores elsewhere in it are lost"),
    Mutation("shared-writable-map-of-model", "kernel/mmap.cpp",
             "if (fs::page_cache_file_pinned(f->ip)) return Errno::Busy;",
             "if (false) return Errno::Busy;",
             KERNEL,
             [pytest("tests/qemu/test_vm.py", "one_copy")],
             "a loaded model's file can be mapped shared and writable: stores would change the service's weights"),
    Mutation("segment-table-at-cache-floor", "kernel/fs/readahead.cpp",
             "segs = static_cast<BlkSegment*>(mem::take_contiguous(SEG_PAGES * PAGE_SIZE, mem::For::Kernel));",
             "segs = static_cast<BlkSegment*>(mem::take_contiguous(SEG_PAGES * PAGE_SIZE, mem::For::Cache));",
             KERNEL,
             [pytest("tests/qemu/test_vm.py", "bundle_bigger")],
             "the large-read path's segment table comes from the page cache's floor: at the memory floor every "
             "read goes one 4 KiB block per disk request"),
    Mutation("exit-keeps-mappings", "kernel/proc.cpp",
             "vm_release_all(p, p->pagetable);   // its mappings' pages and files",
             "// vm_release_all(p, p->pagetable);",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "exit does not release a process's mappings: their pages leak"),
    Mutation("fork-shares-writable-pages", "kernel/vm.cpp",
             "if (*pte & PTE_W) *pte = (*pte & ~PTE_W) | PTE_COW;",
             "if (false) *pte = (*pte & ~PTE_W) | PTE_COW;",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "fork shares the parent's writable pages without copy-on-write"),
    Mutation("mmap-write-only-fd", "kernel/mmap.cpp",
             "if (!f->readable) return Errno::Access;",
             "if (false) return Errno::Access;",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "mmap of a file opened write-only succeeds"),
    Mutation("truncation-keeps-mapped-pages", "kernel/mmap.cpp",
             "if (now == a.truncations) continue;",
             "if (true) continue;",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "pages mapped before a truncation stay mapped: the old bytes show, past the new end no kill"),
    Mutation("truncation-sync-only-at-copies", "kernel/trap.cpp",
             "vm_sync_truncations(p);   // pages a truncation detached go before user code runs (mmap.h)",
             "// (mutated: no sync at the return to user mode)",
             KERNEL,
             [pytest("tests/qemu/test_kernel.py", "test_usertests and 1")],
             "truncated pages are unmapped only when the kernel copies from the process: a fork right after "
             "the truncation hands the child the old pages"),
    Mutation("model-pages-not-adopted", "kernel/ai/engine.cpp",
             "summary->pinned_pages += adopt_file(dir, names[i], cursor, sizes[i]);",
             "if (false) summary->pinned_pages += adopt_file(dir, names[i], cursor, sizes[i]);   // (mutated)",
             KERNEL,
             [pytest("tests/qemu/test_vm.py", "one_copy")],
             "the service's weights are not the bundle's cache pages: llmrun --mmap reads the disk, two copies"),
    Mutation("adopted-page-not-pinned", "kernel/fs/page_cache.cpp",
             "kpage_get(page);",
             "// (mutated: the cache takes no reference of its own)",
             KERNEL,
             [pytest("tests/qemu/test_vm.py", "one_copy")],
             "an adopted page has one holder: dropcaches (or memory pressure) evicts the service's weights"),
    Mutation("loaded-model-file-writable", "kernel/fs/sysfile.cpp",
             "else if ((want_write || (flags & KAI_O_TRUNC)) && page_cache_file_pinned(ip)) e = Errno::Busy;",
             "else if (false) e = Errno::Busy;",
             KERNEL,
             [pytest("tests/qemu/test_vm.py", "one_copy")],
             "a loaded model's file opens for writing: a write would change the service's weights in place"),
    Mutation("deleted-model-file-stays-pinned", "kernel/fs/inode.cpp",
             "page_cache_unpin_file(ip);",
             "// (mutated: a deleted file stays pinned)",
             KERNEL,
             [pytest("tests/qemu/test_vm.py", "one_copy")],
             "a deleted model file stays on the pinned list: a new file that reuses its inode is refused"),
    Mutation("write-to-loaded-model-file", "kernel/fs/inode.cpp",
             "if (page_cache_file_pinned(ip)) return Errno::Busy;",
             "if (false) return Errno::Busy;",
             KERNEL,
             [pytest("tests/qemu/test_vm.py", "one_copy")],
             "a descriptor opened before the model was loaded writes into the service's weights"),
    Mutation("pinned-pages-count-as-reclaimable", "kernel/fs/page_cache.cpp",
             "return used_count - adopted_count - dirty_count;   // a loaded model's pages never go, dirty ones not yet",
             "return used_count - dirty_count;",
             KERNEL,
             [pytest("tests/qemu/test_vm.py", "one_copy")],
             "the memory policy counts a loaded model's pinned pages as reclaimable: a fork that needs them is "
             "admitted"),
    Mutation("aistat-pinned-pages-not-counted", "kernel/ai/engine.cpp",
             "summary->pinned_pages += adopt_file(dir, names[i], cursor, sizes[i]);",
             "adopt_file(dir, names[i], cursor, sizes[i]);",
             KERNEL,
             [pytest("tests/qemu/test_vm.py", "one_copy")],
             "the service does not count the pages the cache adopted: aistat shows no pinned pages"),
    Mutation("clock-no-second-chance", "kernel/fs/page_clock.h",
             "referenced = false;   // a second chance",
             "referenced = true;   // (mutated: the bit is never cleared)",
             UNIT,
             [host("[page_clock]")],
             "the clock never clears a referenced bit: a page once looked up is never evicted"),
    Mutation("clock-evicts-held-pages", "kernel/fs/page_clock.h",
             "if (!t.used(i) || t.held(i)) continue;   // mapped or pinned: stays",
             "if (!t.used(i)) continue;",
             UNIT,
             [host("[page_clock]")],
             "the clock evicts pages that are mapped or being copied"),
]


def find_line(text, line):
    """(index, indentation) of the one line equal to `line` once stripped."""
    lines = text.split("\n")
    hits = [i for i, l in enumerate(lines) if l.strip() == line.strip()]
    if len(hits) != 1:
        return None, len(hits)
    i = hits[0]
    return i, lines[i][:len(lines[i]) - len(lines[i].lstrip())]


def run(argv, log, timeout):
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(argv)}\n")
        f.flush()
        start = f.tell()
        try:
            rc = subprocess.run(NICE + argv, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            f.write(f"timed out after {timeout} s\n")
            return "timeout"
    if rc == 0 and all_skipped(log, start):
        return "skipped"
    return rc


def all_skipped(log, start):
    """Did the pytest run whose output starts at `start` in log skip every test?"""
    with open(log) as f:
        f.seek(start)
        tail = f.read()[-2000:]
    return re.search(r"\b\d+ skipped\b", tail) is not None and re.search(r"\b\d+ passed\b", tail) is None


def make(targets, log):
    if not targets:
        return 0
    return run(["make", "-j2", *targets], log, 3600)


def try_mutation(m, log, all_tests):
    path = os.path.join(ROOT, m.path)
    if not os.path.exists(path):
        return f"does not apply: {m.path} does not exist (source moved?)", "-"
    with open(path) as f:
        original = f.read()
    index, indent = find_line(original, m.line)
    if index is None:
        return (f"does not apply: the line is in {m.path} {indent} times, not once (source moved?)", m.path)
    where = f"{m.path}:{index + 1}"
    lines = original.split("\n")
    lines[index] = indent + m.becomes
    times = os.stat(path)
    caught = []
    built = False
    try:
        with open(path, "w") as f:
            f.write("\n".join(lines))
        built = True
        if make(m.build, log) != 0:
            return "build failed (the mutation does not compile; fix it)", where
        skipped = 0
        for label, argv in m.tests:
            rc = run(argv, log, 5400)
            if rc == "skipped":
                skipped += 1
            elif rc != 0:
                caught.append(label + (" (timed out)" if rc == "timeout" else ""))
                if not all_tests:
                    break
    finally:
        with open(path, "w") as f:
            f.write(original)
        # Rebuild what was built mutated (the file is newer now), then give
        # the file back its old time: what was never built mutated (say the
        # kernel, after a host-only mutation of a lib/ header) stays up to
        # date instead of being rebuilt for nothing.
        if built and make(m.build, log) != 0:
            print(f"[mutate] rebuilding after {m.name} failed: see {log}", file=sys.stderr)
        os.utime(path, (times.st_atime, times.st_mtime))
    if caught:
        return "caught by " + "; ".join(caught), where
    if skipped == len(m.tests):
        return "not run: every test was skipped (see the log for why)", where
    return "NOT CAUGHT", where


def main():
    ap = argparse.ArgumentParser(description="one-line mutations against the tests that should catch them")
    ap.add_argument("names", nargs="*", help="mutations to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--all-tests", action="store_true", help="run every listed test, not only up to the first failure")
    ap.add_argument("--log", default=os.path.join(ROOT, "build", "mutate.log"), help="build and test output")
    a = ap.parse_args()
    known = {m.name: m for m in MUTATIONS}
    unknown = [n for n in a.names if n not in known]
    if unknown:
        ap.error(f"unknown mutation {unknown[0]!r}; --list shows them")
    chosen = [known[n] for n in a.names] if a.names else MUTATIONS
    if a.list:
        for m in chosen:
            print(f"{m.name}: {m.path}: {m.why}\n    - {m.line}\n    + {m.becomes}\n    tests: "
                  + "; ".join(label for label, _ in m.tests))
        return 0
    os.makedirs(os.path.dirname(a.log), exist_ok=True)
    open(a.log, "w").close()
    rows = []
    for m in chosen:
        t0 = time.monotonic()
        print(f"[mutate] {m.name} ...", flush=True)
        result, where = try_mutation(m, a.log, a.all_tests)
        rows.append((m.name, where, result))
        print(f"[mutate] {m.name}: {result} ({time.monotonic() - t0:.0f} s real time)", flush=True)
    print("\n| mutation | where | result |\n|---|---|---|")
    for name, where, result in rows:
        print(f"| {name} | {where} | {result} |")
    return 1 if any(r.startswith(("NOT CAUGHT", "not run", "does not apply", "build failed"))
                    for _, _, r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
