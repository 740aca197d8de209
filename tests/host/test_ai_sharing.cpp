// How processes share the AI service. First the sharing rules alone, as the
// kernel applies them (kernel/ai/sharing.h): which cache domain a request
// gets, what keys its first prefix block, and when priority preemption
// happens. Then the same rules inside the real scheduler
// (kernel/ai/scheduler.cpp, policies and KV blocks under the simulation of
// ai_sim.h), iteration by iteration:
//   - the fair policy keeps the service of backlogged processes within the
//     bound Sheng et al. prove for the Virtual Token Counter (derived for
//     kai below), two and four processes of different request shapes;
//     first come, first served on the same workload exceeds it;
//   - priority preemption takes the batch slot of the least urgent request,
//     the latest admitted among equals, only for a request at least
//     ai.preempt_gap levels more urgent, and the victim's tokens do not
//     change;
//   - a cached prompt prefix is found from the same Unix session only
//     (ai.prefix_share=session), from any with ai.prefix_share=global.
//
// THE BOUND, for kai's parameters. The paper's theorem: if two clients f
// and g are both backlogged (each has a request waiting) during an
// interval, the weighted services they receive in it differ by at most 2U,
//     U = max(w_p * L, w_q * M),
// w_p and w_q the weights of a prompt and of an output token, L the longest
// prompt, M the most tokens the running batch can hold. The reason: a
// request is admitted only for the least-served waiting client, so when g
// is admitted its counter is at most f's; that admission adds one prompt
// (at most w_p * L), and afterwards g's counter can only grow by the output
// of g's requests already running, which together with their prompts fit
// in the batch (at most w_q * M when w_p <= w_q). So the counters of two
// backlogged clients stay within U of each other, and the service in an
// interval, the change of a counter over it, within 2U.
// In kai:
//   - w_p = kFairPromptWeight = 1, w_q = kFairOutputWeight = 2
//     (fair_share.h), charged as the paper charges: a prompt at admission
//     (less its cached prefix, and never again after a preemption), an
//     output token when it is generated;
//   - L = the longest prompt (at most KAI_AI_MAX_PROMPT; here the
//     workload's longest);
//   - M = workers * ai.max_batch * the longest context (prompt + tokens to
//     generate): the running batch holds at most that many requests, each
//     at most its context in KV positions;
//   - the chunk budget (ai.budget) does not enter: it spreads a prompt's
//     computation over iterations but not its charge, and every generating
//     request gets its one token per iteration whatever the budget (it is
//     at least ai.max_batch); it changes when tokens are produced, not who
//     is admitted next nor what anyone is charged.
// So 2U = 2 * max(L, 2 * workers * max_batch * (L + N)), N the most tokens
// a request generates. For the flood of docs/engine-lab.md (one worker,
// ai.max_batch=4, prompts of at most 32 and 16 tokens) that is 768
// weighted tokens, whatever the number of requests the flood sends.
//
// The service is counted here by the test, from what it sees: the prompt
// tokens of each first admission less its cached prefix, the tokens each
// request has generated; it also checks the kernel's counters agree.
#include <catch2/catch.hpp>

#include <stdio.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "../../kernel/ai/sharing.h"
#include "ai_sim.h"

using aisim::Event;
using aisim::Sim;
using aisim::SimOptions;
using aisim::Submit;

namespace {

constexpr uint64_t kWp = ai::kFairPromptWeight;
constexpr uint64_t kWo = ai::kFairOutputWeight;
constexpr uint64_t kWd = ai::kFairDraftWeight;

ai::Request* by_id(int64_t id) {
  for (auto& r : ai::slots)
    if (r.state != ai::RequestState::Free && r.id == id) return &r;
  return nullptr;
}

std::vector<uint32_t> tokens(uint32_t n, uint32_t seed) {
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < n; i++) v.push_back((seed * 31 + i * 7) % 90 + 1);
  return v;
}

// The requests of one process: prompt and output lengths drawn from these
// ranges.
struct Shape {
  uint32_t prompt_lo, prompt_hi, predict_lo, predict_hi;
};

