// Worker kernel threads: the iteration loop of the AI service.
//
// Each iteration is
//   1. under the lock: schedule() decides everything (scheduler.cpp: who
//      stops, who is admitted, who grows or is preempted, which tokens go
//      through the model) and writes one Plan;
//   2. without the lock: run the plan as written, deciding nothing: begin
//      the sessions of newly admitted requests (rewind those whose positions
//      were rolled back, keep a checkpoint where the plan holds proposals
//      for a recurrent model, restore the recurrent-state checkpoint a
//      request was admitted at), one batched forward pass per (model,
//      activation kind) group, reading every weight once for all its
//      tokens, and the sampler's draw for every item the plan marked
//      Sample, from the logits the pass computed for it; then the K/V
//      rows of the checkpoints the pass wrote;
//   3. under the lock: commit() accepts what agrees with the model,
//      publishes each new token and finishes what is complete.
//
// So a cancel, a new arrival or an exit takes effect at the next iteration
// boundary: within one forward pass of at most `budget` tokens.
// Locking: ai::lock only around steps 1 and 3; the pass runs unlocked
// because only this worker touches a Running request's session, and the
// prompt and output of a Running request change only in commit(), on this
// worker.
#include "scheduler.h"
#include "models.h"
#include "engine.h"
#include "kv_checkpoint.h"
#include "worker.h"
#include "../proc.h"
#include "../trap.h"
#include "../printf.h"
#include "../riscv.h"

