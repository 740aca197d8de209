// The AI service's scheduler, policies, request table and KV block manager
// (kernel/ai, built for the host) under the simulation of ai_sim.h: seeded
// random runs that check every invariant after every step, and one case
// for each rule (policies, aging, preemption victim with one and two
// workers, timestamps through preemption, ai_info with orphans, eviction
// order).
#include <catch2/catch.hpp>

#include <stdio.h>

#include <algorithm>
#include <random>

#include "ai_sim.h"
#include "../../kernel/ai/kv_checkpoint.h"

using aisim::Event;
using aisim::Sim;
using aisim::SimOptions;
using aisim::Submit;

namespace {

std::vector<uint32_t> tokens(uint32_t n, uint32_t seed) {
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < n; i++) v.push_back((seed * 31 + i * 7) % 90 + 1);
  return v;
}

// Ids in the order the simulation admitted them.
std::vector<int64_t> admissions(const Sim& sim) {
  std::vector<int64_t> ids;
  for (const Event& e : sim.events())
    if (e.kind == Event::Admit) ids.push_back(e.id);
  return ids;
}

std::vector<int64_t> preempted(const Sim& sim) {
  std::vector<int64_t> ids;
  for (const Event& e : sim.events())
    if (e.kind == Event::Preempt) ids.push_back(e.id);
  return ids;
}

ai::Request* by_id(int64_t id) {
  for (auto& r : ai::slots)
    if (r.state != ai::RequestState::Free && r.id == id) return &r;
  return nullptr;
}

}  // namespace

