// A simulation of the AI service's workers for host tests: the real
// request table, scheduler, policies and KV block manager (kernel/ai, built
// with KAI_AI_HOST), driven by a simulated clock and a fake forward pass.
//
// The fake pass stands for the model: it writes each fed token into the
// request's KV block (a "row" per position, as the real K/V rows) and
// computes a next token as a hash of the rows read back through the block
// table, position 0 to the newest. So a request whose table points at a
// wrong, stale or shared-and-overwritten block gets different tokens than
// when it runs alone (Sim::solo_output), and the test sees it at collect.
//
// Driving it: a test submits, cancels, exits and collects as the system
// calls do (each takes ai::lock), and steps workers: schedule(w) is step 1
// of a worker's iteration (lock, schedule, checks, unlock), run_and_commit(w)
// steps 2 and 3 (the fake pass unlocked, then lock, commit, checks). Steps of
// different workers may interleave freely, as on real harts: a worker that
// has scheduled and not yet committed is "in its pass".
//
// After every step check() verifies the invariants of kernel/ai (see the
// list in ai_sim.cpp); a broken transition panics, which here throws.
//
// Extending it (e.g. a fairness policy, priority preemption):
//   - a new policy: set SimOptions::policy; Sim::events() lists every
//     admission and preemption in order (request, owner, worker, time,
//     tokens so far), which is what a fairness test measures (tokens or
//     admissions per owner over a window);
//   - new per-request inputs: add them to Sim::Submit and pass them
//     through in Sim::submit() (the owner's Unix session and the priority
//     are there: submit() derives the cache domain from the session and
//     lifts the owner's fair counter, as ai_submit does);
//   - a different rule for choosing a preemption victim: override the
//     check with SimOptions::victim_rule (the default is "the youngest
//     running request of the model", which check() enforces at every
//     preemption); a test sets its own predicate over the candidates.
#pragma once
#include <stdint.h>

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../../kernel/ai/kv_cache.h"
#include "../../kernel/ai/models.h"
#include "../../kernel/ai/requests.h"
#include "../../kernel/ai/scheduler.h"
#include "../../kernel/ai/sharing.h"
#include "../../kernel/ai/proposer.h"

// The simulation checks tens of millions of invariants. Catch2's JUnit
// reporter (the one `make test` uses) keeps every assertion it is told of in
// memory until the end, which would take gigabytes; so a check that holds is
// not reported, and one that fails is reported by REQUIRE as usual (its
// expression is evaluated once more there). Tests that check something at
// every iteration use it too.
#define SIM_REQUIRE(...)                     \
  do {                                       \
    if (!(__VA_ARGS__)) REQUIRE(__VA_ARGS__); \
  } while (false)

namespace aisim {

struct SimOptions {
  uint32_t workers = 1;             // 1..ai::kMaxWorkers
  uint32_t n_models = 1;            // 1..KAI_AI_MAX_MODELS
  uint32_t kv_blocks = 16;          // blocks per model pool (ai.kv_blocks)
  uint32_t block_size = 4;          // positions per block (ai.kv_block)
  uint32_t seq_len = 64;            // the models' runtime_seq_len
  uint32_t vocab = 97;
  uint32_t max_batch = 4;           // ai.max_batch
  uint32_t budget = 16;             // ai.budget (>= max_batch)
  uint32_t max_per_process = 8;
  ai::Policy policy = ai::Policy::Fcfs;
  uint64_t aging_ns = 1000000000;
  bool prefix_cache = true;
  ai::PrefixShare prefix_share = ai::PrefixShare::Session;   // ai.prefix_share
  uint32_t preempt_gap = ai::kDefaultPreemptGap;             // ai.preempt_gap
  // The iteration seam: up to `drafts` proposed tokens per generating
  // request and iteration (ai.drafts). The simulation's proposer offers a
  // random number of them, of which a random leading run is what the model
  // will produce (the rest are random tokens), so that commit() accepts a
  // random k of the n scheduled positions.
  uint32_t drafts = 0;
  // The proposers are the kernel's own (proposer.cpp: each request's
  // kai_ai_submit.spec, or ai.drafts and ai.proposer), not the random one.
  bool real_proposers = false;
  // The models have a linear-attention layer: rejected positions roll back
  // through a checkpoint of the (fake) recurrent state taken before the pass.
  bool recurrent = false;
  // Is `victim` an acceptable choice when a request of its model needed
  // blocks? running = the model's running requests at that moment.
  std::function<bool(const ai::Request& victim, const std::vector<const ai::Request*>& running)> victim_rule;
};

struct Event {
  enum Kind { Admit, Preempt, MarkPreempt, Finish } kind;
  int64_t id;
  int owner;
  uint32_t worker;
  uint64_t t;
  uint32_t fed;
};

struct Submit {
  int pid = 1;
  int model = 0;
  std::vector<uint32_t> prompt;
  uint32_t n_predict = 1;
  uint32_t priority = 0;
  uint32_t flags = 0;
  int session = 1;   // the owner's Unix session (its cache domain under ai.prefix_share=session)
  kai_ai_speculation spec{};         // as ai_submit validated it (prediction: the vector below)
  std::vector<uint32_t> prediction{};
};

class Sim {
 public:
  explicit Sim(const SimOptions& o);
  ~Sim();   // forgets every request and pool: the next Sim starts from nothing
  Sim(const Sim&) = delete;
  Sim& operator=(const Sim&) = delete;

