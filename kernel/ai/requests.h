// Requests of the AI service: the slot table, the arrival queue, and one
// named function per arrow of the state diagram. Everything here is
// protected by ai::lock (each transition checks that the caller holds it).
//
// The life of a request (docs/ai-service.md draws the same diagram):
//
//        submit()           admit()             complete()
//  Free ─────────▶ Queued ─────────▶ Running ──────────────▶ Done ──────┐
//                  │  │ ▲            │  │ fail()                        │
//                  │  │ └────────────┤  └──────────▶ Failed ────────────┤ collect()
//                  │  │  preempt()   │                                  │ (ai_wait)
//                  │  │ fail()       │                                  │
//                  │  └─────────────────────────────▶ Failed            │
//                  │ cancel_queued() │ stop_cancelled()                 ▼
//                  └─────────────────┴────────────────▶ Cancelled ──▶ Free
//
// preempt() (Running -> Queued): its KV blocks were taken back for an
// older request; it goes back to its arrival place in the queue and is
// recomputed when admitted again.
//
// Exit of the owner (forget_owner()): Queued and finished slots go straight
// back to Free; a Running one is *orphaned*: invisible at once to every
// process, it stays Running (and its slot in use) until its worker's next
// check, which frees it.
#pragma once
#include <stdint.h>
#include <kai/ai_abi.h>
#include "limits.h"
#include "platform.h"
#include "kv_cache.h"
#include "counters.h"
#include "proposer.h"
#include "llm_speculate.h"
#include "request_grammar.h"