namespace {

struct RandomTotals {
  uint64_t iterations = 0, results = 0, preemptions = 0, marks = 0;
  uint64_t drafted = 0, accepted = 0, rolled_back = 0;
};

// Proposals in a random run: none; the simulation's random ones (ai.drafts);
// or each request its own (kai_ai_submit.spec) from the kernel's proposers.
enum class Speculation { Off, Random, PerRequest };

// A random speculation request for a prompt whose answer (the request run
// alone) is `answer`: the boot default, none, ngram, echo, or predicted from
// the answer itself, the answer with errors, or the prompt.
kai_ai_speculation random_spec(std::mt19937_64& rng, const std::vector<uint32_t>& prompt,
                               const std::vector<uint32_t>& answer, uint32_t vocab,
                               std::vector<uint32_t>& prediction) {
  auto pick = [&](uint32_t lo, uint32_t hi) { return lo + uint32_t(rng() % (hi - lo + 1)); };
  kai_ai_speculation sp{};
  prediction.clear();
  switch (pick(0, 4)) {
    case 0: return sp;   // the boot options (ai.drafts)
    case 1: sp.proposer = KAI_AI_PROPOSER_NONE; return sp;
    case 2: sp.proposer = KAI_AI_PROPOSER_NGRAM; sp.ngram_max = pick(0, KAI_AI_MAX_NGRAM); break;
    case 3: sp.proposer = KAI_AI_PROPOSER_ECHO; break;
    default: {
      sp.proposer = KAI_AI_PROPOSER_PREDICTED;
      uint32_t kind = pick(0, 2);
      prediction = kind == 2 ? prompt : answer;
      if (kind == 1) llm::corrupt_prediction(answer.data(), uint32_t(answer.size()), pick(0, 1000), rng(), vocab,
                                             prediction.data());
      sp.prediction_len = uint32_t(prediction.size());
      break;
    }
  }
  sp.max_drafts = pick(1, KAI_AI_MAX_DRAFTS);
  if (pick(0, 1) == 1) sp.flags = KAI_AI_SPEC_ADAPTIVE;   // the drafts move in 1..max_drafts
  return sp;
}

// One seeded run of random arrivals, cancels, exits, memory shortages and
// interleaved workers; with proposals (above) on attention-only or recurrent
// models. The Sim checks every invariant after every step and every result
// against the request run alone.
void random_run(uint32_t seed, Speculation speculate, RandomTotals& t) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint32_t lo, uint32_t hi) { return lo + uint32_t(rng() % (hi - lo + 1)); };
  SimOptions o;
  o.workers = pick(1, 3);
  o.n_models = pick(1, 2);
  o.block_size = pick(2, 6);
  o.seq_len = 48;
  o.kv_blocks = pick(1, 40);   // below seq_len / block_size: the smallest pool the kernel makes
  o.max_batch = pick(1, 6);
  o.budget = o.max_batch + pick(0, 20);
  o.max_per_process = pick(2, 10);
  o.policy = static_cast<ai::Policy>(pick(0, 3));   // fcfs, sjf, priority, fair
  o.preempt_gap = pick(1, KAI_AI_MAX_PRIORITY + 1);   // the last: no priority preemption
  o.aging_ns = uint64_t(pick(1, 50)) * 1000000;
  o.prefix_cache = pick(0, 4) != 0;
  if (speculate != Speculation::Off) {
    o.drafts = pick(speculate == Speculation::PerRequest ? 0 : 1, ai::kMaxDrafts);
    o.recurrent = pick(0, 1) == 1;
    o.real_proposers = speculate == Speculation::PerRequest;
  }
  INFO("seed " << seed << " workers " << o.workers << " models " << o.n_models << " B " << o.block_size
               << " blocks " << o.kv_blocks << " max_batch " << o.max_batch << " budget " << o.budget
               << " drafts " << o.drafts << " recurrent " << o.recurrent);
  Sim sim(o);
  // A few shared prompt prefixes, so the prefix cache has work to do.
  std::vector<std::vector<uint32_t>> prefixes;
  for (uint32_t i = 0; i < 3; i++) prefixes.push_back(tokens(pick(o.block_size, 3 * o.block_size), seed * 10 + i));
  std::vector<int64_t> ids;
  for (uint32_t step = 0; step < 1500; step++) {
    uint32_t action = pick(0, 99);
    if (action < 25) {
      Submit s;
      s.pid = int(pick(1, 5));
      s.session = 1 + s.pid % 2;   // two sessions: two prefix-cache domains
      s.model = int(pick(0, o.n_models - 1));
      if (pick(0, 2) != 0) s.prompt = prefixes[pick(0, 2)];
      auto tail = tokens(pick(1, 12), uint32_t(rng()));
      s.prompt.insert(s.prompt.end(), tail.begin(), tail.end());
      s.n_predict = pick(1, 10);
      s.priority = pick(0, KAI_AI_MAX_PRIORITY);
      s.flags = pick(0, 3) == 0 ? KAI_AI_INT8 : 0;
      if (speculate == Speculation::PerRequest)
        s.spec = random_spec(rng, s.prompt, sim.solo_output(s.prompt, s.n_predict), o.vocab, s.prediction);
      if (ai::Request* r = sim.submit(s)) ids.push_back(r->id);
    } else if (action < 29) {
      if (!ids.empty()) sim.cancel(ids[pick(0, uint32_t(ids.size()) - 1)]);
    } else if (action < 31) {
      sim.exit_process(int(pick(1, 5)));
    } else if (action < 38) {
      sim.collect_finished();
    } else {
      uint32_t w = pick(0, o.workers - 1);
      if (sim.in_pass(w)) sim.run_and_commit(w, pick(0, 60) == 0);   // now and then: no memory for a session
      else sim.schedule(w);
    }
    sim.advance(pick(0, 3000000));
  }
  REQUIRE(sim.drain());
  sim.collect_finished();
  sim.check();
  for (uint32_t m = 0; m < o.n_models; m++) {
    ai::KvPoolView v = ai::kv_view(int(m));
    // Every block came back, but those a recurrent-state checkpoint keeps
    // (kv_checkpoint.h: evictable now, each owned once).
    std::vector<uint32_t> kept(v.n_blocks), owners(v.n_blocks, 0);
    uint32_t n_kept = ai::kv_ckpt_owned_blocks(int(m), kept.data(), v.n_blocks);
    for (uint32_t i = 0; i < n_kept; i++) owners[kept[i]]++;
    for (uint32_t b = 0; b < v.n_blocks; b++) REQUIRE(v.refs[b] == owners[b]);
    REQUIRE(v.n_free + v.n_lru + n_kept == v.n_blocks);
  }
  t.iterations += sim.iterations_checked();
  t.results += sim.results_checked();
  for (const Event& e : sim.events()) {
    t.preemptions += e.kind == Event::Preempt;
    t.marks += e.kind == Event::MarkPreempt;
  }
  t.drafted += ai::counters.drafted;
  t.accepted += ai::counters.accepted;
  t.rolled_back += ai::counters.rolled_back;
}