namespace ai {

namespace {

// Marks s failed with `e` and takes its items out of the plan (commit()
// fails its request).
void fail_slot(WorkerBatch& w, BatchSlot& s, const Error& e) {
  s.failed = true;
  s.error = e;
  plan_drop(w.plan, &s);
}

// Sessions of requests admitted by this schedule(): a fresh session of the
// request's model, continued at its cached prefix. Sessions whose request
// had positions rolled back at the last commit: moved back to its `fed`.
// A slot whose session cannot be begun or moved back leaves the plan.
void prepare_sessions(WorkerBatch& w) {
  for (auto& s : w.slots) {
    if (s.request == nullptr) continue;
    Request* r = s.request;
    if (s.fresh) {
      s.fresh = false;
      s.rewind = false;
      auto begun = engine_session_begin(s.engine, s.model, s.int8, s.pool, s.checkpointed && s.recurrent);
      if (!begun.is_error()) {
        engine_session_map(s.engine, s.pool, r->kv.block, r->kv.n);
        if (s.ckpt_read != kNoCkpt) {
          // A recurrent model's prefix: the state at fed comes from the
          // checkpoint it was admitted at (pinned until commit).
          kv_ckpt_copy(r->model, s.ckpt_read, *s.session, false);
          begun = engine_session_restored(s.engine, r->fed);
        } else {
          begun = engine_session_resume(s.engine, r->fed);
        }
      }
      if (begun.is_error()) fail_slot(w, s, begun.error());
    } else if (s.rewind) {
      s.rewind = false;
      if (auto back = engine_session_rewind(s.engine, r->fed); back.is_error()) fail_slot(w, s, back.error());
    }
    // Positions that may be rejected: the recurrent state before them is
    // kept, so that commit() can roll back to here.
    if (!s.failed && s.drafts > 0 && s.recurrent)
      if (auto kept = engine_session_checkpoint(s.engine); kept.is_error()) fail_slot(w, s, kept.error());
  }
}

// The last repeat_last_n tokens before plan item i, oldest first: the
// request's context, then the proposed tokens fed before position i (for a
// proposal being verified, the tokens plain decoding would have had).
uint32_t recent_tokens(const Plan& p, uint32_t i, const BatchSlot& s, uint32_t* recent) {
  static constexpr uint32_t kWindow = llm::kMaxRepeatLastN;
  const Request& r = *s.request;
  uint32_t len = context_len(r);
  uint32_t total = r.fed + (i - s.first) + 1;   // tokens up to and including item i's input
  if (total < len) total = len;                 // (a prompt chunk's last item: the whole context)
  uint32_t want = s.params.repeat_last_n < kWindow ? s.params.repeat_last_n : kWindow;
  uint32_t n = total < want ? total : want;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t at = total - n + k;
    recent[k] = at < len ? context_token(r, at) : p.items[s.first + (at - r.fed)].token;
  }
  return n;
}

// Sample items of group g: each is given a row of the worker's logits room
// for the pass to fill. False (the group's slots failed) if there is no room.
bool give_logits_rows(WorkerBatch& w, const PlanGroup& g, LogitsRoom* room) {
  Plan& p = w.plan;
  uint32_t rows = 0;
  for (uint32_t i = g.first; i < g.first + g.count; i++) rows += p.want[i] == Want::Sample;
  if (rows == 0) return true;
  auto got = engine_logits_room(w.id, g.engine, rows);
  if (got.is_error()) {
    for (uint32_t i = g.first; i < g.first + g.count; i++) {
      p.slot[i]->failed = true;
      p.slot[i]->error = got.error();
    }
    return false;
  }
  *room = got.value();
  size_t vocab = p.items[g.first].session->model().config().vocab_size;
  uint32_t row = 0;
  for (uint32_t i = g.first; i < g.first + g.count; i++)
    if (p.want[i] == Want::Sample) p.items[i].logits = room->rows + vocab * row++;
  return true;
}

// Draws the token of every Sample item of group g from its logits, each
// request's generator chained through its items in position order (the
// state after each draw goes to rng_after; commit() keeps the one after
// the last accepted token).
void sample_group(WorkerBatch& w, const PlanGroup& g, const LogitsRoom& room) {
  Plan& p = w.plan;
  uint64_t rng_state = 0;
  for (uint32_t i = g.first; i < g.first + g.count; i++) {
    if (p.want[i] != Want::Sample) continue;
    BatchSlot& s = *p.slot[i];
    if (s.failed) continue;
    llm::Rng rng{i > g.first && p.slot[i - 1] == &s && p.want[i - 1] == Want::Sample ? rng_state
                                                                                    : s.request->rng_state};
    uint32_t recent[llm::kMaxRepeatLastN];
    uint32_t n = recent_tokens(p, i, s, recent);
    uint32_t vocab = s.session->model().config().vocab_size;
    if (Request* r = s.request; r->grammar != nullptr) {
      // Disallowed ids to -infinity before every sampling step (penalty,
      // temperature, filters): they have probability 0. No drafts, so the
      // state is the one after the whole output.
      auto masked = grammar_mask(r->grammar, r->output, r->n_generated, p.items[i].logits, vocab);
      if (masked.is_error()) {
        s.failed = true;
        s.grammar_stuck = true;
        s.error = masked.error();
        continue;
      }
    }
    p.items[i].next = llm::sample_token(p.items[i].logits, vocab, s.params, rng, recent, n, room.order);
    p.rng_after[i] = rng_state = rng.state;
  }
}

// One pass per group, then the draws of its sampled positions. Every
// member's block table as schedule() left it (only this worker changes it)
// is mapped into its session first.
void forward_all(WorkerBatch& w) {
  Plan& p = w.plan;
  for (uint32_t g = 0; g < p.n_groups; g++) {
    PlanGroup& group = p.groups[g];
    if (group.count == 0) continue;
    LogitsRoom room{};
    if (!give_logits_rows(w, group, &room)) continue;
    for (uint32_t i = group.first; i < group.first + group.count; i++) {
      BatchSlot& s = *p.slot[i];
      if (i == group.first || p.slot[i - 1] != &s) engine_session_map(s.engine, s.pool, s.request->kv.block, s.request->kv.n);
    }
    auto result = engine_forward(w.id, group.engine, group.int8, p.items + group.first, group.count);
    if (result.is_error()) {
      for (uint32_t i = group.first; i < group.first + group.count; i++) {
        p.slot[i]->failed = true;
        p.slot[i]->error = result.error();
      }
      continue;
    }
    sample_group(w, group, room);
  }
}

// Checkpoints reserved for this pass: the pass put the recurrent state in
// (BatchItem::keep_state); their K/V rows go in now. commit() publishes them.
void save_pass_checkpoints(WorkerBatch& w) {
  for (auto& s : w.slots)
    for (uint32_t c = 0; s.request && !s.failed && c < s.n_pass_ckpt; c++)
      kv_ckpt_copy_rows(s.request->model, s.pass_ckpt[c].id, *s.session);
}

// A finished request's final checkpoint (commit reserved it): the
// session's snapshot at its end, before anything moves the session on.
void save_final_checkpoints(WorkerBatch& w) {
  for (auto& s : w.slots)
    if (s.request && s.ckpt_write != kNoCkpt && !s.failed)
      kv_ckpt_copy(s.request->model, s.ckpt_write, *s.session, true);
}

// Workers' batches live in static storage: each holds a plan of
// kMaxBudget items, too big for a kernel stack.
WorkerBatch batches[kMaxWorkers];

[[noreturn]] void worker_main(void* arg) {
  uint32_t me = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(arg));
  WorkerBatch& w = batches[me];
  llm::Session* sessions[kMaxBatch];
  EngineSession* engines[kMaxBatch];
  for (uint32_t i = 0; i < kMaxBatch; i++) {
    engines[i] = engine_session(me, i);
    sessions[i] = engine_runtime_session(engines[i]);
  }
  worker_batch_init(w, me, sessions, engines);
  for (;;) {
    {
      SpinlockGuard guard(lock);
      while (schedule(w).empty() && batch_idle(w) && !w.plan.survey_team) sleep(&queue_nonempty_chan, lock);
    }
    if (w.plan.survey_team) {
      engine_survey_team(me);
      continue;
    }
    // Computing for seconds with the timer masked would keep this hart
    // from every other thread (docs/kernel.md, "Preemption"): never allowed.
    if (!riscv::intr_get()) panic("ai-worker%u: about to compute with interrupts off", me);
    prepare_sessions(w);
    forward_all(w);
    save_pass_checkpoints(w);
    {
      SpinlockGuard guard(lock);
      commit(w);
      if (!has_finishing(w)) continue;
    }
    // Requests that ended here wait for their final checkpoint (commit
    // reserved it): copied without the lock, as any checkpoint.
    save_final_checkpoints(w);
    SpinlockGuard guard(lock);
    finish_checkpointed(w);
  }
}

}  // namespace

ErrorOr<void> start_worker(uint32_t id) {
  char name[16] = "ai-worker0";
  name[9] = static_cast<char>('0' + id);
  TRY(kthread_create(name, worker_main, reinterpret_cast<void*>(static_cast<uintptr_t>(id))));
  return {};
}

}  // namespace ai
