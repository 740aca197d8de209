// The AI system calls. Each one validates everything before it changes any
// state, so a rejected call creates no request and leaks nothing.
#include "requests.h"
#include "scheduler.h"
#include "service.h"
#include "models.h"
#include "engine.h"
#include "trace.h"
#include "sharing.h"
#include "load_meter.h"
#include "proposer.h"
#include "settings.h"
#include "grammar_submit.h"
#include "../proc.h"
#include "../trap.h"
#include "../string.h"
#include "../vm.h"
#include "../kalloc.h"
#include "../user_ptr.h"
#include "../console.h"
#include "../printf.h"
#include "llm_sample.h"
#include "llm_stop.h"

using namespace ai;

namespace {

Process* me() { return current_process(); }

// Looks up a request the caller may touch. ai::lock held.
ErrorOr<Request*> owned_request(int64_t id) {
  Request* r = find_request(id);
  if (r == nullptr) return Errno::NoProcess;   // ESRCH: unknown or already collected
  if (r->owner_pid != me()->pid) return Errno::Perm;
  return r;
}

kai_ai_status status_of(const Request& r) {
  kai_ai_status st{};
  st.state = abi_state(r.state);
  st.n_generated = r.n_generated;
  st.finish_reason = r.finish_reason;
  st.t_last_token_ns = r.t_last;
  return st;
}

SyscallResult reject(Errno e) {
  SpinlockGuard guard(lock);
  counters.rejected++;
  return e;
}

// Copies in and checks the request (the prompt into `prompt_page`); returns the
// model's index. Waits, if need be, until the loader has listed /AI. The
// ABI's own rules (flags, priority, reserved fields, buffer bounds) are
// checked here; the model's rules by the runtime's check_request, once.
// Sampling parameters within their maxima (ai_abi.h; the sampler's own
// limits, lib/llm_sample.h): a value above one could not take effect.
bool sampling_ok(const kai_ai_sampling& s) {
  return llm::sampling_in_range(s.temperature_milli, s.top_p_milli, s.min_p_milli, s.repeat_penalty_milli,
                                s.repeat_last_n);
}

// Copies in the stop sequences and checks their format: {len, tokens...}
// with 1 <= len <= KAI_AI_MAX_STOP_TOKENS, at most KAI_AI_MAX_STOP_SEQS.
// Their ids are checked against the model's vocabulary once it is known.
ErrorOr<void> copy_stop(const kai_ai_submit& req, uint32_t* stop) {
  if (req.stop_words == 0) return {};
  if (req.stop_words > KAI_AI_MAX_STOP_WORDS) return Errno::Invalid;
  TRY(copy_from_user(stop, UserPtr<uint32_t>(reinterpret_cast<uint64_t>(req.stop)), req.stop_words));
  if (llm::check_stop_sequences(stop, req.stop_words, UINT32_MAX) == llm::StopCheck::BadFormat)
    return Errno::Invalid;
  return {};
}

// A stop id the model cannot generate could never match: refused as a
// prompt id outside the vocabulary is.
ErrorOr<void> check_stop_ids(const uint32_t* stop, uint32_t stop_words, uint32_t vocab_size) {
  if (llm::check_stop_sequences(stop, stop_words, vocab_size) != llm::StopCheck::Ok) return Errno::Range;
  return {};
}

// A staging buffer for token ids copied in from the caller (the prompt; a
// prediction): one page, taken when needed (a kernel stack has no room for
// 4 KiB) and given back on every return from sys_ai_submit (submit() copies
// the ids into the slot).
static_assert(KAI_AI_MAX_PREDICTION * sizeof(uint32_t) <= PAGE_SIZE, "a prediction is staged in one page");
static_assert(KAI_AI_MAX_PROMPT * sizeof(uint32_t) <= PAGE_SIZE, "a prompt is staged in one page");
class IdPage {
 public:
  IdPage() = default;
  IdPage(const IdPage&) = delete;
  IdPage& operator=(const IdPage&) = delete;
  ~IdPage() {
    if (ids_) kfree(ids_);
  }
  uint32_t* get() {
    if (!ids_) ids_ = static_cast<uint32_t*>(kalloc());
    return ids_;
  }
  const uint32_t* ids() const { return ids_; }

