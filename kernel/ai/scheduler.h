// The scheduler of the AI service: every decision of an iteration, in one
// place (scheduler.cpp explains the idea and its invariants).
//
// A worker's loop is
//     lock; plan = schedule(w); unlock;
//     run the plan (one batched forward pass per group, sampling);
//     lock; commit(w); unlock;
//     (a finishing recurrent request: copy its final checkpoint;
//      lock; finish_checkpointed(w); unlock)
// schedule() decides (who stops, who is admitted, who grows or is
// preempted, which tokens go through the model); commit() applies the
// outcome (progress, published tokens, finished requests). Both run with
// ai::lock held; between them the plan and the sessions belong to the
// worker alone.
#pragma once
#include <stdint.h>
#include "limits.h"
#include "requests.h"
#include "policy.h"
#include "llm_batch.h"
#include "llm_sample.h"
#include "ai_error.h"
#include "kv_checkpoint.h"

namespace ai {

struct EngineModel;     // engine.h: a loaded model (opaque here)
struct EngineSession;   // engine.h: one batch slot's runtime session (opaque here)

// ---- options (set by start(); policy and aging also by ai_control) -------
// The policy in force (`ai.policy=fcfs|sjf|priority`) and the aging bound
// that applies under every policy: a request queued for aging_ns or more
// is admitted before any request queued for less (the oldest overdue
// first), so SJF and priority cannot starve anyone (`ai.aging_ms=N`).
extern Policy policy;
extern uint64_t aging_ns;
// Batching (ai.max_batch, ai.budget; limits.h). max_batch changes at run
// time only under ai::lock (ai_control KAI_AI_CTL_SET_MAX_BATCH), and never
// above token_budget; token_budget is read-only while workers run.
extern uint32_t max_batch;
extern uint32_t token_budget;

// One running request in a worker's batch.
struct BatchSlot {
  Request* request;          // nullptr: this batch slot is empty
  EngineSession* engine;     // this slot's session, kept from request to request
  llm::Session* session;     // ... the runtime's Session inside it (what items point at)
  EngineModel* model;        // immutable once the model is READY
  const llm::KvPool* pool;   // its model's KV block pool (nullptr: contiguous KV)
  bool int8;
  bool fresh;                // admitted this iteration: begin its session at request->fed before the pass
  // Its next tokens are drawn by the sampler (temperature, penalties), not
  // the argmax: decided at admission, from the request's parameters.
  bool sampled;
  llm::SamplingParams params;
  // The model has linear-attention layers, whose state moves only forward:
  // rejected positions are rolled back through a checkpoint the worker
  // takes before the pass (llm::Session::keep_checkpoint), and the kept
  // ones are then computed again (commit() leaves `fed` before them).
  bool recurrent;
  // Checkpoint room was asked for when its session was begun (speculation on).
  bool checkpointed;
  uint32_t first, count;     // this iteration's positions: plan.items[first .. first + count)
  uint32_t drafts;           // ... the last `drafts` of them proposed tokens (request->draft)
  // commit() moved request->fed back behind positions the session has
  // computed: the worker rewinds the session to fed before its next pass.
  bool rewind;
  // Recurrent-state checkpoints (kv_checkpoint.h): the one its session is
  // restored from before its first pass (admitted at that checkpoint's
  // position; pinned until commit), and the final one of a finished
  // request (below).
  uint32_t ckpt_read = kNoCkpt;
  uint32_t ckpt_write = kNoCkpt;
  // Its request has chosen its last token and waits for its final
  // checkpoint (ckpt_write, kv_final_checkpoint) to be copied: the worker
  // copies it after commit(), then finish_checkpointed() completes it.
  bool finishing = false;
  // The checkpoints reserved for this iteration's pass, in position order,
  // at most one per position the pass reaches (kv_next_checkpoint offers
  // two per prompt): the item at pos - 1 carries writer.sink, the worker
  // adds the K/V rows after the pass, commit() publishes each whose
  // position stood (or gives it back). The writers live here, in the
  // worker's static batch, because the pass reads them through pointers.
  struct PassCheckpoint {
    uint32_t id;
    uint32_t pos;
    CkptWriter writer;
  };
  static constexpr uint32_t kPassCheckpoints = 2;
  PassCheckpoint pass_ckpt[kPassCheckpoints];
  uint32_t n_pass_ckpt = 0;
  bool failed;               // the run failed for it (error says why); commit fails the request
  bool grammar_stuck;        // ... because its grammar allowed no token (KAI_AI_FINISH_NO_TOKEN)
  Error error;
};

// What the pass returns for one plan item, decided by schedule():
//   Nothing  a prompt position whose next token nobody needs;
//   Argmax   the greedy next token (fused into the classifier's product);
//   Sample   a token drawn by the request's sampler with its generator,
//            from the position's logits (computed once, in the pass).
// A constrained request is always Sample: its mask applies between the
// logits and the draw (worker.cpp, sample_group).
enum class Want : uint8_t { Nothing, Argmax, Sample };

// One forward pass: items [first, first + count) of the plan, all of one
// model and activation kind (a pass reads one model's weights).
struct PlanGroup {
  int model;                 // index in the model registry
  EngineModel* engine;
  bool int8;
  uint32_t first, count;
};

// What one iteration runs. The token list is written once, already in the
// runtime's own type and in pass order: grouped by (model, activation
// kind), each request's tokens consecutive and in position order. slot[i]
// is the batch slot (and so the request) item i belongs to.
struct Plan {
  uint32_t n_items;
  llm::BatchItem items[kMaxBudget];
  BatchSlot* slot[kMaxBudget];
  Want want[kMaxBudget];
  // Sample items: the request's generator after drawing this item's token
  // (the worker writes it; commit keeps the one of the last accepted token).
  uint64_t rng_after[kMaxBudget];
  uint32_t n_groups;
  PlanGroup groups[kMaxBatch];
  // Nothing to run, every model loaded, and the row team has not yet timed
  // its widths: the worker runs the survey now (row_team.h), once. Nobody
  // waits for it then, and nothing else computes.
  bool survey_team;
  bool empty() const { return n_items == 0; }
};

// One worker's side of the scheduler: the requests it runs together and
// this iteration's plan. Static storage (the token arrays are too big for a
// kernel stack); lives as long as the worker.
struct WorkerBatch {
  uint32_t id;
  BatchSlot slots[kMaxBatch];
  Plan plan;
  bool surveyed;   // its row team's survey was planned (Plan::survey_team)
};

// Makes w an empty batch of worker `id`; sessions[i] / engines[i] are batch
// slot i's runtime and engine sessions.
void worker_batch_init(WorkerBatch& w, uint32_t id, llm::Session* const* sessions,
                       EngineSession* const* engines);
// Running requests in w.
uint32_t running_in(const WorkerBatch& w);
// Nothing in w can run now: no running request, or every one waits for KV
// blocks held on another worker. The worker sleeps only then; an empty plan
// with a request that can run (all its planned tokens went to a request
// preempted in the same schedule) is run and committed as it is (an
// iteration without tokens), and the next schedule plans again.
bool batch_idle(const WorkerBatch& w);

// Decides the iteration (lock held): stops cancelled requests, preempts the
// ones another worker asked for, admits queued requests (policy, aging, KV
// blocks), grows every planned request's block table or preempts the
// youngest running request of its model, and writes w.plan. When the plan
// is empty and batch_idle(w), the worker sleeps on queue_nonempty_chan.
const Plan& schedule(WorkerBatch& w);

// Applies the outcome of w.plan (lock held): items[].next holds each new
// token (argmax, or the sampler's draw), slots[].failed / .error any
// failure. For each planned request, "N scheduled, k accepted": its first
// wanted position's token is published; each proposed token that equals the
// token published before it is accepted, and the next position's token is
// published too; the first mismatch (or a stop) ends the run. `fed`
// advances past the accepted positions only; the KV block table gives back
// whole blocks past the new end, and the request's generator is the one
// after its last published token. Registers newly full prompt blocks,
// finishes what is complete, and counts the iteration.
void commit(WorkerBatch& w);
// A recurrent model's request that chose its last token in commit() may
// wait for its final checkpoint (BatchSlot::finishing): the worker copies
// the checkpoints of such slots (no lock), then finish_checkpointed()
// publishes each and completes its request (lock held).
bool has_finishing(const WorkerBatch& w);
void finish_checkpointed(WorkerBatch& w);

// A run that failed for one slot before its pass (its session could not be
// begun): removes its items from the plan. Worker-private, no lock.
void plan_drop(Plan& plan, const BatchSlot* s);

// May process `pid` submit a request now (lock held)? The quota comes first:
// sleeping for a slot would never end if this process itself holds the
// slots (only it could free them, by collecting).
enum class SubmitCheck : uint8_t { Ok, OverQuota, TableFull };
SubmitCheck may_submit(int pid);

// The next queued request to admit, or nullptr (lock held). Requests for
// models that failed to load are failed here; among the ready ones the
// oldest overdue (aging; not under the fair policy) comes first, otherwise
// the policy in force chooses.
Request* pick_next();

}  // namespace ai