// Weighted service per process, counted from the simulation's admissions
// and the requests' generated tokens.
class Ledger {
 public:
  void submitted(const ai::Request& r) { seen_[r.id] = Seen{r.owner_pid, r.prompt_len, false, 0, 0}; }

  // After an iteration, before its finished requests are collected.
  void update(const Sim& sim) {
    const auto& events = sim.events();
    for (; events_seen_ < events.size(); events_seen_++) {
      const Event& e = events[events_seen_];
      if (e.kind != Event::Admit) continue;
      Seen& s = seen_.at(e.id);
      if (s.charged) continue;   // readmitted after a preemption: the recomputation is not charged
      s.charged = true;
      total_[s.owner] += kWp * (s.prompt_len - e.fed);   // fed at admission = the cached prefix
    }
    for (const auto& r : ai::slots) {
      if (r.state == ai::RequestState::Free) continue;
      auto it = seen_.find(r.id);
      if (it == seen_.end()) continue;
      total_[it->second.owner] += kWo * (r.n_generated - it->second.generated);
      it->second.generated = r.n_generated;
      // Proposed tokens computed and not kept (kept ones became output).
      uint32_t rejected = r.drafted - r.accepted;
      total_[it->second.owner] += kWd * (rejected - it->second.rejected);
      it->second.rejected = rejected;
    }
  }

  uint64_t service(int pid) const {
    auto it = total_.find(pid);
    return it == total_.end() ? 0 : it->second;
  }

 private:
  struct Seen {
    int owner;
    uint32_t prompt_len;
    bool charged;
    uint32_t generated;
    uint32_t rejected;
  };
  std::map<int64_t, Seen> seen_;
  std::map<int, uint64_t> total_;
  size_t events_seen_ = 0;
};

struct BacklogRun {
  int64_t worst = 0;       // the largest difference in service of two processes over any interval
  uint64_t two_u = 0;      // the bound
  uint64_t iterations = 0;
};

uint64_t bound_u(const std::vector<Shape>& shapes, uint32_t workers, uint32_t max_batch) {
  uint64_t longest_prompt = 0, longest_context = 0;
  for (const auto& s : shapes) {
    longest_prompt = std::max<uint64_t>(longest_prompt, s.prompt_hi);
    longest_context = std::max<uint64_t>(longest_context, s.prompt_hi + s.predict_hi);
  }
  uint64_t m = uint64_t(workers) * max_batch * longest_context;
  return std::max(kWp * longest_prompt, kWo * m);
}

