// Adaptive speculation (--adaptive, KAI_AI_SPEC_ADAPTIVE): how many tokens to
// propose for a request's next pass, chosen from what its proposer's guesses
// have been worth so far and from what a pass of n positions costs. The
// kernel's engine (kernel/ai/proposer.cpp) and llmrun run this same code, so
// both paths draft alike.
//
// The model (docs/experiments.md, "Speculative decoding"): if each draft is
// kept with probability p until the first one that is not, a pass of k drafts
// publishes E(p, k) = 1 + p + ... + p^k tokens and costs r(k+1) plain decoding
// steps; it pays when E(p, k) / r(k+1) > 1 (k = 0 is plain decoding, ratio 1).
// So the controller keeps an estimate of p and asks for the k with the best
// ratio, which may be 0: a proposer that keeps missing gets no drafts at all,
// not the one draft a shrink-on-miss rule would leave it (at r(2) = 1.77 a
// pass, that floor costs 77% more per token than plain decoding). Without
// drafts nothing new is learnt, so a request at k = 0 probes now and then:
// one cheap pass of kProbeDrafts drafts after kFirstProbeGap plain passes,
// the gap doubling after each probe that misses (as TCP backs off).
//
// Invariants: kept_weight and missed_weight are evidence counts in 1/16ths
// (decayed by 7/8 a pass, so about the last eight passes speak); the estimate
// is p = kept / (kept + missed); k_next <= k_max; probe_gap in
// [kFirstProbeGap, kMaxProbeGap].
#pragma once
#include <stdint.h>

namespace llm {

// r(n) in hundredths: the cost of one forward pass of n positions (one
// request's newest token and n-1 drafts) over the cost of a pass of one,
// n = 1..9. A staircase, not a line: the batched int8 kernels pack the
// positions of a pass three to a machine word, so 2 and 3 positions cost
// alike, as do 4..6 and 7..9 (`make spec-lab` measures it: perfbench
// decode@n, SMOL shape, int8, exact mode). The float path's costs grow more
// evenly; the table errs for it on the side of drafting a little too much.
inline constexpr uint16_t kPassCostCenti[10] = {0, 100, 177, 181, 273, 277, 281, 385, 390, 394};

struct DraftControl {
  static constexpr uint32_t kProbeDrafts = 2;      // r(3) = r(2): two drafts for the price of one
  static constexpr uint32_t kFirstProbeGap = 8;    // plain passes before the first probe
  static constexpr uint32_t kMaxProbeGap = 64;
  // Prior evidence: three kept, one missed (p = 0.75, where two drafts pay):
  // a new request tries a cheap pass or two before deciding.
  uint16_t kept_weight = 3 * 16, missed_weight = 1 * 16;
  uint8_t k_next = 0;
  uint8_t probe_gap = kFirstProbeGap;
  uint8_t quiet_passes = 0;   // passes since the last one with drafts

  void start(uint32_t k_max) {
    *this = DraftControl{};
    k_next = static_cast<uint8_t>(best_drafts(k_max));
  }

  // Drafts to ask for in the next pass: the best k, or a probe when the best
  // is none and the request has been quiet long enough.
  uint32_t drafts(uint32_t k_max) const {
    if (k_next > 0 || k_max == 0) return k_next;
    if (quiet_passes < probe_gap) return 0;
    return k_max < kProbeDrafts ? k_max : kProbeDrafts;
  }

  // After a generating pass that verified d drafts and kept `kept` of them
  // (the leading ones: a pass stops at the first miss).
  void after_pass(uint32_t k_max, uint32_t d, uint32_t kept) {
    if (d == 0) {
      if (quiet_passes < 255) quiet_passes++;
      return;
    }
    bool probe = k_next == 0;
    quiet_passes = 0;
    kept_weight = static_cast<uint16_t>(kept_weight * 7 / 8 + kept * 16);
    missed_weight = static_cast<uint16_t>(missed_weight * 7 / 8 + (kept < d ? 16 : 0));
    if (probe) probe_gap = kept < d ? (probe_gap * 2 > kMaxProbeGap ? kMaxProbeGap : probe_gap * 2) : kFirstProbeGap;
    k_next = static_cast<uint8_t>(best_drafts(k_max));
  }

  // The k in 0..k_max (<= 8) with the best tokens per unit of cost,
  // E(p, k) / r(k+1), at the current estimate of p; ties go to fewer drafts.
  uint32_t best_drafts(uint32_t k_max) const {
    uint64_t total = uint64_t(kept_weight) + missed_weight;
    uint64_t p = total == 0 ? 0 : (uint64_t(kept_weight) << 16) / total;   // p in 1/65536
    uint64_t power = 1ull << 16, expected = 1ull << 16;                   // p^0 and E(p, 0)
    uint32_t best = 0;
    uint64_t best_value = expected * 100 / kPassCostCenti[1];
    for (uint32_t k = 1; k <= k_max && k + 1 < sizeof kPassCostCenti / sizeof kPassCostCenti[0]; k++) {
      power = power * p >> 16;
      expected += power;
      uint64_t value = expected * 100 / kPassCostCenti[k + 1];
      if (value > best_value) {
        best_value = value;
        best = k;
      }
    }
    return best;
  }
};

}  // namespace llm
