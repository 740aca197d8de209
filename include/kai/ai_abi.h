// The AI service's system-call ABI (ai_submit / ai_wait / ai_query /
// ai_cancel / ai_info). Shared by the kernel (kernel/ai/) and user programs.
//
// Life of a request: ai_submit() validates the request and queues it
// (QUEUED); a kernel worker admits it into its batch (RUNNING), runs its
// prefill in chunks and its decode one token per iteration together with
// the other running requests, and completes it (DONE, FAILED or
// CANCELLED). The submitting process collects the result once with
// ai_wait(); that frees the slot.
#pragma once
#include <stdint.h>

#define KAI_AI_MAX_PROMPT     1024  // prompt tokens per request (one page of ids); the model's
                                    // context (ai.context) bounds prompt + n_predict further
#define KAI_AI_MAX_OUTPUT     4096  // generated tokens per request (n_predict): size ai_wait buffers by it
#define KAI_AI_MODEL_NAME_MAX 16    // bundle directory name under /AI, with NUL
#define KAI_AI_MAX_MODELS     8

// ai_submit flags
#define KAI_AI_NONBLOCK 0x1         // full queue: fail with -KAI_EAGAIN instead of sleeping
#define KAI_AI_INT8     0x2         // int8 activations: ~10x faster under QEMU, tokens may differ slightly
#define KAI_AI_STOP_AT_EOS 0x4      // stop at the model's end-of-sequence ids (from the bundle's TOK.BIN)

// Stop sequences (kai_ai_submit.stop): at most KAI_AI_MAX_STOP_SEQS sequences
// of 1..KAI_AI_MAX_STOP_TOKENS token ids, written one after another, each
// preceded by its length: {2, 13, 198,  1, 0} is "13 198" or "0". A length
// of 0 or above KAI_AI_MAX_STOP_TOKENS, a length that runs past stop_words,
// more sequences or more words is -KAI_EINVAL; an id >= the model's
// vocab_size (it could never be generated, so never match) is -KAI_ERANGE,
// as for a prompt id. Generation stops when the output ends with one of
// them (lib/llm_stop.h has the rule).
#define KAI_AI_MAX_STOP_SEQS   4
#define KAI_AI_MAX_STOP_TOKENS 8
#define KAI_AI_MAX_STOP_WORDS  (KAI_AI_MAX_STOP_SEQS * (KAI_AI_MAX_STOP_TOKENS + 1))

// Why generation ended (kai_ai_result.finish_reason, kai_ai_status.finish_reason).
#define KAI_AI_FINISH_NONE      0   // not finished yet
#define KAI_AI_FINISH_LENGTH    1   // n_predict tokens generated
#define KAI_AI_FINISH_EOS       2   // an end-of-sequence id (KAI_AI_STOP_AT_EOS); it is the last token
#define KAI_AI_FINISH_STOP      3   // a stop sequence: the last tokens of the output are that sequence
#define KAI_AI_FINISH_CANCELLED 4   // ai_cancel, kill or exit
#define KAI_AI_FINISH_FAILED    5   // see kai_ai_result.error
// Constrained requests (kai_ai_submit.grammar) only:
#define KAI_AI_FINISH_GRAMMAR   6   // the output is a complete match and the grammar allows nothing after it
#define KAI_AI_FINISH_PREFIX    7   // n_predict tokens generated and the output is not yet a match: it is
                                    // a prefix of one (LENGTH means it was a match at that point)
#define KAI_AI_FINISH_NO_TOKEN  8   // FAILED (error KAI_EINVAL): no token of the vocabulary can continue
                                    // the match (the vocabulary cannot spell what the grammar needs)

// Priorities (kai_ai_submit.priority): lower runs first under the priority
// policy, as a Unix nice value; 0, the default, is the first.
#define KAI_AI_MAX_PRIORITY 15

// Scheduling policies (kai_ai_info.policy; ai_control KAI_AI_CTL_SET_POLICY).
// See docs/ai-service.md, "Scheduling policies".
#define KAI_AI_POLICY_FCFS     0    // first come, first served
#define KAI_AI_POLICY_SJF      1    // shortest remaining work first (prompt + tokens to generate)
#define KAI_AI_POLICY_PRIORITY 2    // lowest kai_ai_submit.priority first, then arrival
#define KAI_AI_POLICY_FAIR     3    // the least-served client first (virtual token counters)