// Seeds first .. first + count - 1, their totals printed and returned.
RandomTotals run_seeds(uint32_t first, uint32_t count, Speculation speculate, const char* what) {
  RandomTotals t;
  for (uint32_t seed = first; seed < first + count; seed++) random_run(seed, speculate, t);
  printf("scheduler simulation %s: %u seeds, %llu iterations, %llu results, %llu drafted, %llu accepted, "
         "%llu positions rolled back, %llu preemptions\n",
         what, count, (unsigned long long)t.iterations, (unsigned long long)t.results, (unsigned long long)t.drafted,
         (unsigned long long)t.accepted, (unsigned long long)t.rolled_back, (unsigned long long)t.preemptions);
  return t;
}

// Speculation really happened: many iterations, some drafts kept, some rolled back.
void require_some_kept_some_rolled_back(const RandomTotals& t, uint64_t min_iterations) {
  REQUIRE(t.iterations > min_iterations);
  REQUIRE(t.accepted > 0);
  REQUIRE(t.accepted < t.drafted);
  REQUIRE(t.rolled_back > 0);
}

}  // namespace

TEST_CASE("scheduler: seeded random arrivals, cancels, exits and memory shortages", "[ai][scheduler]") {
  RandomTotals t;
  const uint32_t kSeeds = 120;
  for (uint32_t seed = 1; seed <= kSeeds; seed++) random_run(seed, Speculation::Off, t);
  printf("scheduler simulation: %u seeds, %llu iterations checked, %llu results checked, %llu preemptions "
         "(%llu marked across workers)\n",
         kSeeds, (unsigned long long)t.iterations, (unsigned long long)t.results, (unsigned long long)t.preemptions,
         (unsigned long long)t.marks);
  REQUIRE(t.iterations > 10000);
  REQUIRE(t.preemptions > 0);
  REQUIRE(t.marks > 0);
  REQUIRE(t.drafted == 0);
}

// The iteration seam: N scheduled, k accepted. Random proposals, of which a
// random leading run is right: every result still equals the request alone
// (the Sim checks it at collect), no position is computed twice unless it
// was rolled back, no block leaks, budget and max_batch hold.
TEST_CASE("scheduler: random proposals, k of n accepted, the rest rolled back", "[ai][scheduler][drafts]") {
  RandomTotals t = run_seeds(1001, 80, Speculation::Random, "with proposals");
  require_some_kept_some_rolled_back(t, 5000);
  REQUIRE(t.preemptions > 0);
}

TEST_CASE("scheduler: fcfs admits in arrival order", "[ai][scheduler][policy]") {
  SimOptions o;
  o.max_batch = 1;
  o.budget = 4;
  Sim sim(o);
  std::vector<int64_t> ids;
  for (uint32_t i = 0; i < 4; i++) {
    ids.push_back(sim.submit(Submit{1, 0, tokens(10 - 2 * i, i), 2, 15 - i, 0})->id);
    sim.advance(1000);
  }
  REQUIRE(sim.drain());
  REQUIRE(admissions(sim) == ids);
  REQUIRE(sim.collect_finished() == 4);
}

TEST_CASE("scheduler: sjf admits the least remaining work first, earlier arrival among equals",
          "[ai][scheduler][policy]") {
  SimOptions o;
  o.max_batch = 1;
  o.budget = 4;
  o.policy = ai::Policy::Sjf;
  Sim sim(o);
  // Remaining work = prompt + tokens to generate.
  int64_t a = sim.submit(Submit{1, 0, tokens(10, 1), 5, 0, 0})->id;   // 15
  int64_t b = sim.submit(Submit{1, 0, tokens(3, 2), 2, 0, 0})->id;    // 5
  int64_t c = sim.submit(Submit{1, 0, tokens(8, 3), 1, 0, 0})->id;    // 9
  int64_t d = sim.submit(Submit{1, 0, tokens(4, 4), 1, 0, 0})->id;    // 5, after b
  REQUIRE(sim.drain());
  REQUIRE(admissions(sim) == std::vector<int64_t>{b, d, c, a});
  REQUIRE(sim.collect_finished() == 4);
}

