// The sampler: see llm_sample.h for the steps and why this order.
#include "llm_sample.h"
#include "llm_math.h"

namespace llm {

uint64_t Rng::next() {
  // SplitMix64 (Steele, Lea, Flood 2014): a Weyl sequence, then a mixer.
  state += 0x9e3779b97f4a7c15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float Rng::uniform() {
  // The top 24 bits: exactly representable in a float, so no rounding
  // can ever produce 1.0.
  return float(next() >> 40) * (1.0f / 16777216.0f);
}

Rng rng_from_seed(uint64_t seed) {
  Rng r;
  r.state = seed;
  return r;
}

SamplingParams sampling_from_thousandths(uint32_t temperature, uint32_t top_k, uint32_t top_p,
                                         uint32_t min_p, uint32_t repeat_penalty, uint32_t repeat_last_n) {
  SamplingParams p;
  p.temperature = float(temperature) / 1000.0f;
  p.top_k = top_k;
  p.top_p = top_p == 0 ? 1.0f : float(top_p) / 1000.0f;
  p.min_p = float(min_p) / 1000.0f;
  p.repeat_penalty = repeat_penalty == 0 ? 1.0f : float(repeat_penalty) / 1000.0f;
  p.repeat_last_n = repeat_last_n == 0 ? 64 : repeat_last_n;
  return p;
}

bool sampling_in_range(uint32_t temperature, uint32_t top_p, uint32_t min_p, uint32_t repeat_penalty,
                       uint32_t repeat_last_n) {
  return temperature <= kMaxTemperatureMilli && top_p <= kMaxTopPMilli && min_p <= kMaxMinPMilli &&
         repeat_penalty <= kMaxRepeatPenaltyMilli && repeat_last_n <= kMaxRepeatLastN;
}

bool parse_thousandths(const char* s, uint32_t max, uint32_t* out) {
  if (s == nullptr || *s == 0) return false;
  uint64_t whole = 0, frac = 0;
  int frac_digits = 0;
  const char* p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    whole = whole * 10 + uint64_t(*p - '0');
    if (whole > 0xffffffffull) return false;
  }
  bool digits_before = p != s;
  if (*p == '.') {
    p++;
    for (; *p >= '0' && *p <= '9'; p++) {
      if (++frac_digits > 3) return false;
      frac = frac * 10 + uint64_t(*p - '0');
    }
    if (frac_digits == 0 && !digits_before) return false;   // "." alone
  }
  if (*p != 0 || (!digits_before && frac_digits == 0)) return false;
  for (int d = frac_digits; d < 3; d++) frac *= 10;
  uint64_t v = whole * 1000 + frac;
  if (v > max) return false;
  *out = uint32_t(v);
  return true;
}

namespace {

// "a ranks before b": larger logit first, the lower index among equals,
// so every order below is total and the result never depends on how the
// sort happened to visit the array.
inline bool before(const float* v, uint32_t a, uint32_t b) {
  return v[a] > v[b] || (v[a] == v[b] && a < b);
}

// Heap whose root is the *worst* candidate (the one that ranks last).
void sift_down_worst_root(uint32_t* h, uint32_t n, uint32_t i, const float* v) {
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, w = i;
    if (l < n && before(v, h[w], h[l])) w = l;   // l ranks after w: l is worse
    if (r < n && before(v, h[w], h[r])) w = r;
    if (w == i) return;
    uint32_t t = h[i];
    h[i] = h[w];
    h[w] = t;
    i = w;
  }
}

// Heap whose root is the *best* candidate (the one that ranks first).
void sift_down_best_root(uint32_t* h, uint32_t n, uint32_t i, const float* v) {
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, b = i;
    if (l < n && before(v, h[l], h[b])) b = l;
    if (r < n && before(v, h[r], h[b])) b = r;
    if (b == i) return;
    uint32_t t = h[i];
    h[i] = h[b];
    h[b] = t;
    i = b;
  }
}

// order[0..k) := the k best indices of v[0..n), best first. O(n log k).
void best_k(const float* v, uint32_t n, uint32_t k, uint32_t* order) {
  for (uint32_t i = 0; i < k; i++) order[i] = i;
  for (uint32_t i = k / 2; i-- > 0;) sift_down_worst_root(order, k, i, v);
  for (uint32_t i = k; i < n; i++) {
    if (before(v, i, order[0])) {   // better than the worst kept
      order[0] = i;
      sift_down_worst_root(order, k, 0, v);
    }
  }
  // Heap sort in place: repeatedly move the worst to the end.
  for (uint32_t end = k; end > 1; end--) {
    uint32_t t = order[0];
    order[0] = order[end - 1];
    order[end - 1] = t;
    sift_down_worst_root(order, end - 1, 0, v);
  }
}