// ai_control commands (only init or the console's foreground process may use them)
#define KAI_AI_CTL_SET_POLICY 1     // arg: KAI_AI_POLICY_*
#define KAI_AI_CTL_SET_AGING  2     // arg: milliseconds, 1..3600000
#define KAI_AI_CTL_SET_HARTS  3     // arg: 1..ai.harts: harts each worker's row team may use, from its next pass
#define KAI_AI_CTL_SET_MAX_BATCH 4  // arg: 1..16 and at most ai.budget: requests one worker runs together

// Request states (ai_query, kai_ai_result.state)
#define KAI_AI_QUEUED    1
#define KAI_AI_RUNNING   2
#define KAI_AI_DONE      3
#define KAI_AI_FAILED    4
#define KAI_AI_CANCELLED 5

// Errors (negated return values), one distinct code per cause:
//   unknown model name             -KAI_ENOENT
//   model failed to load           -KAI_ENODEV
//   empty prompt, n_predict == 0, unknown flags, priority > 15,
//     a sampling field above its maximum, a malformed stop list,
//     a bad speculation request (kai_ai_speculation), a grammar the
//     compiler refuses (kai_ai_grammar: its message in error_text) -KAI_EINVAL
//   prompt longer than 255 tokens  -KAI_E2BIG
//   prompt, stop or prediction id >= vocab_size -KAI_ERANGE
//   prompt + predict > runtime_seq_len, or predict > KAI_AI_MAX_OUTPUT  -KAI_EFBIG
//   bad user pointer               -KAI_EFAULT
//   full queue with KAI_AI_NONBLOCK -KAI_EAGAIN
//   ai_wait output buffer smaller than the tokens generated: -KAI_ENOSPC
//     (the result is kept; wait again with a bigger buffer)
//   request id unknown, never issued or already collected: -KAI_ESRCH
//   request belongs to another process: -KAI_EPERM
//   ai_cancel of a finished request: -KAI_EBUSY
//   the process already holds ai.max_per_process slots (queued, running or
//     finished but not collected): -KAI_EDQUOT, at once, never a sleep (only
//     the same process could free one of its slots, by collecting a result)
//   a reserved field that is not zero: -KAI_EINVAL (so it can carry meaning later)
//
// When the owner exits, its requests are gone at once: from the moment exit
// returns, their ids are unknown (-KAI_ESRCH) to every process. A queued or
// finished one frees its slot at once; a running one keeps its slot until
// the worker running it stops it at its next check (the next iteration
// boundary) and frees it. Until then ai_info counts it in `running` and in
// `in_flight` (its slot is in use: a full table's EAGAIN agrees), so
// queued + running <= in_flight always holds. ai_cancel (or
// kill) takes effect at the same check: within one iteration, i.e. one
// batched forward pass of at most ai.budget tokens, prefill included.

// How the next token is chosen (lib/llm_sample.h explains each step). All
// zero, the default, is greedy: exactly the tokens of the argmax. Fractions
// are in thousandths, so the ABI carries no floating point. A field above
// its maximum is -KAI_EINVAL: every value accepted takes effect, none is
// clipped. With temperature 0 the filters (top_k, top_p, min_p) change
// nothing, since the argmax survives each of them; the penalty still applies.
#define KAI_AI_MAX_TEMPERATURE_MILLI    10000   // T 10
#define KAI_AI_MAX_TOP_P_MILLI          1000    // 1.0: a probability
#define KAI_AI_MAX_MIN_P_MILLI          1000    // 1.0: a probability
#define KAI_AI_MAX_REPEAT_PENALTY_MILLI 10000   // divide by 10
#define KAI_AI_MAX_REPEAT_LAST_N        256     // tokens of prompt + output
struct kai_ai_sampling {
  uint32_t temperature_milli;    // 0 = greedy; 1000 = T 1.0; 0..KAI_AI_MAX_TEMPERATURE_MILLI
  uint32_t top_k;                // 0 = off; no maximum: >= vocab_size keeps every token, as 0 does
  uint32_t top_p_milli;          // 0 or 1000 = off; else keep the top tokens up to this mass;
                                 // 0..KAI_AI_MAX_TOP_P_MILLI
  uint32_t min_p_milli;          // 0 = off; else drop tokens below min_p x the best's probability;
                                 // 0..KAI_AI_MAX_MIN_P_MILLI (1000 keeps only the best's ties)
  uint32_t repeat_penalty_milli; // 0 or 1000 = off; 1100 = divide a recent token's logit by 1.1
                                 // (below 1000 favours repeats); 0..KAI_AI_MAX_REPEAT_PENALTY_MILLI
  uint32_t repeat_last_n;        // tokens the penalty looks back over (the newest of prompt +
                                 // output); 0 = 64; 0..KAI_AI_MAX_REPEAT_LAST_N
  uint64_t seed;                 // the generator's start: the same seed, the same tokens; any value
};