TEST_CASE("scheduler: priority admits the lowest number first, arrival among equals", "[ai][scheduler][policy]") {
  SimOptions o;
  o.max_batch = 1;
  o.budget = 4;
  o.policy = ai::Policy::Priority;
  Sim sim(o);
  int64_t a = sim.submit(Submit{1, 0, tokens(4, 1), 1, 7, 0})->id;
  int64_t b = sim.submit(Submit{1, 0, tokens(4, 2), 1, 3, 0})->id;
  int64_t c = sim.submit(Submit{1, 0, tokens(4, 3), 1, 3, 0})->id;
  int64_t d = sim.submit(Submit{1, 0, tokens(4, 4), 1, 0, 0})->id;
  REQUIRE(sim.drain());
  REQUIRE(admissions(sim) == std::vector<int64_t>{d, b, c, a});
  REQUIRE(sim.collect_finished() == 4);
}

TEST_CASE("scheduler: aging admits an overdue request before the policy's choice", "[ai][scheduler][policy]") {
  SimOptions o;
  o.max_batch = 1;
  o.budget = 4;
  o.policy = ai::Policy::Sjf;
  o.aging_ns = 50000;
  Sim sim(o);
  int64_t running = sim.submit(Submit{1, 0, tokens(2, 9), 3, 0, 0})->id;
  REQUIRE(sim.iterate(0));   // admitted: the batch is full now
  int64_t long_one = sim.submit(Submit{1, 0, tokens(20, 1), 5, 0, 0})->id;
  sim.advance(60000);        // long_one is overdue from now on
  int64_t short_one = sim.submit(Submit{1, 0, tokens(2, 2), 1, 0, 0})->id;
  REQUIRE(sim.drain());
  REQUIRE(admissions(sim) == std::vector<int64_t>{running, long_one, short_one});
  REQUIRE(sim.collect_finished() == 3);
}

TEST_CASE("scheduler: memory pressure preempts the youngest running request, which is recomputed exactly",
          "[ai][scheduler][preempt]") {
  SimOptions o;
  o.block_size = 4;
  o.seq_len = 32;
  o.kv_blocks = 8;     // 32 positions: two requests of 8 + 12 outgrow it
  o.max_batch = 4;
  o.budget = 16;
  o.prefix_cache = false;
  Sim sim(o);
  int64_t old_one = sim.submit(Submit{1, 0, tokens(8, 1), 12, 0, 0})->id;
  sim.advance(1000);
  int64_t middle = sim.submit(Submit{2, 0, tokens(8, 2), 12, 0, 0})->id;
  sim.advance(1000);
  int64_t young = sim.submit(Submit{3, 0, tokens(8, 3), 12, 0, 0})->id;
  REQUIRE(sim.drain());
  auto victims = preempted(sim);
  REQUIRE(!victims.empty());
  // Admitted in order old, middle, young: the first victim is the youngest,
  // and the oldest is never preempted while a younger one runs.
  REQUIRE(victims.front() == young);
  REQUIRE(std::find(victims.begin(), victims.end(), old_one) == victims.end());
  (void)middle;
  REQUIRE(sim.collect_finished() == 3);   // tokens checked against each request alone
}

TEST_CASE("scheduler: with two workers the victim is the model's youngest, on whichever worker",
          "[ai][scheduler][preempt]") {
  SimOptions o;
  o.workers = 2;
  o.block_size = 4;
  o.seq_len = 32;
  o.kv_blocks = 8;
  o.max_batch = 2;
  o.budget = 8;
  o.prefix_cache = false;
  Sim sim(o);
  // Worker 0 admits the older request (and runs it a few positions ahead),
  // worker 1 the younger one.
  int64_t older = sim.submit(Submit{1, 0, tokens(8, 1), 20, 0, 0})->id;
  for (int i = 0; i < 3; i++) REQUIRE(sim.iterate(0));
  sim.advance(1000);
  int64_t younger = sim.submit(Submit{2, 0, tokens(8, 2), 20, 0, 0})->id;
  REQUIRE(sim.schedule(1));
  sim.run_and_commit(1);
  REQUIRE(by_id(older)->worker == 0);
  REQUIRE(by_id(younger)->worker == 1);
  // Run worker 0 until its request needs a block the pool does not have:
  // the younger request on worker 1 is marked, and worker 1 preempts it.
  bool marked = false;
  for (int i = 0; i < 200 && !marked; i++) {
    // Worker 1 is in its pass while worker 0 schedules (as on two harts).
    bool w1 = sim.schedule(1);
    if (sim.schedule(0)) sim.run_and_commit(0);
    if (w1) sim.run_and_commit(1);
    marked = by_id(younger)->preempt_requested;
    if (marked) REQUIRE(by_id(younger)->state == ai::RequestState::Running);   // not taken from under its pass
    sim.advance(1000);
  }
  REQUIRE(marked);
  REQUIRE(by_id(older)->waiting_for_blocks);
  sim.schedule(1);   // worker 1's next step: it preempts its request
  REQUIRE(by_id(younger)->state == ai::RequestState::Queued);
  REQUIRE(by_id(older)->preemptions == 0);
  REQUIRE(sim.drain());
  REQUIRE(by_id(younger)->preemptions >= 1);
  REQUIRE(by_id(older)->preemptions == 0);
  REQUIRE(sim.collect_finished() == 2);
}