 private:
  uint32_t* ids_ = nullptr;
};

// The speculation request's shape (ai_abi.h, kai_ai_speculation): every
// field the proposer does not use is zero, so it can carry meaning later.
bool speculation_ok(const kai_ai_speculation& sp) {
  if (sp.reserved != 0 || (sp.flags & ~uint32_t(KAI_AI_SPEC_ADAPTIVE))) return false;
  switch (sp.proposer) {
    case KAI_AI_PROPOSER_DEFAULT:
    case KAI_AI_PROPOSER_NONE:
      return sp.max_drafts == 0 && sp.ngram_max == 0 && sp.prediction_len == 0 && sp.prediction == nullptr &&
             sp.flags == 0;
    case KAI_AI_PROPOSER_NGRAM:
    case KAI_AI_PROPOSER_ECHO:
    case KAI_AI_PROPOSER_PREDICTED:
      break;
    default:
      return false;
  }
  if (sp.max_drafts == 0 || sp.max_drafts > KAI_AI_MAX_DRAFTS) return false;
  if (sp.ngram_max != 0 && (sp.proposer != KAI_AI_PROPOSER_NGRAM || sp.ngram_max > KAI_AI_MAX_NGRAM)) return false;
  if (sp.proposer != KAI_AI_PROPOSER_PREDICTED) return sp.prediction_len == 0 && sp.prediction == nullptr;
  return sp.prediction_len >= 1 && sp.prediction_len <= KAI_AI_MAX_PREDICTION;
}

// Copies in the prediction of a PREDICTED request (shape already checked).
ErrorOr<void> copy_prediction(const kai_ai_speculation& sp, IdPage& page) {
  if (sp.proposer != KAI_AI_PROPOSER_PREDICTED) return {};
  uint32_t* ids = page.get();
  if (ids == nullptr) return Errno::NoMem;
  TRY(copy_from_user(ids, UserPtr<uint32_t>(reinterpret_cast<uint64_t>(sp.prediction)), sp.prediction_len));
  return {};
}

ErrorOr<void> check_prediction_ids(const kai_ai_speculation& sp, const uint32_t* ids, uint32_t vocab_size) {
  if (sp.proposer != KAI_AI_PROPOSER_PREDICTED) return {};
  for (uint32_t i = 0; i < sp.prediction_len; i++)
    if (ids[i] >= vocab_size) return Errno::Range;
  return {};
}

// A compiled grammar between its compile and submit(): freed on every way
// out that does not submit (quota, full queue, a kill), after ai::lock is
// released (it is declared before the lock's guard).
class GrammarOwner {
 public:
  explicit GrammarOwner(RequestGrammar* g) : g_(g) {}
  ~GrammarOwner() { grammar_free(g_); }
  GrammarOwner(const GrammarOwner&) = delete;
  GrammarOwner& operator=(const GrammarOwner&) = delete;
  RequestGrammar* release() {
    RequestGrammar* g = g_;
    g_ = nullptr;
    return g;
  }

 private:
  RequestGrammar* g_;
};

ErrorOr<int> validate(const kai_ai_submit& req, IdPage& prompt_page, uint32_t* stop, IdPage& prediction) {
  if (req.flags & ~uint32_t(KAI_AI_NONBLOCK | KAI_AI_INT8 | KAI_AI_STOP_AT_EOS)) return Errno::Invalid;
  for (uint32_t word : req.reserved)
    if (word != 0) return Errno::Invalid;   // kept for later
  if (!sampling_ok(req.sampling)) return Errno::Invalid;
  if (!speculation_ok(req.spec)) return Errno::Invalid;
  if (!grammar_shape_ok(req.grammar)) return Errno::Invalid;
  // Proposed tokens are not checked against a grammar: a constrained
  // request gets none, so asking for a proposer with one is an error.
  if (req.grammar.kind != KAI_AI_GRAMMAR_NONE && req.spec.proposer != KAI_AI_PROPOSER_DEFAULT &&
      req.spec.proposer != KAI_AI_PROPOSER_NONE)
    return Errno::Invalid;
  if (req.priority > KAI_AI_MAX_PRIORITY) return Errno::Invalid;
  if (req.prompt_len == 0 || req.n_predict == 0) return Errno::Invalid;   // before any copy
  if (req.prompt_len > KAI_AI_MAX_PROMPT) return Errno::TooBig;          // bounds the copy below
  if (req.n_predict > kMaxOutput) return Errno::FileTooBig;               // the result buffer
  char name[KAI_AI_MODEL_NAME_MAX];
  auto copied = copy_string_from_user(name, UserPtr<char>(reinterpret_cast<uint64_t>(req.model)), sizeof(name));
  if (copied.is_error()) return copied.error() == Errno::NameTooLong ? Errno::NoEnt : Errno::Fault;
  uint32_t* prompt = prompt_page.get();
  if (prompt == nullptr) return Errno::NoMem;
  TRY(copy_from_user(prompt, UserPtr<uint32_t>(reinterpret_cast<uint64_t>(req.prompt)), req.prompt_len));
  TRY(copy_stop(req, stop));
  TRY(copy_prediction(req.spec, prediction));

  SpinlockGuard guard(lock);
  while (!models_known) {
    if (current_killed()) return Errno::Interrupted;
    sleep(&models_known_chan, lock);
  }
  int m = find_model(name);
  if (m < 0) return Errno::NoEnt;
  const Model& model = models[m];
  if (model.state == KAI_AI_MODEL_FAILED) return Errno::NoDevice;
  if (auto checked = engine_check_request(model.summary, prompt, req.prompt_len, req.n_predict); checked.is_error())
    return checked.error().code;
  TRY(check_stop_ids(stop, req.stop_words, model.summary.vocab_size));
  TRY(check_prediction_ids(req.spec, prediction.ids(), model.summary.vocab_size));
  // Bigger than the model's whole KV pool: it could never run (ai.kv_mb).
  if (!kv_could_fit(m, req.prompt_len + req.n_predict)) return Errno::NoMem;
  return m;
}

}  // namespace