// Speculative decoding, per request (kai_ai_submit.spec; docs/ai-service.md,
// "N scheduled, k accepted"). The engine feeds up to max_drafts proposed
// tokens after the newest one in the same pass and keeps them only as far as
// the model's own choice agrees, so a proposer changes how fast a request
// runs, never its tokens. All zero (KAI_AI_PROPOSER_DEFAULT) is what the
// boot options say (ai.drafts, ai.proposer). For any other proposer but
// NONE, max_drafts is 1..KAI_AI_MAX_DRAFTS; ngram_max (n-gram proposer only)
// is the longest n-gram looked up, 0 (= KAI_AI_DEFAULT_NGRAM) ..
// KAI_AI_MAX_NGRAM. prediction/prediction_len only with PREDICTED (OpenAI's
// Predicted Outputs: the tokens the client expects the answer to contain),
// 1..KAI_AI_MAX_PREDICTION ids, copied at submit. Anything else (unknown
// proposer, a field set that the proposer does not use, too many drafts or
// prediction ids) is -KAI_EINVAL; a prediction id >= vocab_size is
// -KAI_ERANGE; a bad prediction pointer -KAI_EFAULT. flags: KAI_AI_SPEC_ADAPTIVE
// (with a proposer) moves the drafts per pass between 0 and max_drafts as
// they are kept or rejected (lib/llm_draft_control.h); other bits
// are -KAI_EINVAL.
#define KAI_AI_PROPOSER_DEFAULT   0   // submit only: the boot options' choice
#define KAI_AI_PROPOSER_NGRAM     1   // prompt lookup: what followed the context's last n-gram before
#define KAI_AI_PROPOSER_ECHO      2   // the newest token again (for tests: it always proposes)
#define KAI_AI_PROPOSER_PREDICTED 3   // the client's prediction, from where the output meets it
#define KAI_AI_PROPOSER_NONE      4   // submit only: no speculation, whatever the boot options say
#define KAI_AI_MAX_DRAFTS       8     // proposed tokens per iteration (the kernel's kMaxDrafts)
#define KAI_AI_MAX_PREDICTION   1024  // prediction ids per request (one page, copied at submit)
#define KAI_AI_MAX_NGRAM        8
#define KAI_AI_DEFAULT_NGRAM    3
#define KAI_AI_SPEC_ADAPTIVE    0x1   // kai_ai_speculation.flags
struct kai_ai_speculation {
  uint32_t proposer;          // KAI_AI_PROPOSER_*
  uint32_t max_drafts;        // 1..KAI_AI_MAX_DRAFTS (0 with DEFAULT and NONE)
  uint32_t ngram_max;         // NGRAM only: 0 (default 3) .. KAI_AI_MAX_NGRAM
  uint32_t prediction_len;    // PREDICTED only: 1..KAI_AI_MAX_PREDICTION
  const uint32_t* prediction; // PREDICTED only: token ids
  uint32_t flags;             // KAI_AI_SPEC_*
  uint32_t reserved;          // must be 0
};

