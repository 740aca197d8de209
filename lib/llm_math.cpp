#include "llm_math.h"
#include "float_bits.h"

namespace llm {
namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kInvLn2 = 1.44269504088896340736;

double pow2i(int k) {  // 2^k for -1022 <= k <= 1023
  return __builtin_bit_cast(double, uint64_t(int64_t(k) + 1023) << 52);
}

// 2*atanh(s) = log((1+s)/(1-s)) for |s| <= 1/3, to double precision.
double two_atanh(double s) {
  double s2 = s * s;
  // Horner over 1 + s2/3 + s2^2/5 + ... + s2^17/35: |s2| <= 1/9 leaves < 1e-17.
  double p = 1.0 / 35;
  for (int k = 33; k >= 1; k -= 2) p = p * s2 + 1.0 / k;
  return 2.0 * s * p;
}

// exp for results that end up as float (silu, sigmoid, softmax), in
// integer arithmetic: relative error below 5e-10, then the caller rounds to
// float (up to 6e-8). Why integers: under QEMU every float instruction is a
// call into a software float library, dozens of host instructions, while an
// integer add or multiply is one or two. The double-precision Taylor form
// (exp_d) took ~25 float instructions per call; this takes one (a multiply:
// the conversion of the product to an integer is done on its bits,
// int_of_double in float_bits.h), and silu runs it hidden_dim times per
// layer per token.
//
// How: e^x = 2^t with t = x / ln2 = k + f, k an integer and 0 <= f < 1.
//  - t in fixed point with 52 fraction bits: |x| <= 745 makes |t| < 1076,
//    so |t| * 2^52 < 2^63 fits an int64. An arithmetic shift gives k =
//    floor(t) (also for negative t) and a mask gives f.
//  - 2^f = e^(f ln2) = sum of (ln2)^n f^n / n!, n = 0..10 (the first term
//    left out is below 4.5e-10), by Horner's rule on unsigned fixed point:
//    the coefficients in Q1.63 (value * 2^63; all positive, 1 <= 2^f < 2)
//    and f in Q0.64, so each step is one high multiply and one add.
//  - The double's bits are then put together by hand: exponent k, mantissa
//    the top 52 fraction bits of 2^f.
constexpr int kExpTerms = 11;   // n = 0..10
constexpr uint64_t exp2_coefficient(int n) {   // (ln2)^n / n! in Q1.63
  double c = 1.0;
  for (int i = 1; i <= n; i++) c = c * kLn2 / i;
  return uint64_t(c * 9223372036854775808.0);   // * 2^63, exact scaling
}
struct Exp2Coefficients {
  uint64_t c[kExpTerms];
  constexpr Exp2Coefficients() : c() {
    for (int n = 0; n < kExpTerms; n++) c[n] = exp2_coefficient(n);
  }
};
constexpr Exp2Coefficients kExp2;

inline uint64_t mul_high(uint64_t a, uint64_t b) {   // (a * b) >> 64: one mulhu
  return uint64_t((unsigned __int128)a * b >> 64);
}

double exp_for_float(double x) {
  // Range checks on the bits: for doubles of one sign the bit patterns
  // order like the values, and integer compares are cheap.
  uint64_t bits = __builtin_bit_cast(uint64_t, x);
  uint64_t mag = bits & 0x7fffffffffffffffull;
  if (mag > 0x7ff0000000000000ull) return x;   // NaN
  constexpr uint64_t k709 = __builtin_bit_cast(uint64_t, 709.0);
  constexpr uint64_t k745 = __builtin_bit_cast(uint64_t, 745.0);
  bool negative = bits >> 63;
  if (!negative && mag > k709) return __builtin_bit_cast(double, uint64_t(0x7ff0000000000000ull));
  if (negative && mag > k745) return 0.0;
  int64_t t = int_of_double(x * (kInvLn2 * 4503599627370496.0));   // x / ln2 * 2^52, truncated
  int64_t k = t >> 52;                                        // floor
  uint64_t f = uint64_t(t) << 12;                             // fraction, Q0.64
  uint64_t p = kExp2.c[kExpTerms - 1];
  // Unrolled: ten high multiplies and adds in one block of straight-line
  // code (as a loop, each step also paid a counter, a branch and a jump).
#pragma GCC unroll 16
  for (int n = kExpTerms - 2; n >= 0; n--) p = kExp2.c[n] + mul_high(p, f);
  // p = 2^f in Q1.63, in [2^63, 2^64): its 52 bits after the leading one
  // are the mantissa.
  uint64_t mantissa = (p >> 11) & 0x000fffffffffffffull;
  if (k >= -1022) return __builtin_bit_cast(double, (uint64_t(k + 1023) << 52) | mantissa);
  // Results below 2^-1022 (x < -708): scale in two steps, as exp_d does.
  return __builtin_bit_cast(double, (uint64_t(k + 1023 + 200) << 52) | mantissa) * pow2i(-200);
}

}  // namespace