// Processes 1..n (shapes[i] is process i+1's), each keeping max_batch + 1
// requests queued: at most max_batch are admitted in one iteration, so each
// stays backlogged from its first submission to the end. The real scheduler
// runs `iterations` iterations; after every one, the difference in service
// of every pair over every interval so far is measured and, when
// `check_bound`, required to stay within 2U (and the kernel's counters to
// equal the service counted here).
// drafts > 0: the simulation proposes up to that many tokens per pass (a
// random leading run of them right), and only the counters are checked
// (the bound below is derived without speculation).
BacklogRun run_backlogged(ai::Policy policy, const std::vector<Shape>& shapes, uint32_t max_batch, uint32_t budget,
                          uint32_t iterations, uint32_t seed, bool check_bound, uint32_t drafts = 0) {
  SimOptions o;
  o.drafts = drafts;
  o.policy = policy;
  o.max_batch = max_batch;
  o.budget = budget;
  o.seq_len = 64;
  o.block_size = 4;
  o.kv_blocks = max_batch * (o.seq_len / o.block_size) + 16;   // no memory pressure: every admission fits
  o.max_per_process = 2 * max_batch + 1;
  Sim sim(o);
  std::mt19937 rng(seed);
  Ledger ledger;
  const int n = int(shapes.size());
  const uint32_t depth = max_batch + 1;
  REQUIRE(n * depth + max_batch <= uint32_t(ai::kQueueCapacity));
  BacklogRun run;
  run.two_u = 2 * bound_u(shapes, o.workers, max_batch);
  // D(a, b) = service(a) - service(b); the worst interval is max D - min D.
  std::vector<int64_t> lo(n * n, 0), hi(n * n, 0);
  auto queued_of = [](int pid) {
    uint32_t q = 0;
    for (const auto& r : ai::slots) q += r.state == ai::RequestState::Queued && r.owner_pid == pid;
    return q;
  };
  for (uint32_t it = 0; it < iterations; it++) {
    for (int c = 0; c < n; c++) {
      const Shape& s = shapes[c];
      while (queued_of(c + 1) < depth) {
        uint32_t p = s.prompt_lo + rng() % (s.prompt_hi - s.prompt_lo + 1);
        Submit sub;
        sub.pid = c + 1;
        for (uint32_t i = 0; i < p; i++) sub.prompt.push_back(1 + rng() % 90);
        sub.n_predict = s.predict_lo + rng() % (s.predict_hi - s.predict_lo + 1);
        ai::Request* r = sim.submit(sub);
        REQUIRE(r != nullptr);
        ledger.submitted(*r);
      }
    }
    sim.iterate(0);
    sim.advance(1000);
    ledger.update(sim);
    sim.collect_finished();   // tokens checked against each request alone
    run.iterations++;
    for (int a = 0; a < n; a++) {
      INFO("process " << a + 1 << " at iteration " << it);
      SIM_REQUIRE(queued_of(a + 1) >= 1);   // still backlogged: the theorem applies
      if (check_bound || drafts > 0) SIM_REQUIRE(ai::fair_counters.served(a + 1) == ledger.service(a + 1));
      for (int b = a + 1; b < n; b++) {
        int64_t d = int64_t(ledger.service(a + 1)) - int64_t(ledger.service(b + 1));
        lo[a * n + b] = std::min(lo[a * n + b], d);
        hi[a * n + b] = std::max(hi[a * n + b], d);
        run.worst = std::max(run.worst, hi[a * n + b] - lo[a * n + b]);
        if (check_bound) {
          INFO("processes " << a + 1 << " and " << b + 1 << ": difference " << hi[a * n + b] - lo[a * n + b]
                            << " over an interval, 2U = " << run.two_u);
          SIM_REQUIRE(hi[a * n + b] - lo[a * n + b] <= int64_t(run.two_u));
        }
      }
    }
  }
  return run;
}

const char* name(ai::Policy p) { return ai::policy_name(p); }

}  // namespace

// ---------------------------------------------------------------- the rules alone

TEST_CASE("cache domains: a session under session sharing, one for all under global", "[sharing]") {
  CHECK(ai::domain_for(ai::PrefixShare::Session, 1) == 1);
  CHECK(ai::domain_for(ai::PrefixShare::Session, 42) == 42);
  CHECK(ai::domain_for(ai::PrefixShare::Session, 42) != ai::domain_for(ai::PrefixShare::Session, 43));
  CHECK(ai::domain_for(ai::PrefixShare::Global, 1) == ai::domain_for(ai::PrefixShare::Global, 43));
}

TEST_CASE("first block tags: equal exactly for the same domain and activation kind", "[sharing]") {
  // Every (domain, kind) pair of sessions 0..999 gets its own tag: a block
  // cached by one session is never found from another, and int8 and float
  // K/V rows never mix.
  std::set<uint32_t> tags;
  for (uint32_t domain = 0; domain < 1000; domain++)
    for (bool int8 : {false, true}) CHECK(tags.insert(ai::first_block_tag(domain, int8)).second);
  CHECK(ai::first_block_tag(7, true) == ai::first_block_tag(7, true));
  // Session sharing: processes of one session share, of two do not.
  uint32_t a = ai::domain_for(ai::PrefixShare::Session, 10), b = ai::domain_for(ai::PrefixShare::Session, 11);
  CHECK(ai::first_block_tag(a, false) == ai::first_block_tag(ai::domain_for(ai::PrefixShare::Session, 10), false));
  CHECK(ai::first_block_tag(a, false) != ai::first_block_tag(b, false));
  // Global sharing: the two sessions share.
  CHECK(ai::first_block_tag(ai::domain_for(ai::PrefixShare::Global, 10), false) ==
        ai::first_block_tag(ai::domain_for(ai::PrefixShare::Global, 11), false));
}