// Constrained decoding (kai_ai_submit.grammar; docs/constrained-decoding.md):
// the grammar text is in user memory, grammar_len bytes (no NUL needed),
// and is compiled by ai_submit itself, for the request alone. So there is
// no handle whose lifetime the kernel must track, and the compile's cost is
// charged to the system call of the program that asks for it. The kernel
// keeps the DFA and its mask cache until the request finishes. A grammar
// the compiler refuses is -KAI_EINVAL (-KAI_ENOMEM if kernel memory is
// short) and, when error_text is set, its message ("regex: unbalanced ( at
// 1", NUL-terminated, cut to error_text_len bytes) is written there; nothing
// is submitted. All zero: no grammar.
#define KAI_AI_GRAMMAR_NONE   0
#define KAI_AI_GRAMMAR_REGEX  1     // the regular-expression subset, anchored at both ends
#define KAI_AI_GRAMMAR_JSON   2     // a JSON schema (the subset lib/grammar_json.h lists)
#define KAI_AI_MAX_GRAMMAR_BYTES 16384   // grammar_len: 1..this (a regex: 1..8192)
#define KAI_AI_ERROR_TEXT_MAX    120     // longest message written to error_text, with its NUL
struct kai_ai_grammar {
  uint32_t kind;              // KAI_AI_GRAMMAR_*
  uint32_t len;               // bytes of text: 1..KAI_AI_MAX_GRAMMAR_BYTES (0 with NONE)
  const char* text;           // null with NONE
  char* error_text;           // may be null: where a refused grammar's message goes
  uint32_t error_text_len;    // bytes at error_text (0: none written)
  uint32_t reserved;          // must be 0
};

struct kai_ai_submit {
  const char* model;          // e.g. "SMOL" (the directory /AI/SMOL)
  const uint32_t* prompt;     // token ids
  uint32_t prompt_len;        // 1..KAI_AI_MAX_PROMPT
  uint32_t n_predict;         // tokens to generate, >= 1
  uint32_t flags;             // KAI_AI_*
  uint32_t priority;          // 0..KAI_AI_MAX_PRIORITY, lower first (priority policy only)
  struct kai_ai_sampling sampling;
  const uint32_t* stop;       // stop sequences (format above), or null
  uint32_t stop_words;        // uint32_t values in stop[], 0..KAI_AI_MAX_STOP_WORDS
  struct kai_ai_speculation spec;   // all zero: the boot options' proposer (above)
  uint32_t reserved[3];       // must be 0
  struct kai_ai_grammar grammar;    // all zero: no grammar (above)
};

// Filled by ai_wait. Timestamps are kernel clock_ns() values.
struct kai_ai_result {
  int32_t state;              // KAI_AI_DONE, KAI_AI_FAILED or KAI_AI_CANCELLED
  int32_t error;              // for FAILED: positive KAI_E* reason
  uint32_t n_prompt;
  uint32_t n_generated;
  uint32_t queue_depth_at_submit;   // requests queued or running when this one arrived
  uint32_t worker;                  // which worker thread ran it
  uint64_t t_submit_ns;       // ai_submit accepted it
  uint64_t t_start_ns;        // a worker first admitted it (kept through preemptions)
  uint64_t t_first_token_ns;  // the first generated token was known
  uint64_t t_finish_ns;       // the last token was known
  // submit <= start <= first <= finish (for the stamps that were taken).
  // A preempted request waits in the queue again; requeued_us counts that:
  //   queue wait = (start - submit) + requeued_us * 1000
  //   service    = (finish - start) - requeued_us * 1000
  // so queue wait + service = finish - submit (end to end).
  uint32_t iterations;        // engine iterations (batched forward passes) it took part in
  uint32_t batch_sum;         // sum over those iterations of the requests in each batch:
                              // mean batch size = batch_sum / iterations
  uint32_t finish_reason;     // KAI_AI_FINISH_*
  uint32_t cached_tokens;     // prompt tokens taken from the prefix cache (not computed)
  uint32_t preemptions;       // times its KV blocks were taken back and it was recomputed
  uint32_t requeued_us;       // microseconds spent back in the queue after preemptions (0 if none)
  uint32_t priority_preemptions;  // of `preemptions`, times a more urgent request took its place (ai.preempt_gap)
  uint64_t client_served;     // its owner's virtual token counter when it finished (fair policy:
                              // 1 per prompt token computed + 2 per generated token + 1 per rejected
                              // draft, over all its requests)
  uint32_t drafted;           // proposed tokens the engine computed for it (kai_ai_submit.spec)
  uint32_t accepted;          // ... of which the model's own choice agreed: tokens that cost no pass of their own
  // Its grammar's kernel memory (0 without one; docs/constrained-decoding.md, "Cost"):
  uint32_t grammar_dfa_bytes;     // the DFA's tables
  uint32_t grammar_mask_bytes;    // the mask cache (one bit per id per cached state, and its index)
  uint32_t grammar_bytes;         // the whole region: the two above and the bookkeeping
  uint32_t grammar_masks;         // masks computed (first visits of a state, and again after an eviction)
};

