// The sampler (lib/llm_sample.h): greedy is the classifier's argmax, each
// filter keeps what it should, draws follow the probabilities, and a seed
// replays the same tokens.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <cmath>
#include <vector>
#include "llm_sample.h"

namespace {

uint32_t draw(std::vector<float> logits, const llm::SamplingParams& p, llm::Rng& rng,
              const std::vector<uint32_t>& recent = {}) {
  std::vector<uint32_t> order(logits.size());
  return llm::sample_token(logits.data(), uint32_t(logits.size()), p, rng, recent.data(),
                           uint32_t(recent.size()), order.data());
}

}  // namespace

TEST_CASE("greedy picks the largest logit, the lowest index on ties", "[sample]") {
  llm::SamplingParams p;   // temperature 0
  llm::Rng rng = llm::rng_from_seed(1);
  CHECK(draw({0.1f, 3.0f, -2.0f, 3.0f}, p, rng) == 1);
  CHECK(draw({-5.0f, -4.0f, -4.5f}, p, rng) == 1);
  CHECK(rng.state == 1);   // greedy uses no randomness
}

TEST_CASE("the same seed gives the same draws, another seed others", "[sample]") {
  llm::SamplingParams p;
  p.temperature = 1.0f;
  std::vector<float> flat(64, 0.0f);
  llm::Rng a = llm::rng_from_seed(42), b = llm::rng_from_seed(42), c = llm::rng_from_seed(43);
  std::vector<uint32_t> da, db, dc;
  for (int i = 0; i < 50; i++) {
    da.push_back(draw(flat, p, a));
    db.push_back(draw(flat, p, b));
    dc.push_back(draw(flat, p, c));
  }
  CHECK(da == db);
  CHECK(da != dc);
}

TEST_CASE("draws follow the softmax probabilities", "[sample]") {
  llm::SamplingParams p;
  p.temperature = 1.0f;
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  llm::Rng rng = llm::rng_from_seed(7);
  int count[3] = {};
  const int n = 20000;
  for (int i = 0; i < n; i++) count[draw(logits, p, rng)]++;
  CHECK(std::fabs(count[0] / double(n) - 0.5) < 0.02);
  CHECK(std::fabs(count[1] / double(n) - 0.3) < 0.02);
  CHECK(std::fabs(count[2] / double(n) - 0.2) < 0.02);
}

TEST_CASE("temperature sharpens and flattens", "[sample]") {
  std::vector<float> logits = {1.0f, 0.0f};
  auto share_of_first = [&](float t) {
    llm::SamplingParams p;
    p.temperature = t;
    llm::Rng rng = llm::rng_from_seed(3);
    int first = 0;
    for (int i = 0; i < 10000; i++) first += draw(logits, p, rng) == 0;
    return first / 10000.0;
  };
  double cold = share_of_first(0.25f), normal = share_of_first(1.0f), hot = share_of_first(4.0f);
  CHECK(cold > normal);
  CHECK(normal > hot);
  CHECK(std::fabs(normal - 1.0 / (1.0 + std::exp(-1.0))) < 0.02);   // 0.731
}

TEST_CASE("top-k, top-p and min-p keep only the best candidates", "[sample]") {
  std::vector<float> logits = {0.0f, 2.0f, 1.0f, 1.9f, -1.0f};   // ranks: 1, 3, 2, 0, 4
  llm::Rng rng = llm::rng_from_seed(11);
  llm::SamplingParams k2;
  k2.temperature = 1.0f;
  k2.top_k = 2;
  llm::SamplingParams p_small;
  p_small.temperature = 1.0f;
  p_small.top_p = 0.01f;   // the best alone already reaches it
  llm::SamplingParams min1;
  min1.temperature = 1.0f;
  min1.min_p = 0.95f;      // exp(-0.1) = 0.905 < 0.95: only the best survives
  bool seen3 = false;
  for (int i = 0; i < 2000; i++) {
    uint32_t t = draw(logits, k2, rng);
    CHECK((t == 1 || t == 3));
    seen3 |= t == 3;
    CHECK(draw(logits, p_small, rng) == 1);
    CHECK(draw(logits, min1, rng) == 1);
  }
  CHECK(seen3);   // top-k 2 still samples, it does not collapse to greedy
  llm::SamplingParams k1;
  k1.temperature = 5.0f;
  k1.top_k = 1;
  CHECK(draw(logits, k1, rng) == 1);
}