uint32_t argmax(const float* v, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;   // strict: the lowest index wins ties
  return best;
}

}  // namespace

uint32_t sample_token(float* logits, uint32_t n, const SamplingParams& p, Rng& rng,
                      const uint32_t* recent, uint32_t n_recent, uint32_t* order) {
  // 1. Repetition penalty, once per distinct token in the window (order[]
  //    marks the tokens already penalised).
  if (p.repeat_penalty != 1.0f && p.repeat_penalty > 0 && n_recent > 0) {
    uint32_t window = n_recent < p.repeat_last_n ? n_recent : p.repeat_last_n;
    const uint32_t* w = recent + (n_recent - window);
    for (uint32_t i = 0; i < window; i++)
      if (w[i] < n) order[w[i]] = 0;
    for (uint32_t i = 0; i < window; i++) {
      uint32_t t = w[i];
      if (t >= n || order[t]) continue;
      order[t] = 1;
      logits[t] = logits[t] > 0 ? logits[t] / p.repeat_penalty : logits[t] * p.repeat_penalty;
    }
  }
  if (p.greedy()) return argmax(logits, n);

  // 2. Temperature.
  float inv_t = 1.0f / p.temperature;
  for (uint32_t i = 0; i < n; i++) logits[i] *= inv_t;

  // With top-k, the k best in falling order (O(n log k)); every step below
  // then walks that order. Without it, the candidates are every token in
  // index order: sorting all of them (O(n log n)) cost a SmolLM2-shape
  // decode step a tenth more than its whole forward pass, and nothing but
  // top-p needs an order (step 6 finds its prefix without a full sort).
  uint32_t m = n;
  bool sorted = p.top_k > 0 && p.top_k < n;
  float top;
  if (sorted) {
    m = p.top_k;
    best_k(logits, n, m, order);
    top = logits[order[0]];
  } else {
    for (uint32_t i = 0; i < n; i++) order[i] = i;
    top = logits[argmax(logits, n)];
  }

  // 3. Softmax over the candidates, written back into logits[] (unnormalised:
  //    the largest is exactly 1; sums below divide by the total).
  for (uint32_t i = 0; i < m; i++) logits[order[i]] = exp_f(logits[order[i]] - top);

  // 4. Min-p: keep the candidates at least min_p x the largest (which is 1),
  //    in their order.
  if (p.min_p > 0) {
    float floor = p.min_p;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < m; i++)
      if (logits[order[i]] >= floor) order[keep++] = order[i];
    m = keep;   // >= 1: the largest is 1 >= floor
  }

  // 5. Top-p: the shortest prefix, by falling probability, whose mass
  //    reaches p of the total. Unsorted candidates are ranked only as far
  //    as that prefix reaches (a heap, O(m + prefix log m)).
  float total = 0;
  for (uint32_t i = 0; i < m; i++) total += logits[order[i]];
  if (p.top_p < 1.0f && p.top_p > 0) {
    float want = p.top_p * total, cum = 0;
    uint32_t prefix = m;
    if (!sorted) {
      // order[0..m) becomes a heap whose root is the best candidate; each
      // step moves the best of the rest to the end of the unsorted part,
      // and the ranked prefix is then order[m - taken .. m) reversed.
      for (uint32_t i = m / 2; i-- > 0;) sift_down_best_root(order, m, i, logits);
      uint32_t taken = 0;
      while (taken < m) {
        uint32_t best = order[0];
        order[0] = order[m - 1 - taken];
        order[m - 1 - taken] = best;
        taken++;
        sift_down_best_root(order, m - taken, 0, logits);
        cum += logits[best];
        if (cum >= want) break;
      }
      // The ranked prefix, best first, at the front.
      for (uint32_t i = 0; i < taken / 2; i++) {
        uint32_t t = order[m - 1 - i];
        order[m - 1 - i] = order[m - taken + i];
        order[m - taken + i] = t;
      }
      for (uint32_t i = 0; i < taken; i++) order[i] = order[m - taken + i];
      prefix = taken;
    } else {
      for (uint32_t i = 0; i < m; i++) {
        cum += logits[order[i]];
        if (cum >= want) {
          prefix = i + 1;
          break;
        }
      }
    }
    m = prefix;
    total = 0;
    for (uint32_t i = 0; i < m; i++) total += logits[order[i]];
  }

  // 6. Draw: the first candidate, in their order, whose cumulative mass passes r.
  float r = rng.uniform() * total, cum = 0;
  for (uint32_t i = 0; i < m; i++) {
    cum += logits[order[i]];
    if (r < cum) return order[i];
  }
  // r == total after rounding: the last candidate with any mass (a token
  // masked by a grammar has exactly 0 and must never come out here).
  for (uint32_t i = m; i-- > 0;)
    if (logits[order[i]] > 0) return order[i];
  return order[m - 1];
}

}  // namespace llm