TEST_CASE("priority preemption: only a gap of at least ai.preempt_gap preempts", "[sharing]") {
  using ai::preempts_for_priority;
  // The default gap: 0 preempts 5..15, not 4; 10 preempts 15 only.
  CHECK(preempts_for_priority(0, 10, ai::kDefaultPreemptGap));
  CHECK(preempts_for_priority(0, 5, ai::kDefaultPreemptGap));
  CHECK_FALSE(preempts_for_priority(0, 4, ai::kDefaultPreemptGap));
  CHECK(preempts_for_priority(10, 15, ai::kDefaultPreemptGap));
  CHECK_FALSE(preempts_for_priority(11, 15, ai::kDefaultPreemptGap));
  // Never for an equal or more urgent victim, whatever the gap.
  for (uint32_t gap = 1; gap <= ai::kNoPriorityPreemption; gap++)
    for (uint32_t p = 0; p <= KAI_AI_MAX_PRIORITY; p++)
      for (uint32_t v = 0; v <= p; v++) CHECK_FALSE(preempts_for_priority(p, v, gap));
  // A gap above the priority range turns it off: not even 0 against 15.
  CHECK_FALSE(preempts_for_priority(0, KAI_AI_MAX_PRIORITY, ai::kNoPriorityPreemption));
  // Gap 1: any strictly more urgent request preempts.
  CHECK(preempts_for_priority(3, 4, 1));
}

// ---------------------------------------------------------------- in the scheduler

TEST_CASE("fair policy in the scheduler: two backlogged processes stay within 2U at every iteration",
          "[ai][scheduler][sharing][fair]") {
  // Process 1: short prompts, short answers (a chat); process 2: long
  // prompts and long answers. Under first come, first served each gets
  // about as many admissions as the other, so the heavy one gets several
  // times the service; under the fair policy the light one gets more
  // admissions until the services are level.
  std::vector<Shape> shapes = {{2, 6, 1, 3}, {24, 40, 8, 20}};
  for (uint32_t max_batch : {1u, 2u, 4u}) {
    for (uint32_t budget : {max_batch, 16u, 64u}) {
      INFO("max_batch " << max_batch << " budget " << budget);
      BacklogRun fair = run_backlogged(ai::Policy::Fair, shapes, max_batch, budget, 2500, 7, true);
      BacklogRun fcfs = run_backlogged(ai::Policy::Fcfs, shapes, max_batch, budget, 2500, 7, false);
      printf("fair bound, 2 processes, max_batch %u budget %2u: worst difference %s %lld, %s %lld; 2U = %llu\n",
             max_batch, budget, name(ai::Policy::Fair), (long long)fair.worst, name(ai::Policy::Fcfs),
             (long long)fcfs.worst, (unsigned long long)fair.two_u);
      CHECK(fair.worst <= int64_t(fair.two_u));
      // The same workload without the counters: the bound does not hold,
      // so the check above could fail.
      CHECK(fcfs.worst > int64_t(fcfs.two_u));
    }
  }
}

TEST_CASE("fair policy: every position computed for a client is charged, rejected drafts included",
          "[ai][scheduler][sharing][fair][drafts]") {
  std::vector<Shape> shapes = {{2, 6, 4, 12}, {8, 16, 4, 12}, {1, 3, 1, 20}};
  uint64_t rejected = 0;
  for (uint32_t seed = 1; seed <= 3; seed++) {
    INFO("seed " << seed);
    run_backlogged(ai::Policy::Fair, shapes, 3, 16, 600, seed, false, ai::kMaxDrafts);
    ai::FairClient all[ai::kMaxFairClients];
    int n = ai::fair_counters.snapshot(all, ai::kMaxFairClients);
    for (int i = 0; i < n; i++) rejected += all[i].rejected_drafts;
  }
  REQUIRE(rejected > 0);   // the charge above was exercised
}

