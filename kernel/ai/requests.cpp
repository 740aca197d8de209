// Request slots, the arrival queue and the state transitions of the AI
// service. Map: globals; queries; one function per arrow of the diagram in
// requests.h. (Which request moves when is decided in scheduler.cpp.) Locking: every
// function here runs with ai::lock held, and the transitions check it.
#include "requests.h"
#include "models.h"
#include "trace.h"
#include "llm_stop.h"

namespace ai {

Spinlock lock{"ai"};
Request slots[kQueueCapacity];
Counters counters;
uint32_t max_per_process = kDefaultMaxPerProcess;
const char queue_nonempty_chan = 0;
const char slot_freed_chan = 0;
const char models_known_chan = 0;

// Request ids: never reused while the kernel runs, so a stale id can only
// ever mean "gone" (-KAI_ESRCH), never somebody else's newer request.
static int64_t next_request_id = 1;

// Queued requests in arrival order (indices into slots). Invariant: a slot
// is in the fifo exactly when its state is Queued.
static int fifo[kQueueCapacity];
static int fifo_len;

namespace {

void must_hold_lock(const char* who) {
  if (!lock.holding()) panic("ai: %s without ai::lock", who);
}

void must_be(const Request* r, RequestState expected, const char* who) {
  must_hold_lock(who);
  if (r->state != expected) panic("ai: %s on a request in state %d", who, static_cast<int>(r->state));
}

void remove_from_fifo(Request* r) {
  int index = static_cast<int>(r - slots);
  int out = 0;
  for (int i = 0; i < fifo_len; i++)
    if (fifo[i] != index) fifo[out++] = fifo[i];
  fifo_len = out;
}

// A finished or forgotten request no longer needs its grammar.
void drop_grammar(Request* r) {
  if (r->grammar != nullptr) r->grammar_masks = static_cast<uint32_t>(r->grammar->masks.misses);
  grammar_free(r->grammar);
  r->grammar = nullptr;
}

void release_slot(Request* r) {
  drop_grammar(r);
  r->state = RequestState::Free;
  r->orphaned = false;
  r->id = 0;
  r->owner_pid = 0;
  wakeup(&slot_freed_chan);
}

// Common end of every finishing arrow: stamp, count, wake the owner (or
// free the slot at once when nobody is left to collect it).
void finish_as(Request* r, RequestState outcome, int32_t error, uint32_t reason) {
  bool had_blocks = r->kv.n > 0;
  uint32_t blocks = r->kv.n;
  uint32_t cached = trace::enabled(KAI_TRACE_KV_FREE) ? kv_blocks_cached(r->model) : 0;
  kv_release(r->model, r->kv);   // its blocks go back (full prompt blocks stay cached)
  if (had_blocks && trace::enabled(KAI_TRACE_KV_FREE))
    trace::emit(KAI_TRACE_KV_FREE, uint64_t(r->id), uint32_t(r->model), blocks, kv_blocks_in_use(r->model), kv_blocks_cached(r->model) - cached);
  // A worker may be waiting for blocks (or have a queued request that did
  // not fit): it looks again.
  if (had_blocks) wakeup(&queue_nonempty_chan);
  drop_grammar(r);
  r->state = outcome;
  r->finish_reason = reason;
  r->error = error;
  r->t_finish = clock_ns();
  trace::emit_at(r->t_finish, KAI_TRACE_FINISH, uint64_t(r->id), reason, r->n_generated, uint32_t(error), r->worker);
  if (r->t_requeued != 0) {   // finished while back in the queue after a preemption
    r->requeued_ns += r->t_finish - r->t_requeued;
    r->t_requeued = 0;
  }
  if (outcome == RequestState::Done) counters.completed++;
  else if (outcome == RequestState::Failed) counters.failed++;
  else counters.cancelled++;
  if (r->orphaned) release_slot(r);
  else wakeup(r);
}

}  // namespace

int32_t abi_state(RequestState s) {
  switch (s) {
    case RequestState::Queued: return KAI_AI_QUEUED;
    case RequestState::Running: return KAI_AI_RUNNING;
    case RequestState::Done: return KAI_AI_DONE;
    case RequestState::Failed: return KAI_AI_FAILED;
    case RequestState::Cancelled: return KAI_AI_CANCELLED;
    case RequestState::Free: break;
  }
  return 0;
}

// ---- queries ------------------------------------------------------------

Request* find_request(int64_t id) {
  for (auto& r : slots)
    if (r.state != RequestState::Free && !r.orphaned && r.id == id) return &r;
  return nullptr;
}

uint32_t slots_owned_by(int pid) {
  uint32_t n = 0;
  for (auto& r : slots) n += r.state != RequestState::Free && !r.orphaned && r.owner_pid == pid;
  return n;
}

uint64_t grammar_live_bytes(uint32_t* requests) {
  uint64_t bytes = 0;
  uint32_t n = 0;
  for (auto& r : slots)
    if (r.state != RequestState::Free && r.grammar != nullptr) bytes += r.grammar->region_bytes, n++;
  if (requests != nullptr) *requests = n;
  return bytes;
}

bool slot_available() {
  for (auto& r : slots)
    if (r.state == RequestState::Free) return true;
  return false;
}

uint32_t queued_count() { return static_cast<uint32_t>(fifo_len); }

uint32_t running_count() {
  uint32_t n = 0;
  for (auto& r : slots) n += r.state == RequestState::Running;
  return n;
}

uint32_t slots_in_use() {
  // Orphans included: their slots are not free until their worker frees
  // them, so a full table (EAGAIN) always shows as in_flight == capacity.
  uint32_t n = 0;
  for (auto& r : slots) n += r.state != RequestState::Free;
  return n;
}

uint32_t queued_in_order(Request** out) {
  for (int i = 0; i < fifo_len; i++) out[i] = &slots[fifo[i]];
  return static_cast<uint32_t>(fifo_len);
}

// The stop rule itself is lib's (llm_stop.h), shared with llmrun, so both
// paths stop at the same token.
uint32_t stop_reason(const Request& r) {
  const ModelSummary& m = models[r.model].summary;
  llm::StopRule rule;
  rule.eos = m.eos;
  // A constrained request stops at EOS: the mask allows it only where the
  // output is a match, so it is how the model says "done".
  rule.n_eos = (r.flags & KAI_AI_STOP_AT_EOS) || r.grammar ? m.n_eos : 0;
  rule.stop = r.stop;
  rule.stop_words = r.stop_words;
  rule.max_tokens = r.n_predict;
  llm::Finish finish = llm::finish_reason(rule, r.output, r.n_generated);
  if (r.grammar != nullptr && (finish == llm::Finish::None || finish == llm::Finish::Length)) {
    // The grammar's state has seen the whole output (publish() advanced it).
    if (grammar_complete(r.grammar)) return KAI_AI_FINISH_GRAMMAR;   // nothing may follow
    if (finish == llm::Finish::Length && !grammar_matched(r.grammar)) return KAI_AI_FINISH_PREFIX;
  }
  switch (finish) {
    case llm::Finish::EndOfSequence: return KAI_AI_FINISH_EOS;
    case llm::Finish::StopSequence: return KAI_AI_FINISH_STOP;
    case llm::Finish::Length: return KAI_AI_FINISH_LENGTH;
    case llm::Finish::None: break;
  }
  return KAI_AI_FINISH_NONE;
}

// ---- transitions --------------------------------------------------------

namespace {

// The request's speculation fields from a validated kai_ai_speculation.
void set_speculation(Request* r, const kai_ai_speculation* spec, const uint32_t* prediction) {
  r->spec_default = spec == nullptr || spec->proposer == KAI_AI_PROPOSER_DEFAULT;
  r->spec_proposer = ProposerKind::Ngram;
  r->spec_drafts = r->ngram_max = 0;
  r->spec_adaptive = false;
  r->prediction_len = 0;
  r->pred_cursor = llm::PredictionCursor{};
  if (r->spec_default || spec->proposer == KAI_AI_PROPOSER_NONE) return;
  r->spec_proposer = spec->proposer == KAI_AI_PROPOSER_ECHO        ? ProposerKind::Echo
                     : spec->proposer == KAI_AI_PROPOSER_PREDICTED ? ProposerKind::Predicted
                                                                   : ProposerKind::Ngram;
  r->spec_drafts = static_cast<uint8_t>(spec->max_drafts);
  r->spec_adaptive = (spec->flags & KAI_AI_SPEC_ADAPTIVE) != 0;
  r->draft_control.start(r->spec_drafts);
  r->ngram_max = static_cast<uint8_t>(spec->ngram_max);
  if (r->spec_proposer == ProposerKind::Predicted) {
    r->prediction_len = spec->prediction_len;
    memcpy(r->prediction, prediction, spec->prediction_len * sizeof(uint32_t));
  }
}

}  // namespace

Request* submit(const NewRequest& n) {
  must_hold_lock("submit");
  Request* r = nullptr;
  for (auto& s : slots)
    if (s.state == RequestState::Free) { r = &s; break; }
  if (r == nullptr) panic("ai: submit without a free slot");
  r->id = next_request_id++;
  r->owner_pid = n.owner_pid;
  r->model = n.model;
  r->prompt_len = n.prompt_len;
  r->n_predict = n.n_predict;
  r->flags = n.flags;
  r->priority = n.priority;
  r->domain = n.domain;
  r->n_generated = 0;
  r->cancel_requested = false;
  r->orphaned = false;
  r->preempt_requested = false;
  r->waiting_for_blocks = false;
  r->error = 0;
  r->worker = 0;
  r->kv.n = r->kv.registered = 0;
  r->kv.held_ckpt = kNoCkpt;
  r->cached_tokens = r->preemptions = r->priority_preemptions = 0;
  r->n_draft = r->drafted = r->accepted = 0;
  set_speculation(r, n.spec, n.prediction);
  r->grammar = n.grammar;
  r->grammar_dfa_bytes = n.grammar ? static_cast<uint32_t>(n.grammar->dfa_bytes) : 0;
  r->grammar_mask_bytes = n.grammar ? static_cast<uint32_t>(n.grammar->mask_bytes) : 0;
  r->grammar_bytes = n.grammar ? static_cast<uint32_t>(n.grammar->region_bytes) : 0;
  r->grammar_masks = 0;
  if (n.grammar != nullptr) {
    counters.grammars++;
    uint64_t live = grammar_live_bytes(nullptr);
    if (live > counters.grammar_peak_bytes) counters.grammar_peak_bytes = live;
  }
  r->iterations = 0;
  r->batch_sum = 0;
  r->finish_reason = KAI_AI_FINISH_NONE;
  r->queue_depth_at_submit = queued_count() + running_count();
  r->t_submit = clock_ns();
  r->t_start = r->t_first = r->t_finish = r->t_last = 0;
  r->t_requeued = r->requeued_ns = 0;
  r->admitted_seq = 0;
  r->sampling = n.sampling;
  r->rng_state = n.sampling.seed;
  r->stop_words = n.stop_words;
  memcpy(r->stop, n.stop, n.stop_words * sizeof(uint32_t));
  memcpy(r->prompt, n.prompt, n.prompt_len * sizeof(uint32_t));
  counters.submitted++;
  r->state = RequestState::Queued;
  fifo[fifo_len++] = static_cast<int>(r - slots);
  wakeup(&queue_nonempty_chan);
  return r;
}

void admit(Request* r, uint32_t worker) {
  must_be(r, RequestState::Queued, "admit");
  remove_from_fifo(r);
  static uint64_t admissions = 0;
  r->state = RequestState::Running;
  r->worker = worker;
  r->admitted_seq = ++admissions;
  uint64_t now = clock_ns();
  if (r->t_start == 0) r->t_start = now;   // the first admission; later ones end a requeue
  if (r->t_requeued != 0) r->requeued_ns += now - r->t_requeued;
  r->t_requeued = 0;
}

void preempt(Request* r, uint32_t cause) {
  must_be(r, RequestState::Running, "preempt");
  trace::emit(KAI_TRACE_PREEMPT, uint64_t(r->id), r->worker, cause, r->fed);
  uint32_t blocks = r->kv.n;
  uint32_t cached = trace::enabled(KAI_TRACE_KV_FREE) ? kv_blocks_cached(r->model) : 0;
  kv_release(r->model, r->kv, /*preempted=*/true);
  if (blocks > 0 && trace::enabled(KAI_TRACE_KV_FREE))
    trace::emit(KAI_TRACE_KV_FREE, uint64_t(r->id), uint32_t(r->model), blocks, kv_blocks_in_use(r->model), kv_blocks_cached(r->model) - cached);
  r->preemptions++;
  r->preempt_requested = false;
  r->waiting_for_blocks = false;
  r->t_requeued = clock_ns();
  counters.preemptions++;
  // Back in arrival order (by t_submit), so it keeps its place under fcfs
  // and aging, and it is admitted again before anyone who came later.
  int at = fifo_len;
  while (at > 0 && slots[fifo[at - 1]].t_submit > r->t_submit) at--;
  for (int i = fifo_len; i > at; i--) fifo[i] = fifo[i - 1];
  fifo[at] = static_cast<int>(r - slots);
  fifo_len++;
  r->state = RequestState::Queued;
  wakeup(&queue_nonempty_chan);
}

void complete(Request* r, uint32_t reason) {
  must_be(r, RequestState::Running, "complete");
  finish_as(r, RequestState::Done, 0, reason);
}

void fail(Request* r, int32_t error, uint32_t reason) {
  must_hold_lock("fail");
  if (r->state == RequestState::Queued) remove_from_fifo(r);
  else if (r->state != RequestState::Running) panic("ai: fail on a request in state %d", static_cast<int>(r->state));
  finish_as(r, RequestState::Failed, error, reason);
}

void cancel_queued(Request* r) {
  must_be(r, RequestState::Queued, "cancel_queued");
  remove_from_fifo(r);
  finish_as(r, RequestState::Cancelled, KAI_ECANCELED, KAI_AI_FINISH_CANCELLED);
}

void stop_cancelled(Request* r) {
  must_be(r, RequestState::Running, "stop_cancelled");
  finish_as(r, RequestState::Cancelled, KAI_ECANCELED, KAI_AI_FINISH_CANCELLED);   // frees it if orphaned
}

void collect(Request* r) {
  must_hold_lock("collect");
  if (!finished(r->state)) panic("ai: collect of an unfinished request");
  release_slot(r);
}

void forget_owner(int pid) {
  must_hold_lock("forget_owner");
  for (auto& r : slots) {
    if (r.state == RequestState::Free || r.owner_pid != pid || r.orphaned) continue;
    if (r.state == RequestState::Queued || r.state == RequestState::Running)
      trace::emit(KAI_TRACE_CANCEL, uint64_t(r.id), abi_state(r.state));
    if (r.state == RequestState::Queued) {
      trace::emit(KAI_TRACE_FINISH, uint64_t(r.id), KAI_AI_FINISH_CANCELLED, r.n_generated, KAI_ECANCELED, r.worker);
      remove_from_fifo(&r);
      counters.cancelled++;
      release_slot(&r);
    } else if (r.state == RequestState::Running) {
      // Its worker owns the slot until it notices; it frees it then.
      r.cancel_requested = true;
      r.orphaned = true;
    } else {
      release_slot(&r);   // finished, never to be collected
    }
  }
}

}  // namespace ai
