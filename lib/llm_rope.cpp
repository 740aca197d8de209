// RoPE rows computed past the bundle's table (llm_rope.h).
#include "llm_rope.h"
#include "llm_math.h"

namespace llm {

void sincos_d(double x, double* s, double* c) {
  // Range reduction: x = k * pi/2 + r with |r| <= pi/4. pi/2 is split in
  // three parts (fdlibm's constants); the first has 33 significant bits, so
  // k * part1 is exact for |k| < 2^20, and r keeps double precision.
  constexpr double kTwoOverPi = 6.36619772367581382433e-01;
  constexpr double kPio2Part1 = 1.57079632673412561417e+00;
  constexpr double kPio2Part2 = 6.07710050630396597660e-11;
  constexpr double kPio2Part3 = 2.02226624879595063154e-21;
  double kd = x * kTwoOverPi;
  int64_t k = int64_t(kd >= 0 ? kd + 0.5 : kd - 0.5);
  double r = ((x - double(k) * kPio2Part1) - double(k) * kPio2Part2) - double(k) * kPio2Part3;
  // Taylor series on |r| <= pi/4: the first omitted terms, r^19/19! and
  // r^20/20!, are below 1e-19.
  double r2 = r * r;
  double sp = 0, cp = 0;
  double sin_coef[9], cos_coef[10];   // 1/(2n+1)! and 1/(2n)!, signs alternating
  double f = 1;
  for (int n = 0; n < 10; n++) {
    if (n > 0) f /= double((2 * n - 1) * (2 * n));
    cos_coef[n] = (n % 2) ? -f : f;
    if (n < 9) sin_coef[n] = (n % 2) ? -f / double(2 * n + 1) : f / double(2 * n + 1);
  }
  for (int n = 8; n >= 0; n--) sp = sp * r2 + sin_coef[n];
  for (int n = 9; n >= 0; n--) cp = cp * r2 + cos_coef[n];
  double sr = r * sp, cr = cp;
  switch (k & 3) {   // sin/cos of r + k * pi/2
    case 0: *s = sr;  *c = cr;  break;
    case 1: *s = cr;  *c = -sr; break;
    case 2: *s = -sr; *c = -cr; break;
    default: *s = -cr; *c = sr; break;
  }
}

void rope_row_compute(const Config& c, uint32_t pos, float* row) {
  uint32_t half = c.rot_dim() / 2;
  double log_theta = log_d(double(c.rope_theta));
  for (uint32_t i = 0; i < half; i++) {
    double inv_freq = exp_d(-log_theta * (2.0 * double(i) / double(c.rot_dim())));
    double s, co;
    sincos_d(double(pos) * inv_freq, &s, &co);
    row[i] = float(co);
    row[half + i] = float(s);
  }
}

uint32_t context_for(const Config& c, uint32_t requested) {
  uint32_t n = requested;
  if (n == 0) n = c.is_qwen() && c.runtime_seq_len < kDefaultQwenContext ? kDefaultQwenContext : c.runtime_seq_len;
  if (n > c.seq_len) n = c.seq_len;
  if (n > kMaxRuntimeSeqLen) n = kMaxRuntimeSeqLen;
  return n;
}

}  // namespace llm
