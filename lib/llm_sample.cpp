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

  // 3. Top-k (all n when off), best first.
  uint32_t m = p.top_k > 0 && p.top_k < n ? p.top_k : n;
  best_k(logits, n, m, order);

  // 4. Softmax over the candidates, written back into logits[] (unnormalised:
  //    the largest is exactly 1; sums below divide by the total).
  float top = logits[order[0]];
  for (uint32_t i = 0; i < m; i++) logits[order[i]] = exp_f(logits[order[i]] - top);

  // 5. Min-p: candidates are sorted, so the survivors are a prefix.
  if (p.min_p > 0) {
    float floor = p.min_p * logits[order[0]];
    uint32_t keep = 1;
    while (keep < m && logits[order[keep]] >= floor) keep++;
    m = keep;
  }

  // 6. Top-p: the shortest prefix whose probability reaches p.
  float total = 0;
  for (uint32_t i = 0; i < m; i++) total += logits[order[i]];
  if (p.top_p < 1.0f && p.top_p > 0) {
    float want = p.top_p * total, cum = 0;
    for (uint32_t i = 0; i < m; i++) {
      cum += logits[order[i]];
      if (cum >= want) {
        m = i + 1;
        break;
      }
    }
    total = 0;
    for (uint32_t i = 0; i < m; i++) total += logits[order[i]];
  }

  // 7. Draw: the first candidate whose cumulative mass passes r.
  float r = rng.uniform() * total, cum = 0;
  for (uint32_t i = 0; i < m; i++) {
    cum += logits[order[i]];
    if (r < cum) return order[i];
  }
  return order[m - 1];   // r == total after rounding: the last candidate
}

}  // namespace llm