// Filled by ai_query (non-blocking).
struct kai_ai_status {
  int32_t state;              // KAI_AI_*
  uint32_t n_generated;       // tokens so far
  uint32_t finish_reason;     // KAI_AI_FINISH_*, NONE while queued or running
  uint32_t reserved;          // 0
  uint64_t t_last_token_ns;   // when the newest token was known (0: none yet)
};

struct kai_ai_model_info {
  char name[KAI_AI_MODEL_NAME_MAX];
  char family[16];            // "llama" or "qwen3.5"
  int32_t state;              // KAI_AI_MODEL_*
  int32_t error;              // for FAILED: positive KAI_E* reason
  uint32_t dim, n_layers, vocab_size, runtime_seq_len;
  uint64_t n_params;
  uint64_t bytes;             // kernel memory holding the weights
  uint64_t load_ns;           // time to read and validate the bundle
  uint64_t pinned_pages;      // of `bytes`, pages that are the bundle's page-cache pages (one copy of a
                              // model, docs/virtual-memory.md): adopted at load, never evicted; 0 with
                              // mem.share_models=0. meminfo's cache_pinned_pages is their sum (less the
                              // pages of a loaded file deleted since).
};
#define KAI_AI_MODEL_LOADING 1
#define KAI_AI_MODEL_READY   2
#define KAI_AI_MODEL_FAILED  3

// Who shares cached prompt prefixes (kai_ai_info.prefix_share; ai.prefix_share).
#define KAI_AI_PREFIX_SHARE_SESSION 0   // requests of processes in the same Unix session (getsid)
#define KAI_AI_PREFIX_SHARE_GLOBAL  1   // every request with every other
#define KAI_AI_PREFIX_SHARE_OFF     2   // nobody

// One client of the fair policy: a process and the service it has received
// (its virtual token counter), kept while the process lives.
#define KAI_AI_MAX_CLIENTS 16           // kai_ai_info lists at most this many
struct kai_ai_client {
  int32_t pid;
  uint32_t rejected_drafts;   // proposed tokens computed for it and not kept (saturates at 2^32 - 1)
  uint64_t served;            // weighted: 1 per prompt token computed + 2 per generated token
                              // + 1 per rejected draft (every position computed for it)
  uint64_t prompt_tokens;     // prompt tokens computed for it (cached ones are free)
  uint64_t output_tokens;     // tokens generated for it
};