// Without top-k the candidates are not sorted (llm_sample.cpp says why):
// top-p must still keep exactly the shortest prefix by falling probability,
// min-p exactly the tokens above its floor, and every kept token must be
// drawn about as often as its share of what is kept.
TEST_CASE("top-p and min-p without top-k keep exactly their sets, in proportion", "[sample]") {
  std::mt19937 gen(5);
  std::vector<float> logits(60);
  for (auto& v : logits) v = float(gen() % 4000) / 1000.0f;   // spread, few near-ties
  std::vector<uint32_t> rank(logits.size());
  for (uint32_t i = 0; i < rank.size(); i++) rank[i] = i;
  std::sort(rank.begin(), rank.end(), [&](uint32_t a, uint32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  std::vector<double> w(logits.size());
  double total = 0;
  for (uint32_t i = 0; i < w.size(); i++) total += w[i] = std::exp(double(logits[i]) - logits[rank[0]]);
  for (float top_p : {0.3f, 0.8f}) {
    // The expected set: the shortest prefix of the ranking whose mass reaches top_p.
    std::vector<bool> keep(logits.size());
    double cum = 0, kept = 0;
    for (uint32_t r : rank) {
      keep[r] = true;
      kept += w[r];
      if ((cum += w[r]) >= top_p * total) break;
    }
    for (uint32_t top_k : {0u, uint32_t(logits.size())}) {   // unsorted, and sorted as far as all of them
      INFO("top_p " << top_p << " top_k " << top_k);
      llm::SamplingParams p;
      p.temperature = 1.0f;
      p.top_p = top_p;
      p.top_k = top_k;
      llm::Rng rng = llm::rng_from_seed(19);
      std::vector<int> count(logits.size());
      const int n = 40000;
      for (int i = 0; i < n; i++) count[draw(logits, p, rng)]++;
      for (uint32_t t = 0; t < logits.size(); t++) {
        INFO("token " << t);
        if (!keep[t]) CHECK(count[t] == 0);
        else CHECK(std::fabs(count[t] / double(n) - w[t] / kept) < 0.015);
      }
    }
  }
  llm::SamplingParams mp;
  mp.temperature = 1.0f;
  mp.min_p = 0.5f;
  llm::Rng rng = llm::rng_from_seed(23);
  for (int i = 0; i < 5000; i++) CHECK(w[draw(logits, mp, rng)] >= 0.5);
}

TEST_CASE("the repetition penalty makes recent tokens less likely", "[sample]") {
  llm::SamplingParams p;   // greedy, so the effect is exact
  p.repeat_penalty = 1.5f;
  llm::Rng rng = llm::rng_from_seed(5);
  CHECK(draw({2.0f, 1.9f}, p, rng, {0}) == 1);       // 2.0 / 1.5 < 1.9
  CHECK(draw({2.0f, 1.9f}, p, rng, {0, 0, 0}) == 1);  // penalised once, not three times
  CHECK(draw({-1.0f, -1.2f}, p, rng, {0}) == 1);     // negative: multiplied, -1.5 < -1.2
  p.repeat_last_n = 1;
  CHECK(draw({2.0f, 1.9f}, p, rng, {0, 1}) == 0);    // only the last token is in the window
}

TEST_CASE("every sampling limit is accepted at its maximum and refused above", "[sample]") {
  CHECK(llm::sampling_in_range(0, 0, 0, 0, 0));
  CHECK(llm::sampling_in_range(llm::kMaxTemperatureMilli, llm::kMaxTopPMilli, llm::kMaxMinPMilli,
                               llm::kMaxRepeatPenaltyMilli, llm::kMaxRepeatLastN));
  CHECK_FALSE(llm::sampling_in_range(llm::kMaxTemperatureMilli + 1, 0, 0, 0, 0));
  CHECK_FALSE(llm::sampling_in_range(0, llm::kMaxTopPMilli + 1, 0, 0, 0));
  CHECK_FALSE(llm::sampling_in_range(0, 0, llm::kMaxMinPMilli + 1, 0, 0));
  CHECK_FALSE(llm::sampling_in_range(0, 0, 0, llm::kMaxRepeatPenaltyMilli + 1, 0));
  CHECK_FALSE(llm::sampling_in_range(0, 0, 0, 0, llm::kMaxRepeatLastN + 1));
}

TEST_CASE("the penalty window reaches back exactly repeat_last_n tokens", "[sample]") {
  // kMaxRepeatLastN distinct recent tokens, the oldest of which is token 0:
  // the penalty must reach it at the maximum window and not one token less.
  const uint32_t n = llm::kMaxRepeatLastN + 1;
  std::vector<float> logits(n, 1.0f);
  logits[0] = 1.05f;   // the best, unless penalised
  std::vector<uint32_t> recent;
  for (uint32_t i = 0; i < llm::kMaxRepeatLastN; i++) recent.push_back(i);   // 0 is the oldest
  llm::SamplingParams p;
  p.repeat_penalty = 1.1f;
  llm::Rng rng = llm::rng_from_seed(1);
  p.repeat_last_n = llm::kMaxRepeatLastN;
  CHECK(draw(logits, p, rng, recent) == llm::kMaxRepeatLastN);   // 0 penalised: the unseen token wins
  p.repeat_last_n = llm::kMaxRepeatLastN - 1;
  CHECK(draw(logits, p, rng, recent) == 0);
}