SyscallResult sys_ai_submit() {
  kai_ai_submit req;
  if (copy_from_user(&req, arg_ptr<kai_ai_submit>(0)).is_error()) return reject(Errno::Fault);
  IdPage prompt;
  uint32_t stop[KAI_AI_MAX_STOP_WORDS];
  IdPage prediction;
  auto model = validate(req, prompt, stop, prediction);
  if (model.is_error()) return reject(model.error());
  // The grammar, compiled for the model (without ai::lock: it sleeps).
  // Owned here until submit() hands it to the request.
  auto compiled = compile_submitted_grammar(req.grammar, model.value());
  if (compiled.is_error()) return reject(compiled.error().code);
  GrammarOwner grammar(compiled.value());

  SpinlockGuard guard(lock);
  for (;;) {
    SubmitCheck check = may_submit(me()->pid);   // the quota, then a free slot (scheduler.h)
    if (check == SubmitCheck::OverQuota) {
      counters.rejected++;
      return Errno::Quota;
    }
    if (check == SubmitCheck::Ok) break;
    if (req.flags & KAI_AI_NONBLOCK) {
      counters.rejected++;
      return Errno::Again;
    }
    if (current_killed()) return Errno::Interrupted;
    sleep(&slot_freed_chan, lock);
  }
  note_backlogged(me()->pid);   // the fair policy's counters (fair_share.h)
  Request* r = submit(NewRequest{me()->pid, model.value(), prompt.ids(), req.prompt_len, req.n_predict, req.flags,
                                 req.priority, prefix_domain(me()->sid), req.sampling, stop, req.stop_words,
                                 &req.spec, prediction.ids(), grammar.release()});
  trace::emit_at(r->t_submit, KAI_TRACE_SUBMIT, r->id, r->model, r->prompt_len, r->n_predict, r->priority,
                 r->queue_depth_at_submit);
  return static_cast<uint64_t>(r->id);
}

SyscallResult sys_ai_wait() {
  int64_t id = arg_int(0);
  auto out = arg_ptr<uint32_t>(1);
  uint64_t capacity = arg_raw(2);
  auto result = arg_ptr<kai_ai_result>(3);

  SpinlockGuard guard(lock);
  Request* r = TRY(owned_request(id));
  while (!finished(r->state)) {
    if (current_killed()) return Errno::Interrupted;
    sleep(r, lock);
    // The slot may have been collected by another thread of ours meanwhile.
    r = TRY(owned_request(id));
  }
  if (capacity < r->n_generated) return Errno::NoSpace;
  kai_ai_result res{};
  res.state = abi_state(r->state);
  res.error = r->error;
  res.n_prompt = r->prompt_len;
  res.n_generated = r->n_generated;
  res.queue_depth_at_submit = r->queue_depth_at_submit;
  res.worker = r->worker;
  res.t_submit_ns = r->t_submit;
  res.t_start_ns = r->t_start;
  res.t_first_token_ns = r->t_first;
  res.t_finish_ns = r->t_finish;
  res.iterations = r->iterations;
  res.batch_sum = static_cast<uint32_t>(r->batch_sum);
  res.finish_reason = r->finish_reason;
  res.cached_tokens = r->cached_tokens;
  res.preemptions = r->preemptions;
  // Microseconds, rounded down, so service = (finish - start) - requeued
  // can never go below zero.
  res.requeued_us = static_cast<uint32_t>(r->requeued_ns / 1000);
  res.priority_preemptions = r->priority_preemptions;
  res.client_served = fair_counters.served(r->owner_pid);
  res.drafted = r->drafted;
  res.accepted = r->accepted;
  res.grammar_dfa_bytes = r->grammar_dfa_bytes;
  res.grammar_mask_bytes = r->grammar_mask_bytes;
  res.grammar_bytes = r->grammar_bytes;
  res.grammar_masks = r->grammar ? static_cast<uint32_t>(r->grammar->masks.misses) : r->grammar_masks;
  // A bad buffer keeps the result: the caller may wait again with a good one.
  if (r->n_generated > 0) TRY(copy_to_user(out, r->output, r->n_generated));
  if (!result.is_null()) TRY(copy_to_user(result, &res));
  collect(r);
  return static_cast<uint64_t>(res.n_generated);
}