TEST_CASE("scheduler: a young request on the worker that needs blocks preempts itself, not an older one",
          "[ai][scheduler][preempt]") {
  SimOptions o;
  o.workers = 2;
  o.block_size = 4;
  o.seq_len = 32;
  o.kv_blocks = 8;
  o.max_batch = 2;
  o.budget = 8;
  o.prefix_cache = false;
  Sim sim(o);
  int64_t older = sim.submit(Submit{1, 0, tokens(8, 1), 20, 0, 0})->id;
  REQUIRE(sim.iterate(0));
  sim.advance(1000);
  int64_t younger = sim.submit(Submit{2, 0, tokens(8, 2), 20, 0, 0})->id;
  REQUIRE(sim.iterate(1));
  // Only worker 1 runs: its request grows until the pool is out of blocks.
  for (int i = 0; i < 200 && by_id(younger)->preemptions == 0; i++) {
    sim.iterate(1);
    sim.advance(1000);
  }
  REQUIRE(by_id(younger)->preemptions >= 1);
  REQUIRE(by_id(older)->preemptions == 0);
  REQUIRE(by_id(older)->state == ai::RequestState::Running);
  REQUIRE(sim.drain());
  REQUIRE(sim.collect_finished() == 2);
}

TEST_CASE("scheduler: timestamps keep their meaning through preemption", "[ai][scheduler][preempt]") {
  SimOptions o;
  o.block_size = 4;
  o.seq_len = 32;
  o.kv_blocks = 8;
  o.max_batch = 8;
  o.budget = 16;
  o.prefix_cache = false;
  Sim sim(o);
  std::vector<int64_t> ids;
  for (uint32_t i = 0; i < 6; i++) {
    ids.push_back(sim.submit(Submit{int(i + 1), 0, tokens(6, i), 14, 0, 0})->id);
    sim.advance(100);
  }
  for (int round = 0; round < 10000; round++) {
    bool busy = sim.iterate(0);
    sim.advance(1000000);   // each iteration takes 1 ms of simulated time
    SpinlockGuard guard(ai::lock);
    if (!busy && ai::queued_count() == 0 && ai::running_count() == 0) break;
  }
  uint32_t preempted_ones = 0;
  for (int64_t id : ids) {
    const ai::Request* r = by_id(id);
    REQUIRE(r != nullptr);
    REQUIRE(r->state == ai::RequestState::Done);
    REQUIRE(r->t_submit <= r->t_start);
    REQUIRE(r->t_start <= r->t_first);
    REQUIRE(r->t_first <= r->t_finish);
    if (r->preemptions > 0) {
      preempted_ones++;
      REQUIRE(r->requeued_ns >= 1000000);   // it waited at least one iteration in the queue
    } else {
      REQUIRE(r->requeued_ns == 0);
    }
  }
  REQUIRE(preempted_ones > 0);
  REQUIRE(sim.collect_finished() == 6);   // checks queue wait + service == end-to-end too
}