struct kai_ai_info {
  uint32_t n_models;
  uint32_t queue_capacity;    // request slots
  uint32_t n_workers;
  uint32_t queued;            // right now
  uint32_t running;           // right now
  uint32_t max_per_process;   // slots one process may hold (ai.max_per_process)
  uint64_t submitted, completed, failed, cancelled, rejected;
  uint64_t in_flight;         // slots in use (queued + running + finished but not collected; a
                              // dead owner's running request until its worker frees it)
  uint32_t policy;            // KAI_AI_POLICY_* in force
  uint32_t aging_ms;          // a request queued this long runs before any younger one (ai.aging_ms)
  uint32_t max_batch;         // requests one worker runs together (ai.max_batch, or KAI_AI_CTL_SET_MAX_BATCH)
  uint32_t budget;            // tokens per iteration (ai.budget)
  uint32_t harts;             // harts one worker's pass is split over, by matrix rows (ai.harts,
                              // or the limit KAI_AI_CTL_SET_HARTS set since)
  uint32_t harts_in_use;      // of those, how many take part now: the row team narrows
                              // itself when its harts lack host cores (kernel/ai/row_team.h)
  uint64_t iterations;        // batched forward passes run so far, all workers
  uint64_t batch_requests;    // sum over iterations of the requests in each: / iterations = mean batch
  uint64_t batch_tokens;      // sum over iterations of the tokens in each: / iterations = tokens per iteration
  // The load meter (kernel/ai/load_meter.h): hart 0's timer tick samples how
  // many requests are queued and in the system (queued + running) and adds
  // count x (time since its previous sample). Two readings give the means
  // between them: mean in system = delta load_in_system_ns / delta load_time_ns.
  uint64_t load_samples;      // ticks that sampled
  uint64_t load_time_ns;      // clock of the newest sample
  uint64_t load_queued_ns;    // request-nanoseconds queued
  uint64_t load_in_system_ns; // request-nanoseconds queued or running
  // The paged KV cache (all models' pools): blocks of kv_block positions.
  uint32_t kv_block;          // positions per block (ai.kv_block)
  uint32_t prefix_cache;      // 1: full prompt blocks are cached and shared (ai.prefix_cache)
  uint64_t kv_blocks_total, kv_blocks_used, kv_blocks_cached;   // cached: unreferenced, evictable
  // Recurrent-state checkpoints (models with linear-attention layers; kernel/ai/kv_checkpoint.h):
  // how many, and the KV pool bytes they hold (not counted in kv_blocks_used).
  uint64_t kv_checkpoints, kv_checkpoint_bytes;
  uint64_t prefix_hit_requests;   // requests that reused a cached prefix
  uint64_t prefix_hit_tokens;     // prompt tokens they did not compute
  uint64_t preemptions;           // running requests whose blocks were taken back (all causes)
  uint64_t priority_preemptions;  // of those, for a more urgent request (the rest: no free KV blocks)
  uint32_t prefix_share;          // KAI_AI_PREFIX_SHARE_* (ai.prefix_share)
  uint32_t preempt_gap;           // priority preemption needs this difference (ai.preempt_gap; 16: never)
  // The iteration seam (docs/ai-service.md, "N scheduled, k accepted"):
  uint32_t max_drafts;            // proposed tokens per generating request and iteration (ai.drafts; 0: none)
  uint32_t proposer;              // KAI_AI_PROPOSER_NGRAM or _ECHO (ai.proposer): the default of a request
  uint64_t drafted;               // proposed tokens computed so far
  uint64_t accepted;              // ... of which the model's own choice agreed (kept)
  uint64_t rolled_back;           // positions computed and given back (rejected proposals, and
                                  // accepted ones a recurrent model computes again)
  // Constrained decoding: the grammars of requests alive now (each a region
  // of DFA tables and mask cache, kai_ai_result.grammar_bytes), the most
  // they ever held at once, and how many were compiled for requests.
  uint32_t grammar_requests;      // requests holding a grammar now
  uint32_t reserved_grammar;      // 0
  uint64_t grammar_bytes;         // their regions' bytes now
  uint64_t grammar_peak_bytes;    // the most grammar_bytes has been
  uint64_t grammars;              // grammars compiled for submitted requests
  uint32_t n_clients;             // entries of clients[] filled
  uint32_t reserved_clients;      // 0
  struct kai_ai_client clients[KAI_AI_MAX_CLIENTS];   // the fair policy's counters, busiest first
  struct kai_ai_model_info models[KAI_AI_MAX_MODELS];
};

// System calls (numbers in syscall_numbers.h):
//   int64_t ai_submit(const struct kai_ai_submit* req);            -> id > 0
//   int ai_wait(int64_t id, uint32_t* out, uint32_t capacity, struct kai_ai_result* res);
//   int ai_query(int64_t id, struct kai_ai_status* st);
//   int ai_read(int64_t id, uint32_t from, uint32_t* out, uint32_t capacity,
//               struct kai_ai_status* st, uint64_t* times);
//     Streaming: sleeps until the request has more than `from` tokens or is
//     finished, then copies tokens [from, from + capacity) that exist to out
//     and returns how many (0: finished and nothing after `from`; capacity 0
//     is -KAI_EINVAL, so 0 never means "no room"). st (may be
//     null) gets the state; times (may be null) gets, for each copied token,
//     the kernel clock_ns() at which it was published. The result is still
//     collected with ai_wait.
//   int ai_cancel(int64_t id);
//   int ai_info(struct kai_ai_info* info);
//   int ai_control(uint32_t cmd, uint64_t arg);   -> 0, -KAI_EPERM, -KAI_EINVAL