SyscallResult sys_ai_query() {
  int64_t id = arg_int(0);
  kai_ai_status st{};
  {
    SpinlockGuard guard(lock);
    Request* r = TRY(owned_request(id));
    st = status_of(*r);
  }
  TRY(copy_to_user(arg_ptr<kai_ai_status>(1), &st));
  return 0;
}

// Streaming: see ai_abi.h. Wakes at every published token (the worker
// wakes the slot's channel) and at the end.
SyscallResult sys_ai_read() {
  int64_t id = arg_int(0);
  uint64_t from = arg_raw(1), capacity = arg_raw(3);
  auto out = arg_ptr<uint32_t>(2);
  auto status = arg_ptr<kai_ai_status>(4);
  auto times = arg_ptr<uint64_t>(5);
  // Room for at least one token: a 0 return must only ever mean "finished".
  if (capacity == 0) return Errno::Invalid;
  SpinlockGuard guard(lock);
  Request* r = TRY(owned_request(id));
  while (r->n_generated <= from && !finished(r->state)) {
    if (current_killed()) return Errno::Interrupted;
    sleep(r, lock);
    r = TRY(owned_request(id));   // collected meanwhile by another thread of ours?
  }
  uint64_t n = r->n_generated > from ? r->n_generated - from : 0;
  if (n > capacity) n = capacity;
  if (n > 0) TRY(copy_to_user(out, r->output + from, n));
  if (n > 0 && !times.is_null()) TRY(copy_to_user(times, r->output_ns + from, n));
  if (!status.is_null()) {
    kai_ai_status st = status_of(*r);
    TRY(copy_to_user(status, &st));
  }
  return n;
}

SyscallResult sys_ai_cancel() {
  SpinlockGuard guard(lock);
  Request* r = TRY(owned_request(arg_int(0)));
  if (r->state == RequestState::Queued || r->state == RequestState::Running)
    trace::emit(KAI_TRACE_CANCEL, r->id, abi_state(r->state));
  switch (r->state) {
    case RequestState::Queued:
      cancel_queued(r);
      return 0;
    case RequestState::Running:
      r->cancel_requested = true;   // its worker stops it at the next iteration
      return 0;
    default:
      return Errno::Busy;
  }
}

