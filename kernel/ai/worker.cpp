// Worker kernel threads: the iteration loop of the AI service.
//
// Each iteration is
//   1. under the lock: schedule() decides everything (scheduler.cpp: who
//      stops, who is admitted, who grows or is preempted, which tokens go
//      through the model) and writes one Plan;
//   2. without the lock: run the plan: begin the sessions of newly admitted
//      requests, one batched forward pass per (model, activation kind)
//      group, reading every weight once for all its tokens, and the sampler
//      for the requests that asked for it;
//   3. under the lock: commit() publishes each new token and finishes what
//      is complete.
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
#include "worker.h"
#include "../proc.h"
#include "../trap.h"
#include "../printf.h"
#include "../riscv.h"

namespace ai {

namespace {

// The ABI's thousandths become the sampler's floats here, in a kernel
// thread (system calls do no floating point).
void set_sampling(BatchSlot& s, const kai_ai_sampling& a) {
  s.params = llm::sampling_from_thousandths(a.temperature_milli, a.top_k, a.top_p_milli, a.min_p_milli,
                                            a.repeat_penalty_milli, a.repeat_last_n);
  // The generator lives in the request (rng_state), so a preempted and
  // recomputed request goes on drawing where it stopped.
  s.sampled = !s.params.greedy() || s.params.repeat_penalty != 1.0f;
}

// Sessions of requests admitted by this schedule(): a fresh session of the
// request's model, continued at its cached prefix. A slot whose session
// cannot be begun leaves the plan; commit() fails its request.
void begin_sessions(WorkerBatch& w) {
  for (auto& s : w.slots) {
    if (s.request == nullptr || !s.fresh) continue;
    s.fresh = false;
    Request* r = s.request;
    set_sampling(s, r->sampling);
    auto begun = engine_session_begin(s.engine, s.model, s.int8, s.pool);
    if (!begun.is_error()) {
      engine_session_map(s.engine, s.pool, r->kv.block, r->kv.n);
      begun = engine_session_resume(s.engine, r->fed);
    }
    if (begun.is_error()) {
      s.failed = true;
      s.error = begun.error();
      plan_drop(w.plan, &s);
    }
  }
}

// One pass per group. Every member's block table as schedule() left it
// (only this worker changes it) is mapped into its session first.
void forward_all(WorkerBatch& w) {
  Plan& p = w.plan;
  for (uint32_t g = 0; g < p.n_groups; g++) {
    PlanGroup& group = p.groups[g];
    if (group.count == 0) continue;
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
    }
  }
}

// For sampled requests, replace the argmax of each new token by a draw.
void sample_all(WorkerBatch& w) {
  for (auto& s : w.slots) {
    Request* r = s.request;
    if (r == nullptr || s.count == 0 || s.failed || !s.sampled) continue;
    llm::BatchItem& last = w.plan.items[s.first + s.count - 1];
    if (!last.want_next) continue;
    // The last repeat_last_n tokens of prompt + output, oldest first.
    static constexpr uint32_t kWindow = llm::kMaxRepeatLastN;
    uint32_t recent[kWindow];
    uint32_t total = r->prompt_len + r->n_generated;
    uint32_t want = s.params.repeat_last_n < kWindow ? s.params.repeat_last_n : kWindow;
    uint32_t n = total < want ? total : want;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t at = total - n + i;
      recent[i] = at < r->prompt_len ? r->prompt[at] : r->output[at - r->prompt_len];
    }
    llm::Rng rng{r->rng_state};
    auto next = engine_sample(w.id, s.engine, s.params, rng, recent, n);
    r->rng_state = rng.state;
    if (next.is_error()) {
      s.failed = true;
      s.error = next.error();
    } else {
      last.next = next.value();
    }
  }
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
  bool surveyed = false;
  for (;;) {
    bool survey_now = false;
    {
      SpinlockGuard guard(lock);
      while (schedule(w).empty() && batch_idle(w)) {
        // Idle, with every model loaded: the moment to time the row team's
        // widths (row_team.h, survey), once. Nobody waits for it then, and
        // nothing else computes.
        if (!surveyed && models_loaded) {
          survey_now = true;
          break;
        }
        sleep(&queue_nonempty_chan, lock);
      }
    }
    if (survey_now) {
      engine_survey_team(me);
      surveyed = true;
      continue;
    }
    // Computing for seconds with the timer masked would keep this hart
    // from every other thread (docs/kernel.md, "Preemption"): never allowed.
    if (!riscv::intr_get()) panic("ai-worker%u: about to compute with interrupts off", me);
    begin_sessions(w);
    forward_all(w);
    sample_all(w);
    SpinlockGuard guard(lock);
    commit(w);
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
