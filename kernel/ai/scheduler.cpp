// The scheduler: every decision of an iteration, in one place.
//
// The idea (iteration-level scheduling, as in Orca and vLLM): a worker does
// not run one request from start to end; it keeps up to max_batch requests
// RUNNING and advances all of them by one *iteration* at a time, one batched
// forward pass over the weights. Before each pass, schedule() decides, in
// this order:
//   1. stop: running requests that were cancelled (or whose owner exited)
//      leave the batch; so do those another worker asked to preempt;
//   2. admit: while the batch has room, the next queued request (pick_next:
//      aging first, then the policy) comes in if the KV blocks for its whole
//      context (less a cached prefix) are free or evictable; if not, it
//      stays queued and nobody behind it is admitted (no overtaking by size);
//   2b. preempt for priority: under ai.policy=priority, while the batch is
//      full and a queued request is ai.preempt_gap levels more urgent than
//      the least urgent running one, that one is preempted (recomputed
//      later) and the urgent one takes its slot;
//   3. plan: one decode token for every request that is generating, then
//      the tokens a proposer guesses will follow it (its own kai_ai_submit.spec
//      or ai.drafts, proposer.h),
//      then prefill chunks in batch-slot order (under the priority policy,
//      the most urgent first) until the token budget is spent
//      (chunked prefill, as in Sarathi-Serve: a long prompt is spread over
//      several iterations instead of stalling everyone's next token);
//   4. grow or preempt: each planned request gets KV blocks for its new
//      positions; when none are left, the youngest running request of the
//      model (the latest admitted, on whichever worker) is preempted: its
//      blocks go back and it is recomputed later (vLLM's recompute
//      preemption). If that request runs on another worker, which may be in
//      the middle of a pass over it, it is only marked; its worker preempts it
//      at its next step 1 and the request that needed the blocks waits one
//      iteration;
//   5. write the plan: the tokens as llm::BatchItems, grouped by (model,
//      activation kind), one group per forward pass, and for each item what
//      the pass must return (Want: nothing, the argmax, a sampled token).
// After the pass, commit() accepts, for each planned request, k of the n
// positions it scheduled (N scheduled, k accepted: a proposed token is kept
// while it equals the model's own choice at the position before it),
// advances its progress (fed) past the accepted ones and rolls the rest
// back, registers its newly full prompt blocks in the prefix cache,
// publishes its new tokens and finishes what is complete. This is vLLM's
// Scheduler.schedule() / update_from_output() split, at kai's size.
//
// Invariants (ai::lock held in schedule() and commit(); between them the
// plan belongs to its worker alone):
//   - a Running request is in exactly one batch slot of exactly one worker
//     (Request::worker), and a batch slot holds only Running requests;
//   - `fed` is written only here: set at admission (the cached prefix),
//     advanced at commit by the accepted positions (never past a position
//     whose input token was rejected); the session is at `fed` at the
//     start of every pass (the worker rewinds it when commit moved fed back);
//   - a planned request's block table covers fed + count positions before
//     its pass; the plan never holds more than token_budget items nor more
//     than max_batch requests, and every running request that is
//     generating and not waiting for blocks gets its newest token, plus at
//     most min(drafts_for(r), tokens it may still produce - 1) proposed ones;
//   - a request is admitted only when its blocks are taken at once: no
//     admitted request ever waits for blocks to begin;
//   - while a request of a model waits for blocks held on another worker,
//     no request of that model is admitted (the freed blocks go to it).
#include "scheduler.h"
#include "models.h"
#include "kv_cache.h"
#include "kv_checkpoint.h"
#include "trace.h"
#include "sharing.h"
#include "proposer.h"