SyscallResult sys_ai_info() {
  kai_ai_info info{};
  {
    SpinlockGuard guard(lock);
    info.n_models = static_cast<uint32_t>(n_models);
    info.queue_capacity = kQueueCapacity;
    info.n_workers = static_cast<uint32_t>(ai::n_workers());
    info.queued = queued_count();
    info.running = running_count();
    info.max_per_process = max_per_process;
    info.policy = static_cast<uint32_t>(policy);
    info.aging_ms = static_cast<uint32_t>(aging_ns / 1000000);
    info.submitted = counters.submitted;
    info.completed = counters.completed;
    info.failed = counters.failed;
    info.cancelled = counters.cancelled;
    info.rejected = counters.rejected;
    info.in_flight = slots_in_use();
    info.max_batch = max_batch;
    info.budget = token_budget;
    info.harts = engine_team_limit(0);
    info.harts_in_use = engine_team_width(0);
    info.iterations = counters.iterations;
    info.batch_requests = counters.batch_requests;
    info.batch_tokens = counters.batch_tokens;
    LoadMeter load = load_meter();
    info.load_samples = load.samples;
    info.load_time_ns = load.t_last;
    info.load_queued_ns = load.queued_ns;
    info.load_in_system_ns = load.in_system_ns;
    KvStats kv = kv_stats();
    info.kv_block = kv_block_size;
    info.prefix_cache = prefix_cache_enabled;
    info.kv_blocks_total = kv.blocks_total;
    info.kv_blocks_used = kv.blocks_used;
    info.kv_blocks_cached = kv.blocks_cached;
    info.kv_checkpoints = kv.checkpoints;
    info.kv_checkpoint_bytes = kv.checkpoint_bytes;
    info.prefix_hit_requests = counters.prefix_hit_requests;
    info.prefix_hit_tokens = counters.prefix_hit_tokens;
    info.preemptions = counters.preemptions;
    info.max_drafts = max_drafts;
    info.proposer = proposer_kind == ProposerKind::Echo ? KAI_AI_PROPOSER_ECHO : KAI_AI_PROPOSER_NGRAM;
    info.drafted = counters.drafted;
    info.accepted = counters.accepted;
    info.rolled_back = counters.rolled_back;
    info.grammar_bytes = grammar_live_bytes(&info.grammar_requests);
    info.grammar_peak_bytes = counters.grammar_peak_bytes;
    info.grammars = counters.grammars;
    fill_sharing_info(info);
    for (int i = 0; i < n_models; i++) {
      const Model& m = models[i];
      kai_ai_model_info& mi = info.models[i];
      safestrcpy(mi.name, m.name, sizeof(mi.name));
      safestrcpy(mi.family, m.summary.family, sizeof(mi.family));
      mi.state = m.state;
      mi.error = m.error;
      mi.dim = m.summary.dim;
      mi.n_layers = m.summary.n_layers;
      mi.vocab_size = m.summary.vocab_size;
      mi.runtime_seq_len = m.summary.runtime_seq_len;
      mi.n_params = m.summary.n_params;
      mi.bytes = m.summary.bytes;
      mi.load_ns = m.load_ns;
      mi.pinned_pages = m.summary.pinned_pages;
    }
  }
  TRY(copy_to_user(arg_ptr<kai_ai_info>(0), &info));
  return 0;
}

// Who may change how the service schedules everyone's requests? kai has no
// users, so the rule is one of presence, as Unix's controlling terminal is:
// init (pid 1, which runs /etc/rc at boot) or the process the person at the
// console is running in the foreground (the one ^C would kill; the shell
// sets it, and setfg only lets a process hand the console to itself or its
// descendants while it holds it). A background job (`aictl policy sjf &`),
// or a program started by another client, gets EPERM.
SyscallResult sys_ai_control() {
  uint64_t cmd = arg_raw(0), arg = arg_raw(1);
  int pid = me()->pid;
  if (pid != 1 && console_foreground() != pid) return Errno::Perm;
  if (cmd >= KAI_AI_CTL_TRACE_START && cmd <= KAI_AI_CTL_TRACE_READ) return trace_control(cmd, arg);
  switch (cmd) {
    case KAI_AI_CTL_SET_POLICY: {
      Policy p;
      if (!policy_from_number(arg, &p)) return Errno::Invalid;
      SpinlockGuard guard(lock);
      policy = p;
      // Waiting workers re-run pick_next() under the new policy at once.
      wakeup(&queue_nonempty_chan);
      break;
    }
    case KAI_AI_CTL_SET_AGING: {
      SpinlockGuard guard(lock);
      if (!set_setting(*find_setting("ai.aging_ms"), arg)) return Errno::Invalid;
      break;
    }
    case KAI_AI_CTL_SET_HARTS: {
      // Each worker's row team applies it before its next pass.
      if (arg > 0xffffffffu || !engine_limit_teams(uint32_t(arg), uint32_t(n_workers()))) return Errno::Invalid;
      kprintf("ai: row teams limited to %lu harts (set by pid %d)\n", arg, pid);
      return 0;
    }
    case KAI_AI_CTL_SET_MAX_BATCH: {
      SpinlockGuard guard(lock);
      // Every running request's decode token must fit in one iteration.
      if (arg > token_budget || !set_setting(*find_setting("ai.max_batch"), arg)) return Errno::Invalid;
      // Takes effect at the next admission: a batch above the new bound
      // shrinks as its requests finish; none is stopped for it.
      wakeup(&queue_nonempty_chan);
      kprintf("ai: max_batch %u (set by pid %d)\n", max_batch, pid);
      return 0;
    }
    default:
      return Errno::Invalid;
  }
  kprintf("ai: scheduling policy %s, aging %lu ms (set by pid %d)\n", policy_name(policy),
          aging_ns / 1000000, pid);
  return 0;
}