TEST_CASE("scheduler: an exited owner's running requests count as in use until their worker frees them",
          "[ai][scheduler]") {
  SimOptions o;
  o.max_batch = 8;
  o.budget = 16;
  o.max_per_process = 32;
  o.kv_blocks = 64;
  Sim sim(o);
  for (int i = 0; i < ai::kQueueCapacity; i++) REQUIRE(sim.submit(Submit{1, 0, tokens(3, uint32_t(i)), 20, 0, 0}));
  REQUIRE(sim.schedule(0));   // 8 running, 24 queued, and the worker is in its pass
  sim.exit_process(1);
  {
    SpinlockGuard guard(ai::lock);
    // The 8 orphans still occupy their slots: the table is full, as EAGAIN says.
    REQUIRE(ai::running_count() == 8);
    REQUIRE(ai::queued_count() == 0);
    REQUIRE(ai::slots_in_use() == 8);
    REQUIRE(ai::queued_count() + ai::running_count() <= ai::slots_in_use());
    REQUIRE(ai::slots_owned_by(1) == 0);   // gone for the quota and for every id lookup
  }
  sim.run_and_commit(0);
  sim.schedule(0);   // the next check frees them
  SpinlockGuard guard(ai::lock);
  REQUIRE(ai::running_count() == 0);
  REQUIRE(ai::slots_in_use() == 0);
}

TEST_CASE("scheduler: a session that cannot be begun fails only its own request", "[ai][scheduler]") {
  SimOptions o;
  o.max_batch = 2;
  o.budget = 8;
  Sim sim(o);
  int64_t a = sim.submit(Submit{1, 0, tokens(5, 1), 4, 0, 0})->id;
  REQUIRE(sim.iterate(0));
  int64_t b = sim.submit(Submit{1, 0, tokens(5, 2), 4, 0, 0})->id;
  REQUIRE(sim.schedule(0));
  sim.run_and_commit(0, true);   // b's session: no memory
  REQUIRE(by_id(b)->state == ai::RequestState::Failed);
  REQUIRE(by_id(b)->error == KAI_ENOMEM);
  REQUIRE(sim.drain());
  REQUIRE(by_id(a)->state == ai::RequestState::Done);
  REQUIRE(sim.collect_finished() == 2);
}

TEST_CASE("scheduler: a finished request's prefix is evicted leaf first and stays matchable", "[ai][kv]") {
  SimOptions o;
  o.block_size = 4;
  o.seq_len = 16;
  o.kv_blocks = 4;
  o.max_batch = 1;
  o.budget = 16;
  Sim sim(o);
  // 12 prompt tokens: three full blocks, all cached when it is done.
  auto prompt = tokens(12, 1);
  sim.submit(Submit{1, 0, prompt, 1, 0, 0});
  REQUIRE(sim.drain());
  REQUIRE(sim.collect_finished() == 1);
  // Its cache domain: the default Submit's session (ai.prefix_share=session).
  ai::PrefixKey key{0, false, ai::prefix_domain(Submit{}.session), prompt.data(), uint32_t(prompt.size())};
  {
    SpinlockGuard guard(ai::lock);
    REQUIRE(ai::kv_cached_prefix_blocks(key) == 3);
  }
  // Another request needs 2 blocks: one free one, then one evicted. The
  // evicted one must be the leaf (block 3 of the prefix), so the first two
  // stay matchable; evicting the root first would strand them.
  sim.submit(Submit{2, 0, tokens(5, 7), 3, 0, 0});
  REQUIRE(sim.iterate(0));
  {
    SpinlockGuard guard(ai::lock);
    REQUIRE(ai::kv_cached_prefix_blocks(key) == 2);
  }
  REQUIRE(sim.drain());
  REQUIRE(sim.collect_finished() == 1);
  // And a request with the same prompt reuses those two blocks.
  int64_t again = sim.submit(Submit{3, 0, prompt, 2, 0, 0})->id;
  REQUIRE(sim.iterate(0));
  REQUIRE(by_id(again)->cached_tokens == 8);
  REQUIRE(sim.drain());
  REQUIRE(sim.collect_finished() == 1);
}

// Speculation per request (kai_ai_submit.spec) with the kernel's proposers:
// each request its own proposer and drafts (or none, or the boot default),
// predictions exact, with errors, or unrelated. Every result equals the
// request alone; NONE drafts nothing; an exact prediction keeps every
// draft (the Sim checks both at collect).
TEST_CASE("scheduler: per-request proposers, exact and wrong predictions", "[ai][scheduler][drafts]") {
  RandomTotals t = run_seeds(2001, 60, Speculation::PerRequest, "with per-request proposers");
  require_some_kept_some_rolled_back(t, 3000);
}