namespace ai {

// One ordered enum for the whole life of a slot: every state after Running
// is a finished one (see finished()).
enum class RequestState : uint8_t { Free, Queued, Running, Done, Failed, Cancelled };

constexpr bool finished(RequestState s) { return s >= RequestState::Done; }

// The KAI_AI_* value that ai_query and ai_wait report for a state.
int32_t abi_state(RequestState s);

struct Request {
  RequestState state;
  int32_t error;            // positive KAI_E* when Failed (KAI_ECANCELED when Cancelled)
  int64_t id;
  int owner_pid;
  int model;                // index into the model registry
  uint32_t prompt_len, n_predict, n_generated;
  uint32_t flags;           // KAI_AI_* from the submit
  uint32_t priority;        // kai_ai_submit.priority: lower first under Policy::Priority
  uint32_t domain;          // its prefix-cache domain (sharing.h: the owner's session by default)
  bool cancel_requested;    // ai_cancel or owner exit: the worker stops at its next check
  // The owner exited while the request was Running. From that moment the
  // request is invisible: find_request() skips it (its id is unknown to all,
  // -KAI_ESRCH) and the owner's quota does not count it; its slot still
  // counts as in use (slots_in_use(), ai_info's in_flight) until the worker
  // notices cancel_requested at its next check and frees it.
  bool orphaned;
  // Another worker of the same model needs KV blocks and this request is
  // the youngest running one: its own worker preempts it at its next check.
  bool preempt_requested;
  // It needs a KV block that only preempting a request on another worker
  // can free: it gets no tokens until then (the scheduler sets and clears it).
  bool waiting_for_blocks;
  // Progress: the request's context is prompt ++ output; `fed` of its tokens
  // are in the session (its position). It is generating once fed ==
  // prompt_len + n_generated - 1; less means a prompt (or, after a
  // preemption, the context) still to feed. Written only by the scheduler
  // (scheduler.cpp): set at admission, advanced at commit.
  uint32_t fed;
  uint32_t iterations;      // engine iterations (batched forward passes) it took part in
  uint64_t batch_sum;       // sum over those iterations of the requests in the batch
  uint32_t queue_depth_at_submit, worker;
  uint32_t finish_reason;   // KAI_AI_FINISH_*: set by the finishing transition
  // t_start is the first admission (a preempted request keeps it);
  // requeued_ns is the time it spent back in the queue after preemptions,
  // so queue wait = (t_start - t_submit) + requeued_ns and
  // service = (t_finish - t_start) - requeued_ns add up to end-to-end.
  uint64_t t_submit, t_start, t_first, t_finish;
  uint64_t t_last;          // when output[n_generated-1] was known (ai_read reports it)
  uint64_t t_requeued;      // when preempt() put it back in the queue (0: not there now)
  uint64_t requeued_ns;
  uint64_t admitted_seq;    // order of its latest admission: the youngest running has the largest
  kai_ai_sampling sampling; // as submitted; the worker turns it into llm::SamplingParams
  uint64_t rng_state;       // the sampler's generator (starts at sampling.seed)
  uint32_t stop_words;      // stop[0..stop_words): validated stop sequences (ABI format)
  uint32_t stop[KAI_AI_MAX_STOP_WORDS];
  // This iteration's proposed tokens (scheduler.cpp): draft[0..n_draft)
  // are fed after the newest token, at the positions that follow it, and
  // kept only as far as the model's own choices agree with them.
  uint32_t draft[kMaxDrafts];
  uint32_t n_draft;
  uint32_t drafted, accepted;  // proposed tokens computed, and of those the ones kept
  // Speculation as submitted (kai_ai_submit.spec; proposer.h reads it).
  // spec_default: the boot options decide (ai.drafts, ai.proposer);
  // otherwise up to spec_drafts (0: none) tokens a turn from spec_proposer,
  // n-grams of at most ngram_max (0: the default) tokens. Invariant:
  // prediction_len > 0 only for ProposerKind::Predicted, and then
  // prediction[0..prediction_len) are ids of the model's vocabulary.
  // spec_adaptive: the drafts of the next pass are draft_control's choice
  // in 0..spec_drafts (lib/llm_draft_control.h), updated at commit.
  bool spec_default, spec_adaptive;
  ProposerKind spec_proposer;
  uint8_t spec_drafts, ngram_max;
  llm::DraftControl draft_control;
  uint32_t prediction_len;
  llm::PredictionCursor pred_cursor;   // where the output meets the prediction (proposer.cpp moves it)
  uint32_t prediction[KAI_AI_MAX_PREDICTION];
  uint32_t cached_tokens;     // prompt tokens taken from the prefix cache at admission
  uint32_t preemptions;       // times its blocks were taken back (it was recomputed)
  uint32_t priority_preemptions;  // of those, for a more urgent request (ai.preempt_gap)
  BlockTable kv;              // its page table in the model's KV pool (kv_cache.h)
  // Constrained decoding (kai_ai_submit.grammar; request_grammar.h): its
  // compiled DFA and mask cache, owned from submit until it finishes (freed
  // by every finishing arrow and by an exit), or nullptr. A constrained
  // request is always sampled from full logits (greedy takes the argmax of
  // the allowed ids), never gets proposed tokens, and stops at EOS.
  RequestGrammar* grammar;
  // Its grammar's memory (kai_ai_result.grammar_*), kept after the grammar
  // is freed at the finish, so ai_wait can still report it.
  uint32_t grammar_dfa_bytes, grammar_mask_bytes, grammar_bytes, grammar_masks;
  uint32_t prompt[KAI_AI_MAX_PROMPT];
  uint32_t output[kMaxOutput];
  uint64_t output_ns[kMaxOutput];  // when each output token was published (ai_read hands them out)
};

extern Spinlock lock;
extern Request slots[kQueueCapacity];

// Slots one process may hold (queued + running + finished but uncollected):
// `ai.max_per_process=N` on the kernel command line, default
// kDefaultMaxPerProcess (limits.h). Without a limit one process could take
// every slot with results it never collects, and every other submitter would
// sleep forever; at the limit ai_submit fails at once with -KAI_EDQUOT.
extern uint32_t max_per_process;


// Sleep channels (addresses only; what waits on each is documented there).
extern const char queue_nonempty_chan;  // workers: a request may be admissible
extern const char slot_freed_chan;      // submitters: a slot became free
extern const char models_known_chan;    // submitters: /AI has been scanned

// What ai_submit hands to submit() once everything is validated.
struct NewRequest {
  int owner_pid;
  int model;
  const uint32_t* prompt;
  uint32_t prompt_len, n_predict, flags, priority;
  uint32_t domain;          // prefix-cache domain, from the kernel's view of the owner (never the request)
  kai_ai_sampling sampling;
  const uint32_t* stop;     // validated, stop_words values
  uint32_t stop_words;
  // Validated speculation (sys_ai.cpp); null: the boot options decide.
  // spec->prediction is not read: `prediction` holds the copied ids.
  const kai_ai_speculation* spec = nullptr;
  const uint32_t* prediction = nullptr;
  RequestGrammar* grammar = nullptr;   // compiled at submit; the request owns it from here
};

// ---- queries (lock held) ------------------------------------------------
// The grammar regions of the requests holding one now: bytes, and how many.
uint64_t grammar_live_bytes(uint32_t* requests);
Request* find_request(int64_t id);      // a visible (non-free, not orphaned) slot with this id
uint32_t slots_owned_by(int pid);       // visible slots of this process (the quota counts these)
bool slot_available();                  // submit() would find a free slot
uint32_t queued_count();
uint32_t running_count();               // Running slots, orphaned ones included
uint32_t slots_in_use();                // every slot not Free: what ai_info calls in_flight
// The queued requests in arrival order (by t_submit): out[0..n).
uint32_t queued_in_order(Request** out);
// Tokens of r's context (prompt ++ output) and its length so far.
inline uint32_t context_token(const Request& r, uint32_t i) {
  return i < r.prompt_len ? r.prompt[i] : r.output[i - r.prompt_len];
}
inline uint32_t context_len(const Request& r) { return r.prompt_len + r.n_generated; }
// Why r must stop after its newest token, or KAI_AI_FINISH_NONE: the
// model's end-of-sequence id (when asked for), a stop sequence, the length.
uint32_t stop_reason(const Request& r);
// ---- transitions: one per arrow (lock held) -----------------------------
Request* submit(const NewRequest& n);   // Free -> Queued; needs slot_available(); returns it with its id
void admit(Request* r, uint32_t worker);         // Queued -> Running (a worker took it)
void preempt(Request* r, uint32_t cause);        // Running -> Queued (its KV blocks were taken back); KAI_TRACE_CAUSE_*
void complete(Request* r, uint32_t reason);      // Running -> Done (KAI_AI_FINISH_LENGTH/EOS/STOP)
void fail(Request* r, int32_t error,             // Queued or Running -> Failed
          uint32_t reason = KAI_AI_FINISH_FAILED);   // (KAI_AI_FINISH_NO_TOKEN: the grammar is stuck)
void cancel_queued(Request* r);                  // Queued -> Cancelled (ai_cancel)
void stop_cancelled(Request* r);                 // Running -> Cancelled, or Free if orphaned
void collect(Request* r);                        // Done/Failed/Cancelled -> Free (ai_wait)
void forget_owner(int pid);                      // exit: every slot of pid (see the diagram)

}  // namespace ai