namespace ai {

Policy policy = Policy::Fcfs;
uint64_t aging_ns = uint64_t(kDefaultAgingMs) * 1000000;
uint32_t max_batch = kDefaultMaxBatch;
uint32_t token_budget = kDefaultBudget;

namespace {

void must_hold_lock(const char* who) {
  if (!lock.holding()) panic("ai: %s without ai::lock", who);
}

// A recurrent model's key carries the output too: its blocks and its final
// checkpoint are cached, so a chat's next turn resumes near this one's end.
// (A Llama model's output blocks are not cached: its next turn recomputes
// the answer, as before.)
PrefixKey prefix_key(const Request& r) {
  PrefixKey key{r.model, (r.flags & KAI_AI_INT8) != 0, r.domain, r.prompt, r.prompt_len};
  if (models[r.model].summary.config.n_linear_layers() > 0) {
    key.output = r.output;
    key.output_len = r.n_generated;
  }
  return key;
}

// Gives back the slot's hold on checkpoints: the pin of the one it was to
// restore from, and the one reserved for a pass that did not complete.
void release_checkpoints(BatchSlot& s) {
  if (s.request && s.ckpt_read != kNoCkpt) kv_ckpt_unpin(s.request->model, s.ckpt_read);
  if (s.request && s.ckpt_write != kNoCkpt) kv_ckpt_drop(s.request->model, s.ckpt_write);
  for (uint32_t i = 0; s.request && i < s.n_pass_ckpt; i++) kv_ckpt_drop(s.request->model, s.pass_ckpt[i].id);
  s.ckpt_read = s.ckpt_write = kNoCkpt;
  s.n_pass_ckpt = 0;
}

void clear_slot(BatchSlot& s) {
  release_checkpoints(s);
  s.request = nullptr;
  s.count = 0;
  s.drafts = 0;
  s.rewind = false;
  s.finishing = false;
}

// Sampled or greedy: the ABI's thousandths become the sampler's floats
// here, in the worker's thread (system calls do no floating point). A
// repetition penalty changes even a greedy choice, so it needs the sampler;
// so does a grammar: a greedy constrained request takes the argmax of the
// allowed ids, which the classifier's fused argmax cannot give.
void choose_sampling(BatchSlot& s, const kai_ai_sampling& a, bool constrained) {
  s.params = llm::sampling_from_thousandths(a.temperature_milli, a.top_k, a.top_p_milli, a.min_p_milli,
                                            a.repeat_penalty_milli, a.repeat_last_n);
  s.sampled = !s.params.greedy() || s.params.repeat_penalty != 1.0f || constrained;
}

// 1. Running requests that must leave the batch before anything is planned.
void stop_and_preempt(WorkerBatch& w) {
  for (auto& s : w.slots) {
    Request* r = s.request;
    if (r == nullptr) continue;
    if (r->cancel_requested) {
      stop_cancelled(r);   // frees the slot if its owner is gone
      clear_slot(s);
    } else if (r->preempt_requested) {
      preempt(r, KAI_TRACE_CAUSE_KV_FULL);
      clear_slot(s);
    }
  }
}

// A request of model m is waiting for blocks that another worker holds.
bool model_has_waiters(int m) {
  for (const auto& r : slots)
    if (r.state == RequestState::Running && r.model == m && r.waiting_for_blocks) return true;
  return false;
}

// The trace's view of an admission's blocks: the prefix found in the
// cache, then every block the request now holds.
void trace_admission_blocks(const Request& r, uint32_t cached) {
  if (!trace::enabled(KAI_TRACE_KV_TAKE)) return;
  if (cached > 0)
    trace::emit(KAI_TRACE_PREFIX_HIT, uint64_t(r.id), uint32_t(r.model), cached / kv_block_size, cached);
  trace::emit(KAI_TRACE_KV_TAKE, uint64_t(r.id), uint32_t(r.model), r.kv.n, kv_blocks_in_use(r.model));
}

// Admits queued request r into the empty batch slot s if the KV blocks for
// its whole context (less a cached prefix) can be had now; false if not.
bool admit_into(WorkerBatch& w, BatchSlot& s, Request* r) {
  if (model_has_waiters(r->model)) return false;
  uint32_t ckpt = kNoCkpt;
  int32_t cached = kv_admit(prefix_key(*r), context_len(*r), context_len(*r), r->kv, &ckpt);
  if (cached < 0) return false;
  s.ckpt_read = ckpt;
  s.ckpt_write = kNoCkpt;
  trace_admission_blocks(*r, static_cast<uint32_t>(cached));
  r->fed = r->cached_tokens = static_cast<uint32_t>(cached);
  r->waiting_for_blocks = false;
  // The fair policy's counter: the prompt tokens the model will compute,
  // once (a recomputation after a preemption is the service's choice).
  if (r->preemptions == 0 && r->prompt_len > r->cached_tokens)
    fair_counters.charge_prompt(r->owner_pid, r->prompt_len - r->cached_tokens);
  admit(r, w.id);
  if (trace::enabled(KAI_TRACE_ADMIT))   // at t_start for the first admission, as ai_abi.h promises
    trace::emit_at(r->preemptions == 0 ? r->t_start : clock_ns(), KAI_TRACE_ADMIT, uint64_t(r->id), w.id,
                   uint32_t(policy), queued_count(), running_count());
  s.request = r;
  s.model = models[r->model].engine;
  s.pool = kv_pool(r->model);
  s.int8 = (r->flags & KAI_AI_INT8) != 0;
  s.fresh = true;
  s.failed = false;
  s.grammar_stuck = false;
  s.count = 0;
  s.drafts = 0;
  s.rewind = false;
  s.recurrent = models[r->model].summary.config.n_linear_layers() > 0;
  s.checkpointed = most_drafts_for(*r) > 0;   // an adaptive request may draft later
  choose_sampling(s, r->sampling, r->grammar != nullptr);
  r->n_draft = 0;
  return true;
}

// 2. Admission, under the policy (pick_next) and by free KV blocks.
void admit_new(WorkerBatch& w) {
  for (auto& s : w.slots) {
    if (running_in(w) >= max_batch) return;
    if (s.request != nullptr) continue;
    Request* r = pick_next();
    if (r == nullptr) return;
    if (!kv_could_fit(r->model, r->prompt_len + r->n_predict)) {
      fail(r, KAI_ENOMEM);   // bigger than the whole KV pool: it could never run
      continue;
    }
    if (!admit_into(w, s, r)) return;
  }
}

// The most urgent queued request whose model is ready (lowest priority
// number, the oldest among equals), or nullptr.
Request* most_urgent_queued() {
  Request* queued[kQueueCapacity];
  uint32_t n = queued_in_order(queued);
  Request* best = nullptr;
  for (uint32_t i = 0; i < n; i++)
    if (models[queued[i]->model].state == KAI_AI_MODEL_READY && (!best || queued[i]->priority < best->priority))
      best = queued[i];
  return best;
}

// The least urgent running request of this batch (highest priority number,
// the latest admitted among equals: it has the least to recompute, usually).
BatchSlot* least_urgent(WorkerBatch& w) {
  BatchSlot* v = nullptr;
  for (auto& s : w.slots) {
    Request* r = s.request;
    if (r == nullptr) continue;
    if (!v || r->priority > v->request->priority ||
        (r->priority == v->request->priority && r->admitted_seq > v->request->admitted_seq))
      v = &s;
  }
  return v;
}

// 2b. Priority preemption (ai.policy=priority, docs/sharing.md "Priorities
// that preempt"): while this batch is full and a queued request is more
// urgent than the least urgent running one by at least ai.preempt_gap, that
// one is preempted exactly as under memory pressure (blocks freed, back to
// its arrival place in the queue, recomputed later with its sampler state,
// so its tokens do not change) and the urgent one takes its slot at once.
// The urgent one is admitted directly, not through pick_next(): the victim,
// submitted long ago, may be overdue for aging and would come straight back.
void preempt_for_priority(WorkerBatch& w) {
  if (policy != Policy::Priority || preempt_gap >= kNoPriorityPreemption) return;
  for (uint32_t round = 0; round < kMaxBatch && running_in(w) >= max_batch; round++) {
    Request* urgent = most_urgent_queued();
    BatchSlot* victim = least_urgent(w);
    if (urgent == nullptr || victim == nullptr ||
        !preempts_for_priority(urgent->priority, victim->request->priority, preempt_gap))
      return;
    if (!kv_could_fit(urgent->model, urgent->prompt_len + urgent->n_predict)) return;   // admit_new fails it
    Request* v = victim->request;
    v->priority_preemptions++;
    counters.priority_preemptions++;
    preempt(v, KAI_TRACE_CAUSE_PRIORITY);
    clear_slot(*victim);
    if (!admit_into(w, *victim, urgent)) return;   // no blocks yet: it comes in at a later admission
  }
}

// The running request of model m admitted last (vLLM's choice of victim:
// it has waited least and holds the fewest computed tokens, usually),
// whichever worker runs it: the block pool is shared by all of them.
Request* youngest_running(int m) {
  Request* v = nullptr;
  for (auto& r : slots)
    if (r.state == RequestState::Running && r.model == m && (!v || r.admitted_seq > v->admitted_seq)) v = &r;
  return v;
}

BatchSlot* slot_of(WorkerBatch& w, const Request* r) {
  for (auto& s : w.slots)
    if (s.request == r) return &s;
  return nullptr;
}

// The proposed tokens a generating request gets this iteration, at most
// `budget`: none for a request that may produce only one more token (a
// proposal is worth something only if a later token can follow it), and
// none past the pass's room for sampled positions.
uint32_t plan_drafts(BatchSlot& s, uint32_t budget, uint32_t& sampled_room) {
  Request& r = *s.request;
  uint32_t left = r.n_predict - r.n_generated;   // tokens it may still produce (>= 1)
  uint32_t max = drafts_for(r);
  if (max > left - 1) max = left - 1;
  if (max > budget) max = budget;
  if (s.sampled && max > sampled_room) max = sampled_room;
  r.n_draft = max > 0 ? propose(r, max, r.draft) : 0;
  if (s.sampled) sampled_room -= r.n_draft;
  return r.n_draft;
}

// 3. How many positions each running request feeds this iteration. Each has
// left = context_len - fed tokens to feed: 1 means it is generating (its
// newest token, plus any proposed tokens), more means a prompt (or, after
// a preemption or a recurrent rollback, the rest of its context) still to
// go in. Generating requests come first, each its newest token; then their
// proposals, in batch-slot order; then prompt chunks in batch-slot order (a
// request admitted into a freed earlier slot is served before an older one
// in a later slot).
void choose_counts(WorkerBatch& w) {
  uint32_t budget = token_budget;
  uint32_t sampled_room = kMaxSampledPositions;
  for (auto& s : w.slots) {
    s.count = 0;
    s.drafts = 0;
    if (s.request) s.request->n_draft = 0;
    if (s.request && context_len(*s.request) - s.request->fed == 1) {
      s.count = 1;
      budget--;
      if (s.sampled) sampled_room--;
    }
  }
  for (auto& s : w.slots) {
    if (s.count != 1 || drafts_for(*s.request) == 0 || budget == 0) continue;
    s.drafts = plan_drafts(s, budget, sampled_room);
    s.count += s.drafts;
    budget -= s.drafts;
  }
  // Prompt chunks in batch-slot order; under the priority policy the most
  // urgent first (a request that preempted its way in must not then wait
  // behind the prompts of the requests it overtook).
  BatchSlot* order[kMaxBatch];
  uint32_t n = 0;
  for (auto& s : w.slots) {
    if (s.request == nullptr || s.count > 0) continue;
    uint32_t at = n++;
    if (policy == Policy::Priority)
      while (at > 0 && order[at - 1]->request->priority > s.request->priority) {
        order[at] = order[at - 1];
        at--;
      }
    order[at] = &s;
  }
  for (uint32_t i = 0; i < n && budget > 0; i++) {
    BatchSlot& s = *order[i];
    Request& r = *s.request;
    uint32_t left = context_len(r) - r.fed;
    // A recurrent model's chunk does not stop where a checkpoint is to be
    // taken: the pass copies the state there (reserve_checkpoints).
    s.count = left < budget ? left : budget;
    budget -= s.count;
  }
}

// 4b. A checkpoint for every position of the pass where one is to be
// taken (a pass with proposals takes none: its positions may not stand);
// none if the pool cannot spare the blocks now (nobody is preempted for it).
void reserve_checkpoints(WorkerBatch& w) {
  for (auto& s : w.slots) {
    Request* r = s.request;
    s.n_pass_ckpt = 0;
    if (r == nullptr || s.count == 0 || !s.recurrent || s.drafts > 0) continue;
    uint32_t end = r->fed + s.count;
    PrefixKey key = prefix_key(*r);
    for (uint32_t pos = kv_next_checkpoint(key, r->kv, r->fed); pos != 0 && pos <= end;
         pos = kv_next_checkpoint(key, r->kv, pos)) {
      if (s.n_pass_ckpt == BatchSlot::kPassCheckpoints) break;
      uint32_t id = kv_ckpt_reserve(key, r->kv, pos);
      if (id == kNoCkpt) break;
      BatchSlot::PassCheckpoint& c = s.pass_ckpt[s.n_pass_ckpt++];
      c.id = id;
      c.pos = pos;
      kv_ckpt_writer(r->model, id, &c.writer);
    }
  }
}

// 4. Blocks for every planned token, preempting the youngest when short.
void grow_or_preempt(WorkerBatch& w) {
  for (auto& s : w.slots) {
    Request* grower = s.request;
    uint32_t blocks_before = grower ? grower->kv.n : 0;
    // Proposed positions never cost anyone a preemption: without blocks
    // for them, the request goes on with its newest token alone.
    if (s.request && s.drafts > 0 && !kv_grow(s.request->model, s.request->kv, s.request->fed + s.count)) {
      s.count -= s.drafts;
      s.drafts = 0;
      s.request->n_draft = 0;
    }
    while (s.request && s.count > 0 && !kv_grow(s.request->model, s.request->kv, s.request->fed + s.count)) {
      Request* victim = youngest_running(s.request->model);
      BatchSlot* local = slot_of(w, victim);
      if (local != nullptr) {
        preempt(victim, KAI_TRACE_CAUSE_KV_FULL);
        clear_slot(*local);
      } else {
        // Running on another worker, maybe in its pass right now: it is
        // preempted there at its next step 1; this request waits.
        victim->preempt_requested = true;
        s.request->waiting_for_blocks = true;
        s.count = 0;
      }
    }
    if (s.request && s.count > 0) s.request->waiting_for_blocks = false;
    if (s.request == grower && grower && grower->kv.n > blocks_before && trace::enabled(KAI_TRACE_KV_TAKE))
      trace::emit(KAI_TRACE_KV_TAKE, uint64_t(grower->id), uint32_t(grower->model), grower->kv.n - blocks_before,
                  kv_blocks_in_use(grower->model));
  }
}

// 5. The plan's items, one group per (model, activation kind): batch slots
// in order, each group's members consecutive, a request's tokens in order.
void write_plan(WorkerBatch& w) {
  Plan& p = w.plan;
  p.n_items = 0;
  p.n_groups = 0;
  bool grouped[kMaxBatch] = {};
  for (uint32_t a = 0; a < kMaxBatch; a++) {
    const BatchSlot& lead = w.slots[a];
    if (lead.request == nullptr || lead.count == 0 || grouped[a]) continue;
    PlanGroup& g = p.groups[p.n_groups++];
    g = PlanGroup{lead.request->model, lead.model, lead.int8, p.n_items, 0};
    for (uint32_t b = a; b < kMaxBatch; b++) {
      BatchSlot& s = w.slots[b];
      Request* r = s.request;
      if (r == nullptr || s.count == 0 || grouped[b]) continue;
      if (r->model != g.model || s.int8 != g.int8) continue;
      grouped[b] = true;
      s.first = p.n_items;
      uint32_t len = context_len(*r);
      for (uint32_t i = 0; i < s.count; i++) {
        uint32_t at = r->fed + i;
        llm::BatchItem& item = p.items[p.n_items];
        item.session = s.session;
        item.token = at < len ? context_token(*r, at) : r->draft[at - len];
        item.phase = at < r->prompt_len ? llm::Phase::Prefill : llm::Phase::Decode;
        // The classifier runs from the newest context token on: for it, and
        // for every proposed token (each one's next is checked against the
        // proposal after it, or is the token after the last accepted one).
        item.want_next = at + 1 >= len;
        item.next = 0;
        item.logits = nullptr;   // the worker gives Sample items their rows
        item.keep_state = nullptr;
        for (uint32_t c = 0; c < s.n_pass_ckpt; c++)
          if (s.pass_ckpt[c].pos == at + 1) item.keep_state = &s.pass_ckpt[c].writer.sink;
        p.want[p.n_items] = !item.want_next ? Want::Nothing : s.sampled ? Want::Sample : Want::Argmax;
        p.slot[p.n_items++] = &s;
      }
    }
    g.count = p.n_items - g.first;
  }
}

// The plan as trace events: the iteration, then one ITEM per request in it
// (decode: the one newest token of a request that is generating).
void trace_plan(const WorkerBatch& w) {
  uint32_t requests = 0;
  for (const auto& s : w.slots) requests += s.request != nullptr && s.count > 0;
  trace::emit(KAI_TRACE_ITER_BEGIN, 0, w.id, requests, w.plan.n_items, token_budget, max_batch);
  for (const auto& s : w.slots) {
    const Request* r = s.request;
    if (r == nullptr || s.count == 0) continue;
    bool decode = s.count - s.drafts == 1 && r->n_generated > 0 && r->fed + 1 == context_len(*r);
    trace::emit(KAI_TRACE_ITEM, uint64_t(r->id), w.id, decode ? KAI_TRACE_PHASE_DECODE : KAI_TRACE_PHASE_PREFILL,
                r->fed, s.count);
  }
}

}  // namespace

void worker_batch_init(WorkerBatch& w, uint32_t id, llm::Session* const* sessions,
                       EngineSession* const* engines) {
  w.id = id;
  for (uint32_t i = 0; i < kMaxBatch; i++) {
    w.slots[i] = BatchSlot{};
    w.slots[i].session = sessions[i];
    w.slots[i].engine = engines[i];
  }
  w.plan.n_items = w.plan.n_groups = 0;
  w.plan.survey_team = false;
  w.surveyed = false;
}

SubmitCheck may_submit(int pid) {
  must_hold_lock("may_submit");
  if (slots_owned_by(pid) >= max_per_process) return SubmitCheck::OverQuota;
  return slot_available() ? SubmitCheck::Ok : SubmitCheck::TableFull;
}

uint32_t running_in(const WorkerBatch& w) {
  uint32_t n = 0;
  for (const auto& s : w.slots) n += s.request != nullptr;
  return n;
}

bool batch_idle(const WorkerBatch& w) {
  for (const auto& s : w.slots)
    if (s.request != nullptr && !s.request->waiting_for_blocks) return false;
  return true;
}

Request* pick_next() {
  must_hold_lock("pick_next");
  Request* queued[kQueueCapacity];
  uint32_t n_queued = queued_in_order(queued);
  Request* ready[kQueueCapacity];
  int n = 0;
  for (uint32_t i = 0; i < n_queued; i++) {
    Request* r = queued[i];
    int32_t model_state = models[r->model].state;
    if (model_state == KAI_AI_MODEL_FAILED) {
      // Its model will never be ready: fail it now rather than let it wait forever.
      fail(r, KAI_ENODEV);
      continue;
    }
    if (model_state == KAI_AI_MODEL_READY) ready[n++] = r;   // else still loading: stays queued
  }
  if (n == 0) return nullptr;
  // Aging first: ready[] is in arrival order, so the first overdue one is
  // the one that has waited longest. Not under the fair policy: it cannot
  // starve anyone (a waiting process's counter stands still while the
  // others' grow, so it soon is the least served), and when every request
  // waits longer than the bound (a slow model, a long queue) aging would
  // turn it into first come, first served.
  uint64_t now = clock_ns();
  if (policy != Policy::Fair)
    for (int i = 0; i < n; i++)
      if (now - ready[i]->t_submit >= aging_ns) return ready[i];
  return ready[policy_function(policy)(ready, n)];
}

const Plan& schedule(WorkerBatch& w) {
  must_hold_lock("schedule");
  stop_and_preempt(w);
  admit_new(w);
  preempt_for_priority(w);
  choose_counts(w);
  grow_or_preempt(w);
  reserve_checkpoints(w);
  write_plan(w);
  w.plan.survey_team = w.plan.empty() && batch_idle(w) && !w.surveyed && models_loaded;
  if (w.plan.survey_team) w.surveyed = true;
  if (!w.plan.empty() && trace::enabled(KAI_TRACE_ITER_BEGIN)) trace_plan(w);
  return w.plan;
}

void plan_drop(Plan& p, const BatchSlot* s) {
  uint32_t out = 0;
  for (uint32_t g = 0; g < p.n_groups; g++) {
    PlanGroup& group = p.groups[g];
    uint32_t first = out;
    for (uint32_t i = group.first; i < group.first + group.count; i++) {
      BatchSlot* owner = p.slot[i];
      if (owner == s) continue;
      if (out == 0 || p.slot[out - 1] != owner) owner->first = out;   // its first item moves here
      p.items[out] = p.items[i];
      p.want[out] = p.want[i];
      p.slot[out] = owner;
      out++;
    }
    group.first = first;
    group.count = out - first;
  }
  p.n_items = out;
  // Groups left empty are skipped by the worker (count 0).
}

namespace {

// Publishes token `next` as r's newest output; true if r must stop there.
bool publish(Request* r, uint32_t worker, uint32_t next, uint64_t now) {
  if (r->n_generated == 0) r->t_first = now;
  if (r->n_generated < kMaxOutput) {
    r->output_ns[r->n_generated] = now;
    r->output[r->n_generated++] = next;
    if (r->grammar) grammar_sync(r->grammar, r->output, r->n_generated);   // stop_reason reads its state
    // A dead owner's counter is gone (process_exited): do not bring it back.
    if (!r->orphaned) fair_counters.charge_output(r->owner_pid, 1);
  }
  r->t_last = now;
  trace::emit_at(now, KAI_TRACE_TOKEN, uint64_t(r->id), worker, r->n_generated - 1, next);
  return stop_reason(*r) != KAI_AI_FINISH_NONE;
}

// N scheduled, k accepted, for one planned request (lock held). Items
// [first, first + count) fed positions fed .. fed + count - 1; those from
// `newest` on wanted a next token. Returns true if the request finished.
bool accept(WorkerBatch& w, BatchSlot& s, uint64_t now) {
  const Plan& p = w.plan;
  Request* r = s.request;
  uint32_t newest = context_len(*r) - 1 - r->fed;   // index of the item that fed the newest context token
  uint32_t kept = s.count;                          // positions whose input stands
  bool stop = false;
  if (newest < s.count) {
    kept = newest;
    for (uint32_t j = newest; j < s.count; j++) {
      uint32_t next = p.items[s.first + j].next;
      kept = j + 1;   // item j's input stands: the newest token, or a proposal that was accepted
      if (s.sampled) r->rng_state = p.rng_after[s.first + j];   // the generator after this draw
      stop = publish(r, w.id, next, now);
      if (stop || j + 1 == s.count) break;
      bool accepted = !reject_drafts && p.items[s.first + j + 1].token == next;
      if (!accepted) break;
    }
  }
  uint32_t drafts_kept = kept - 1 > newest ? kept - 1 - newest : 0;
  r->drafted += s.drafts;
  r->accepted += drafts_kept;
  counters.drafted += s.drafts;
  counters.accepted += drafts_kept;
  // The fair policy charges the positions computed for r: a rejected draft
  // too (fair_share.h, kFairDraftWeight); a kept one was charged as output.
  if (s.drafts > drafts_kept && !r->orphaned) fair_counters.charge_rejected_drafts(r->owner_pid, s.drafts - drafts_kept);
  if (newest < s.count) note_drafts_kept(*r, s.drafts, drafts_kept);   // a generating pass
  uint32_t fed = r->fed + kept;
  if (kept < s.count && s.recurrent) {
    // The linear layers' state went past the rejected positions and can
    // come back only to the checkpoint taken before the pass: the accepted
    // ones are computed again, as a chunk, in the next iterations.
    fed = r->fed;
  }
  if (fed < r->fed + s.count) {
    counters.rolled_back += r->fed + s.count - fed;
    s.rewind = true;
  }
  r->fed = fed;
  if (s.drafts > 0 && trace::enabled(KAI_TRACE_DRAFT))
    trace::emit_at(now, KAI_TRACE_DRAFT, uint64_t(r->id), w.id, s.drafts, drafts_kept, fed);
  if (s.rewind) kv_shrink(r->model, r->kv, fed);
  kv_publish(prefix_key(*r), r->fed, r->kv);   // its newly computed full prompt blocks join the prefix cache
  // The pass's checkpoints, oldest first (kv_ckpt_publish keeps the
  // request's newest): each whose position stood.
  for (uint32_t c = 0; c < s.n_pass_ckpt; c++) {
    if (r->fed >= s.pass_ckpt[c].pos) kv_ckpt_publish(prefix_key(*r), r->kv, s.pass_ckpt[c].id);
    else kv_ckpt_drop(r->model, s.pass_ckpt[c].id);
  }
  s.n_pass_ckpt = 0;
  if (stop) {
    // A recurrent model's state at the end of the sequence, for the next
    // turn of a conversation: the worker copies it after this commit, then
    // finish_checkpointed() publishes it and completes the request (its
    // tokens and blocks stay put until then).
    if (s.recurrent && !s.rewind && (s.ckpt_write = kv_final_checkpoint(prefix_key(*r), r->kv, r->fed)) != kNoCkpt) {
      s.finishing = true;
      return true;
    }
    complete(r, stop_reason(*r));
    clear_slot(s);
    return true;
  }
  if (newest < s.count) wakeup(r);   // a streaming reader (ai_read) sees the tokens now
  return false;
}

}  // namespace

bool has_finishing(const WorkerBatch& w) {
  for (const auto& s : w.slots)
    if (s.request != nullptr && s.finishing) return true;
  return false;
}

void finish_checkpointed(WorkerBatch& w) {
  must_hold_lock("finish_checkpointed");
  for (auto& s : w.slots) {
    Request* r = s.request;
    if (r == nullptr || !s.finishing) continue;
    kv_ckpt_publish(prefix_key(*r), r->kv, s.ckpt_write);   // held by r until complete() lets its blocks go
    s.ckpt_write = kNoCkpt;
    s.finishing = false;
    complete(r, stop_reason(*r));
    clear_slot(s);
  }
}

void commit(WorkerBatch& w) {
  must_hold_lock("commit");
  const Plan& p = w.plan;
  uint32_t batch_requests = 0;
  for (const auto& s : w.slots) batch_requests += s.request != nullptr && (s.count > 0 || s.failed);
  uint64_t now = clock_ns();
  for (auto& s : w.slots) {
    Request* r = s.request;
    if (r == nullptr) continue;
    // Its session restored the checkpoint it was admitted at (or failed to).
    if (s.ckpt_read != kNoCkpt) {
      kv_ckpt_unpin(r->model, s.ckpt_read);
      s.ckpt_read = kNoCkpt;
    }
    if (s.failed) {
      if (r->orphaned || r->cancel_requested) {
        stop_cancelled(r);
      } else {
        // The real cause reaches the owner (kai_ai_result.error); the
        // console gets the step and the detail.
        kprintf("ai: request %ld failed: %s\n", static_cast<long>(r->id), s.error.message);
        fail(r, static_cast<int32_t>(s.error.code), s.grammar_stuck ? KAI_AI_FINISH_NO_TOKEN : KAI_AI_FINISH_FAILED);
      }
      clear_slot(s);
      continue;
    }
    if (s.count == 0) continue;
    r->iterations++;
    r->batch_sum += batch_requests;
    accept(w, s, now);
  }
  counters.iterations++;
  counters.batch_requests += batch_requests;
  counters.batch_tokens += p.n_items;
  trace::emit(KAI_TRACE_ITER_END, 0, w.id, batch_requests, p.n_items);
}

}  // namespace ai