TEST_CASE("fair policy in the scheduler: four backlogged processes of random shapes, every pair within 2U",
          "[ai][scheduler][sharing][fair]") {
  std::mt19937 seeds(22);
  int fcfs_over = 0;
  const int kTrials = 8;
  for (int trial = 0; trial < kTrials; trial++) {
    std::vector<Shape> shapes;
    for (int k = 0; k < 4; k++) {
      uint32_t p_hi = 1 + seeds() % 40, o_hi = 1 + seeds() % 20;
      shapes.push_back({uint32_t(1 + seeds() % p_hi), p_hi, uint32_t(1 + seeds() % o_hi), o_hi});
    }
    uint32_t max_batch = 1 + seeds() % 4;
    uint32_t budget = max_batch + seeds() % 17;
    INFO("trial " << trial << " max_batch " << max_batch << " budget " << budget);
    BacklogRun fair = run_backlogged(ai::Policy::Fair, shapes, max_batch, budget, 1500, trial, true);
    BacklogRun fcfs = run_backlogged(ai::Policy::Fcfs, shapes, max_batch, budget, 1500, trial, false);
    printf("fair bound, 4 processes, trial %d, max_batch %u budget %2u: worst difference fair %lld, fcfs %lld; "
           "2U = %llu\n",
           trial, max_batch, budget, (long long)fair.worst, (long long)fcfs.worst, (unsigned long long)fair.two_u);
    CHECK(fair.worst <= int64_t(fair.two_u));
    fcfs_over += fcfs.worst > int64_t(fcfs.two_u);
  }
  // Random shapes may be alike, when first come, first served is fair too;
  // most are not.
  CHECK(fcfs_over >= kTrials / 2);
}

TEST_CASE("priority preemption in the scheduler: the least urgent, latest admitted request gives up its slot",
          "[ai][scheduler][sharing][preempt]") {
  SimOptions o;
  o.policy = ai::Policy::Priority;
  o.preempt_gap = 5;
  o.max_batch = 4;
  o.budget = 16;
  o.seq_len = 64;
  o.block_size = 4;
  o.kv_blocks = 64;   // enough for everyone: a preemption here is for priority only
  Sim sim(o);
  // Submitted in this order; admitted most urgent first: a (10), d (11),
  // b (12), c (12): c is the least urgent and, among the two 12s, the
  // latest admitted.
  const uint32_t prio[4] = {10, 12, 12, 11};
  int64_t id[4];
  for (int i = 0; i < 4; i++) {
    id[i] = sim.submit(Submit{1, 0, tokens(6, uint32_t(i + 1)), 24, prio[i], 0})->id;
    sim.advance(1000);
  }
  for (int i = 0; i < 4; i++) REQUIRE(sim.iterate(0));   // all four running, generating
  const int64_t a = id[0], b = id[1], c = id[2], d = id[3];
  for (int64_t x : {a, b, c, d}) REQUIRE(by_id(x)->state == ai::RequestState::Running);
  REQUIRE(by_id(b)->admitted_seq < by_id(c)->admitted_seq);
  ai::Request* victim = by_id(c);
  REQUIRE(victim->n_generated > 0);
  std::vector<uint32_t> before(victim->output, victim->output + victim->n_generated);

  // Priority 8: 12 - 8 = 4 levels, less than the gap: it waits.
  int64_t near = sim.submit(Submit{2, 0, tokens(5, 20), 3, 8, 0})->id;
  REQUIRE(sim.iterate(0));
  REQUIRE(by_id(near)->state == ai::RequestState::Queued);
  REQUIRE(ai::counters.priority_preemptions == 0);

  // Priority 7: 5 levels, the gap: it takes c's slot at this iteration.
  int64_t urgent = sim.submit(Submit{3, 0, tokens(5, 30), 3, 7, 0})->id;
  REQUIRE(sim.iterate(0));
  REQUIRE(by_id(urgent)->state == ai::RequestState::Running);
  REQUIRE(victim->state == ai::RequestState::Queued);
  REQUIRE(victim->priority_preemptions == 1);
  REQUIRE(ai::counters.priority_preemptions == 1);
  for (int64_t x : {a, b, d}) {
    REQUIRE(by_id(x)->state == ai::RequestState::Running);
    REQUIRE(by_id(x)->preemptions == 0);
  }
  // b (12) is now the least urgent; 8 is still not 5 levels better.
  REQUIRE(by_id(near)->state == ai::RequestState::Queued);
  // The victim keeps the tokens it had; once readmitted and recomputed it
  // ends with the tokens it would have had alone.
  REQUIRE(std::vector<uint32_t>(victim->output, victim->output + before.size()) == before);
  REQUIRE(sim.drain());
  REQUIRE(victim->state == ai::RequestState::Done);
  std::vector<uint32_t> prompt(victim->prompt, victim->prompt + victim->prompt_len);
  REQUIRE(std::vector<uint32_t>(victim->output, victim->output + victim->n_generated) ==
          sim.solo_output(prompt, victim->n_predict));
  REQUIRE(ai::counters.priority_preemptions == 1);
  REQUIRE(sim.collect_finished() == 6);   // every result checked against its request alone
}