double exp_d(double x) {
  if (x != x) return x;
  if (x > 709.0) return __builtin_bit_cast(double, uint64_t(0x7ff0000000000000ull));
  if (x < -745.0) return 0.0;
  double kd = x * kInvLn2;
  int k = int(kd >= 0 ? kd + 0.5 : kd - 0.5);
  // ln2 split into a part exact in 32 bits and the rest, so k*hi is exact.
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= ln2/2
  // Taylor to r^13: the remainder is below 2e-17 relative.
  double p = 1.0 / 6227020800.0;
  static constexpr double inv_fact[] = {
      1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
      1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600};
  for (int i = 12; i >= 0; i--) p = p * r + inv_fact[i];
  // Scale in two steps so that subnormal results and k up to 1024 stay exact.
  if (k > 1000) return p * pow2i(1000) * pow2i(k - 1000);
  if (k < -1000) return p * pow2i(-1000) * pow2i(k + 1000);
  return p * pow2i(k);
}

double log_d(double x) {
  if (x != x || x < 0) return __builtin_bit_cast(double, uint64_t(0x7ff8000000000000ull));
  if (x == 0) return -__builtin_bit_cast(double, uint64_t(0x7ff0000000000000ull));
  uint64_t bits = __builtin_bit_cast(uint64_t, x);
  if ((bits >> 52) == 0x7ff) return x;  // +inf
  int e = 0;
  if ((bits >> 52) == 0) {  // subnormal: normalise first
    x *= pow2i(60);
    e -= 60;
    bits = __builtin_bit_cast(uint64_t, x);
  }
  e += int(bits >> 52) - 1023;
  double m = __builtin_bit_cast(double, (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.41421356237309504880) { m *= 0.5; e++; }
  // m in [0.707, 1.414]: s = (m-1)/(m+1) in [-0.172, 0.172].
  return e * kLn2 + two_atanh((m - 1.0) / (m + 1.0));
}

float exp_f(float x) { return float_of_double(exp_for_float(x)); }
float log_f(float x) { return float(log_d(x)); }

float log1p_f(float x) {
  double y = x;
  if (y <= -1.0) return y == -1.0 ? float(log_d(0.0)) : float(log_d(-1.0));
  // log(1+y) = 2 atanh(y/(2+y)); the series needs |s| <= 1/3, i.e. y <= 1.
  if (y > -0.5 && y <= 1.0) return float(two_atanh(y / (2.0 + y)));
  return float(log_d(1.0 + y));
}

float sqrt_f(float x) {
#if defined(__riscv)
  float r;
  asm("fsqrt.s %0, %1" : "=f"(r) : "f"(x));
  return r;
#elif defined(__x86_64__)
  float r;
  asm("sqrtss %1, %0" : "=x"(r) : "x"(x));
  return r;
#else
  if (!(x > 0)) return x == 0 ? x : float(log_d(-1.0));
  double r = 1.0 / __builtin_bit_cast(double, (uint64_t(0x5fe6eb50c7b537a9ull) - (__builtin_bit_cast(uint64_t, double(x)) >> 1)));
  for (int i = 0; i < 6; i++) r = 0.5 * (r + x / r);
  return float(r);
#endif
}

float sigmoid_f(float x) { return float_of_double(1.0 / (1.0 + exp_for_float(-double(x)))); }
float silu_f(float x) { return float_of_double(double(x) / (1.0 + exp_for_float(-double(x)))); }

float softplus_f(float x) {
  // log(1 + e^x) = max(x, 0) + log1p(e^-|x|), without overflow.
  double ax = x < 0 ? -double(x) : double(x);
  double t = exp_for_float(-ax);  // in (0, 1]
  double l = two_atanh(t / (2.0 + t));
  return float((x > 0 ? double(x) : 0.0) + l);
}

void rmsnorm(float* out, const float* x, const float* w, uint32_t n, float eps) {
  double ss = 0;
  for (uint32_t i = 0; i < n; i++) ss += double(x[i]) * double(x[i]);
  float inv = 1.0f / sqrt_f(float(ss / n) + eps);
  if (w) {
    for (uint32_t i = 0; i < n; i++) out[i] = x[i] * inv * w[i];
  } else {
    for (uint32_t i = 0; i < n; i++) out[i] = x[i] * inv;
  }
}

void l2norm(float* x, uint32_t n, float eps) {
  double ss = 0;
  for (uint32_t i = 0; i < n; i++) ss += double(x[i]) * double(x[i]);
  float inv = 1.0f / sqrt_f(float(ss) + eps);
  for (uint32_t i = 0; i < n; i++) x[i] *= inv;
}

void softmax(float* x, uint32_t n) {
  if (n == 0) return;
  float mx = x[0];
  for (uint32_t i = 1; i < n; i++) if (x[i] > mx) mx = x[i];
  double sum = 0;
  for (uint32_t i = 0; i < n; i++) {
    x[i] = exp_f(x[i] - mx);
    sum += x[i];
  }
  float inv = float(1.0 / sum);
  for (uint32_t i = 0; i < n; i++) x[i] *= inv;
}

void rope(float* head, const float* cs, uint32_t rot) {
  uint32_t half = rot / 2;
  const float* c = cs;
  const float* s = cs + half;
  for (uint32_t i = 0; i < half; i++) {
    float a = head[i], b = head[i + half];
    head[i] = a * c[i] - b * s[i];
    head[i + half] = a * s[i] + b * c[i];
  }
}

float dot(const float* a, const float* b, uint32_t n) {
  float s = 0;
  for (uint32_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

}  // namespace llm
