// Adaptive speculation (lib/llm_draft_control.h): the controller asks for the
// number of drafts that the cost model says pays best, drops to none for a
// proposer that keeps missing (probing now and then), and in a simulated
// request with geometric acceptance costs what the targets allow:
// at most 1.1x plain decoding when nothing is kept, within 10% of the best
// fixed k at acceptance 0.8.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include "llm_draft_control.h"

namespace {

double pass_cost(uint32_t positions) { return llm::kPassCostCenti[positions] / 100.0; }

// Expected tokens per unit of cost with k drafts at acceptance p (the model
// the controller uses, in doubles).
double value(double p, uint32_t k) {
  double e = 0, power = 1;
  for (uint32_t i = 0; i <= k; i++, power *= p) e += power;
  return e / pass_cost(k + 1);
}

// One request of n tokens; each draft is kept with probability p until the
// first miss (what verification does). Returns the cost in plain steps per
// token; adaptive = the controller, otherwise a fixed k.
double simulate(double p, uint32_t k_max, bool adaptive, uint32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution keep(p);
  llm::DraftControl c;
  c.start(k_max);
  double cost = 0;
  uint32_t produced = 1;   // the first token comes from the prompt's pass
  while (produced < n) {
    uint32_t left = n - produced - 1;   // a draft needs a token after it
    uint32_t k = adaptive ? c.drafts(k_max) : k_max;
    if (k > left) k = left;
    uint32_t kept = 0;
    while (kept < k && keep(rng)) kept++;
    cost += pass_cost(k + 1);
    produced += kept + 1;
    c.after_pass(k_max, k, kept);
  }
  return cost / (n - 1);
}

double mean_cost(double p, uint32_t k_max, bool adaptive) {
  double sum = 0;
  for (uint32_t seed = 1; seed <= 200; seed++) sum += simulate(p, k_max, adaptive, 64, seed);
  return sum / 200;
}

}  // namespace

TEST_CASE("best_drafts is the argmax of the cost model", "[speculate]") {
  for (uint32_t kept = 0; kept <= 64; kept += 4) {
    for (uint32_t missed = 0; missed <= 64; missed += 4) {
      if (kept + missed == 0) continue;
      llm::DraftControl c;
      c.kept_weight = uint16_t(kept * 16);
      c.missed_weight = uint16_t(missed * 16);
      double p = double(kept) / (kept + missed);
      uint32_t got = c.best_drafts(8);
      for (uint32_t k = 0; k <= 8; k++) {
        INFO("p=" << p << " got k=" << got << " against k=" << k);
        REQUIRE(value(p, got) >= value(p, k) - 0.01);
      }
    }
  }
  llm::DraftControl sure;
  sure.kept_weight = 1000;
  sure.missed_weight = 0;
  REQUIRE(sure.best_drafts(8) == 8);
  REQUIRE(sure.best_drafts(3) == 2);   // r(4) buys a whole step for one token more: not worth it
  REQUIRE(sure.best_drafts(0) == 0);
}

TEST_CASE("a proposer that keeps missing gets no drafts, and is probed with backoff", "[speculate]") {
  llm::DraftControl c;
  c.start(8);
  REQUIRE(c.drafts(8) == 2);   // the prior (p = 0.75): two drafts for the price of one
  uint32_t passes_with_drafts = 0, first_quiet = 0;
  uint32_t last_probe = 0, last_gap = 0;
  for (uint32_t pass = 1; pass <= 400; pass++) {
    uint32_t d = c.drafts(8);
    if (d > 0) {
      passes_with_drafts++;
      if (first_quiet > 0) {
        if (last_probe > 0) {
          uint32_t gap = pass - last_probe;
          REQUIRE(gap >= last_gap);   // each failed probe waits at least as long as the one before
          last_gap = gap;
        }
        last_probe = pass;
      }
    } else if (first_quiet == 0) {
      first_quiet = pass;
    }
    c.after_pass(8, d, 0);
  }
  REQUIRE(first_quiet > 0);
  REQUIRE(first_quiet <= 4);           // at most three passes to give up
  REQUIRE(passes_with_drafts <= 12);   // then a handful of probes in 400 passes
  REQUIRE(c.probe_gap == llm::DraftControl::kMaxProbeGap);
}

TEST_CASE("a probe that is kept brings the drafts back", "[speculate]") {
  llm::DraftControl c;
  c.start(8);
  uint32_t pass = 0;
  while (c.k_next > 0 || c.drafts(8) == 0) c.after_pass(8, c.drafts(8), 0), pass++;
  REQUIRE(pass < 40);
  // From here the proposer is right every time.
  uint32_t d = c.drafts(8);
  for (uint32_t i = 0; i < 30; i++) {
    c.after_pass(8, d, d);
    d = c.drafts(8);
  }
  REQUIRE(d == 8);
}

TEST_CASE("adaptive drafts cost at most 1.1x plain at p = 0, near the best fixed k at p = 0.8", "[speculate]") {
  double at_zero = mean_cost(0.0, 8, true);
  INFO("adaptive at p=0: " << at_zero);
  REQUIRE(at_zero <= 1.1);
  double best_fixed = 1.0;
  for (uint32_t k = 1; k <= 8; k++) best_fixed = std::min(best_fixed, mean_cost(0.8, k, false));
  double adaptive = mean_cost(0.8, 8, true);
  INFO("p=0.8: adaptive " << adaptive << ", best fixed " << best_fixed);
  REQUIRE(adaptive <= 1.1 * best_fixed);
  // And it never loses much where speculation cannot pay at all.
  REQUIRE(mean_cost(0.3, 8, true) <= 1.15);
}