TEST_CASE("priority preemption in the scheduler: off when ai.preempt_gap is above the priority range",
          "[ai][scheduler][sharing][preempt]") {
  SimOptions o;
  o.policy = ai::Policy::Priority;
  o.preempt_gap = ai::kNoPriorityPreemption;
  o.max_batch = 2;
  o.budget = 8;
  o.kv_blocks = 64;
  Sim sim(o);
  int64_t low1 = sim.submit(Submit{1, 0, tokens(4, 1), 12, KAI_AI_MAX_PRIORITY, 0})->id;
  int64_t low2 = sim.submit(Submit{1, 0, tokens(4, 2), 12, KAI_AI_MAX_PRIORITY, 0})->id;
  REQUIRE(sim.iterate(0));
  int64_t urgent = sim.submit(Submit{2, 0, tokens(4, 3), 2, 0, 0})->id;
  for (int i = 0; i < 5; i++) REQUIRE(sim.iterate(0));
  REQUIRE(by_id(urgent)->state == ai::RequestState::Queued);   // waits for a slot to free
  REQUIRE(by_id(low1)->preemptions == 0);
  REQUIRE(by_id(low2)->preemptions == 0);
  REQUIRE(sim.drain());
  REQUIRE(ai::counters.priority_preemptions == 0);
  REQUIRE(sim.collect_finished() == 3);
}

TEST_CASE("cache domains in the scheduler: a prefix is reused within its session, or by all when global",
          "[ai][scheduler][sharing][kv]") {
  for (ai::PrefixShare share : {ai::PrefixShare::Session, ai::PrefixShare::Global}) {
    INFO("ai.prefix_share=" << ai::prefix_share_name(share));
    SimOptions o;
    o.prefix_share = share;
    o.block_size = 4;
    o.max_batch = 2;
    o.budget = 16;
    o.kv_blocks = 32;
    Sim sim(o);
    // 13 tokens: three full blocks can be cached (the last token is always
    // computed, it gives the first output).
    const std::vector<uint32_t> prompt = tokens(13, 9);
    auto cached_at_admission = [&](int pid, int session) {
      Submit s;
      s.pid = pid;
      s.session = session;
      s.prompt = prompt;
      s.n_predict = 2;
      int64_t id = sim.submit(s)->id;
      REQUIRE(sim.iterate(0));
      uint32_t cached = by_id(id)->cached_tokens;
      REQUIRE(sim.drain());
      REQUIRE(sim.collect_finished() == 1);   // same tokens as alone, cached or not
      return cached;
    };
    CHECK(cached_at_admission(1, 1) == 0);    // nothing cached yet
    if (share == ai::PrefixShare::Session) {
      CHECK(cached_at_admission(2, 2) == 0);  // another session: no hit
      CHECK(cached_at_admission(3, 3) == 0);  // nor a third, though two sessions have it cached
    } else {
      CHECK(cached_at_admission(2, 2) == 12);
    }
    CHECK(cached_at_admission(4, 1) == 12);   // the first one's session: its three blocks
  }
}