  const SimOptions& options() const { return opt_; }
  void advance(uint64_t ns);

  // Clients (as the system calls; each takes the lock).
  // nullptr when the table is full or the owner is at its quota.
  ai::Request* submit(const Submit& s);
  void cancel(int64_t id);                 // ai_cancel
  void exit_process(int pid);              // the owner exits
  uint32_t collect_finished();             // ai_wait on every finished result; checks it

  // Workers.
  bool in_pass(uint32_t w) const { return in_pass_[w]; }
  bool schedule(uint32_t w);               // true: a plan to run (the worker is now in its pass)
  // `fail_begin`: the sessions admitted in this plan cannot be begun (no memory).
  void run_and_commit(uint32_t w, bool fail_begin = false);
  bool iterate(uint32_t w);                // schedule and, if there is a plan, run and commit
  // Iterates worker 0..n-1 in turn until nothing is queued or running;
  // false if that takes more than max_rounds rounds.
  bool drain(uint32_t max_rounds = 100000);

  // The tokens the fake model gives this context when it runs alone.
  std::vector<uint32_t> solo_output(const std::vector<uint32_t>& prompt, uint32_t n) const;

  const std::vector<Event>& events() const { return events_; }
  const ai::WorkerBatch& batch(uint32_t w) const;
  uint64_t iterations_checked() const { return commits_; }
  uint64_t results_checked() const { return collected_; }

  // Every invariant (lock taken inside). Called after every step.
  void check();

 private:
  struct Snapshot {
    ai::RequestState state;
    int64_t id;
    uint64_t admitted_seq;
    uint32_t preemptions;
    bool preempt_requested;
    uint32_t priority_preemptions;   // of preemptions, those made for a more urgent request
    uint32_t priority;
  };
  std::vector<Snapshot> snapshot() const;
  void check_locked();
  void check_schedule(uint32_t w, const std::vector<Snapshot>& before, uint64_t now);
  void check_kv(int m);
  void check_result(const ai::Request& r);
  uint32_t fake_next(const ai::Request& r, uint32_t pos) const;
  static uint32_t propose(const ai::Request& r, uint32_t max, uint32_t* out);

  SimOptions opt_;
  bool in_pass_[ai::kMaxWorkers] = {};
  uint32_t pos_[ai::kMaxWorkers][ai::kMaxBatch] = {};   // fake sessions' positions
  // Fake sessions' checkpoints (SimOptions::recurrent): the position whose
  // state was kept, or UINT32_MAX. A recurrent session moves back only there.
  uint32_t ckpt_[ai::kMaxWorkers][ai::kMaxBatch] = {};
  std::mt19937_64 draft_rng_{12345};
  std::vector<std::vector<uint32_t>> rows_;             // per model: [block * B + offset] = token
  // Recurrent-state checkpoints (kv_checkpoint.h) as the fake pass sees
  // them: (model, id) -> the tokens of the rows the session had fed when
  // the checkpoint was written (its "state").
  std::map<std::pair<int, uint32_t>, std::vector<uint32_t>> ckpt_state_;
  std::vector<Event> events_;
  uint64_t commits_ = 0, collected_ = 0;
  // Schedules in a row in which a running request that was not waiting for
  // blocks got no token (the budget went to others first). Prompt chunks
  // are handed out in batch-slot order, so a prompt in a late slot waits
  // while requests admitted later into earlier slots prefill: the bound is
  // a property of the workloads here, not a guarantee of the scheduler.
  static constexpr uint32_t kMaxStarved = 1000;
  std::map<int64_t, uint32_t> starved_;
};

}  // namespace aisim
