#include "matvec.h"
#include "matmul_int8.h"

namespace llm {
namespace {

// float(w) for every int8 weight w, indexed by w's byte (uint8_t(w)). A
// table load instead of a conversion instruction: the same float, and under
// QEMU a load is a few host instructions while an int -> float conversion is
// a call into the software float library with no fast path (float_bits.h).
struct Int8AsFloat {
  float value[256];
  constexpr Int8AsFloat() : value() {
    for (int b = 0; b < 256; b++) value[b] = float(b < 128 ? b : b - 256);
  }
};
constexpr Int8AsFloat kInt8AsFloat;

float row_dot_q8(const int8_t* w, const float* x, uint32_t n) {
  // Four partial sums: shorter dependency chains, same result for every
  // caller (the order is fixed), and the compiler keeps it scalar.
  const float* as_float = kInt8AsFloat.value;
  const uint8_t* wb = reinterpret_cast<const uint8_t*>(w);
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  uint32_t c = 0;
  for (; c + 4 <= n; c += 4) {
    s0 += as_float[wb[c]] * x[c];
    s1 += as_float[wb[c + 1]] * x[c + 1];
    s2 += as_float[wb[c + 2]] * x[c + 2];
    s3 += as_float[wb[c + 3]] * x[c + 3];
  }
  for (; c < n; c++) s0 += as_float[wb[c]] * x[c];
  return (s0 + s1) + (s2 + s3);
}

float row_dot_f32(const float* w, const float* x, uint32_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  uint32_t c = 0;
  for (; c + 4 <= n; c += 4) {
    s0 += w[c] * x[c];
    s1 += w[c + 1] * x[c + 1];
    s2 += w[c + 2] * x[c + 2];
    s3 += w[c + 3] * x[c + 3];
  }
  for (; c < n; c++) s0 += w[c] * x[c];
  return (s0 + s1) + (s2 + s3);
}

float row_float(const Matrix& w, const ActVec& x, uint32_t r) {
  if (w.f) return row_dot_f32(w.f + size_t(r) * w.cols, x.x, w.cols);
  return w.scale(r) * row_dot_q8(w.q + size_t(r) * w.cols, x.x, w.cols);
}

float row_int8(const Matrix& w, const ActVec& x, uint32_t r) {
  if (w.f || !x.q) return row_float(w, x, r);
  const int8_t* wr = w.q + size_t(r) * w.cols;
  uint32_t n = w.cols;
  uint32_t g = x.group ? x.group : n;
  int64_t acc = 0;
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t c1 = c0 + g < n ? c0 + g : n;
    int32_t s = 0;
    for (uint32_t c = c0; c < c1; c++) s += int32_t(wr[c]) * int32_t(x.q[c]);
    acc += int64_t(s) << (kMaxShift - x.shift[gi]);
  }
  return finish_int8(acc, x, w.scale(r));
}

// ---- int8 fast path ------------------------------------------------------
// Under QEMU a guest load costs several times an ALU instruction, so the hot
// loop reads 8 weights (and 8 activations) per 64-bit load and extracts the
// signed bytes with two shifts; the 8 activations of a load are shared by 4
// rows. Integer sums are exact, and the float part (group scale, row scale)
// is the same as row_int8's, so results are bit-identical.
// Needs 8-byte aligned rows (cols % 8 == 0 and an aligned q), groups that
// are multiples of 8 and an aligned activation buffer; otherwise row_int8.

inline int32_t sbyte(uint64_t v, int i) { return int32_t(int64_t(v << (56 - 8 * i)) >> 56); }

bool int8_fast_ok(const Matrix& w, const ActVec& x) {
  uint32_t g = x.group ? x.group : w.cols;
  return !w.f && x.q && w.cols % 8 == 0 && g % 8 == 0 &&
         (reinterpret_cast<uintptr_t>(w.q) % 8) == 0 && (reinterpret_cast<uintptr_t>(x.q) % 8) == 0;
}

// Rows r..r+3 (all < rows) into out[0..3].
void int8_rows4(const Matrix& w, const ActVec& x, uint32_t r, float out[4]) {
  uint32_t n = w.cols, g = x.group ? x.group : n;
  const auto* w0 = reinterpret_cast<const uint64_t*>(w.q + size_t(r) * n);
  const auto* w1 = w0 + n / 8;
  const auto* w2 = w1 + n / 8;
  const auto* w3 = w2 + n / 8;
  const auto* xv = reinterpret_cast<const uint64_t*>(x.q);
  int64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t k1 = (c0 + g < n ? c0 + g : n) / 8;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (uint32_t k = c0 / 8; k < k1; k++) {
      uint64_t xx = xv[k];
      int32_t x0 = sbyte(xx, 0), x1 = sbyte(xx, 1), x2 = sbyte(xx, 2), x3 = sbyte(xx, 3);
      int32_t x4 = sbyte(xx, 4), x5 = sbyte(xx, 5), x6 = sbyte(xx, 6), x7 = sbyte(xx, 7);
      uint64_t v = w0[k];
      s0 += sbyte(v, 0) * x0 + sbyte(v, 1) * x1 + sbyte(v, 2) * x2 + sbyte(v, 3) * x3 +
            sbyte(v, 4) * x4 + sbyte(v, 5) * x5 + sbyte(v, 6) * x6 + sbyte(v, 7) * x7;
      v = w1[k];
      s1 += sbyte(v, 0) * x0 + sbyte(v, 1) * x1 + sbyte(v, 2) * x2 + sbyte(v, 3) * x3 +
            sbyte(v, 4) * x4 + sbyte(v, 5) * x5 + sbyte(v, 6) * x6 + sbyte(v, 7) * x7;
      v = w2[k];
      s2 += sbyte(v, 0) * x0 + sbyte(v, 1) * x1 + sbyte(v, 2) * x2 + sbyte(v, 3) * x3 +
            sbyte(v, 4) * x4 + sbyte(v, 5) * x5 + sbyte(v, 6) * x6 + sbyte(v, 7) * x7;
      v = w3[k];
      s3 += sbyte(v, 0) * x0 + sbyte(v, 1) * x1 + sbyte(v, 2) * x2 + sbyte(v, 3) * x3 +
            sbyte(v, 4) * x4 + sbyte(v, 5) * x5 + sbyte(v, 6) * x6 + sbyte(v, 7) * x7;
    }
    uint32_t sh = kMaxShift - x.shift[gi];
    a0 += int64_t(s0) << sh;
    a1 += int64_t(s1) << sh;
    a2 += int64_t(s2) << sh;
    a3 += int64_t(s3) << sh;
  }
  out[0] = finish_int8(a0, x, w.scale(r));
  out[1] = finish_int8(a1, x, w.scale(r + 1));
  out[2] = finish_int8(a2, x, w.scale(r + 2));
  out[3] = finish_int8(a3, x, w.scale(r + 3));
}

float int8_row1(const Matrix& w, const ActVec& x, uint32_t r) {
  uint32_t n = w.cols, g = x.group ? x.group : n;
  const auto* w0 = reinterpret_cast<const uint64_t*>(w.q + size_t(r) * n);
  const auto* xv = reinterpret_cast<const uint64_t*>(x.q);
  int64_t a0 = 0;
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t k1 = (c0 + g < n ? c0 + g : n) / 8;
    int32_t s0 = 0;
    for (uint32_t k = c0 / 8; k < k1; k++) {
      uint64_t xx = xv[k], v = w0[k];
      for (int i = 0; i < 8; i++) s0 += sbyte(v, i) * sbyte(xx, i);
    }
    a0 += int64_t(s0) << (kMaxShift - x.shift[gi]);
  }
  return finish_int8(a0, x, w.scale(r));
}

bool int8_fast_all(const Matrix& w, const ActVec* x, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (!int8_fast_ok(w, x[i])) return false;
  return true;
}

// Rows [r0, r1) of one item without packing (the plain 4-row kernel above).
void int8_plain(const Matrix& w, const ActVec& x, uint32_t r0, uint32_t r1, float* y) {
  uint32_t r = r0;
  for (; r + 4 <= r1; r += 4) int8_rows4(w, x, r, y + (r - r0));
  for (; r < r1; r++) y[r - r0] = int8_row1(w, x, r);
}

// Rows [r0, r1) of every item: packed items go through the "triples"/"pairs"
// kernels a packed block (up to 9 or 6 items) at a time, a single item
// through the "cross" kernel (matmul_int8.cpp), an unpacked one through the
// plain kernel above. All give the same bits. Each call covers the whole row
// range for its items, because under QEMU every return is a jump looked up
// at run time: a call per 4 rows was some 58 000 calls per SmolLM2 token for
// one item. So each packed block of a prompt's items reads the range's
// weights once; rows outside, item blocks inside read them once for all
// blocks, at a call per 4 rows and item block (0.4% more instructions for a
// 64-token prompt, exact; under QEMU the weights' second reading from the
// host's cache costs no more than the calls did: 0.99 in paired boots).
void matmul_int8(const Matrix& w, const ActVec* x, uint32_t n, float* y, size_t stride, uint32_t r0, uint32_t r1) {
  if (w.f || !x[0].q) {
    for (uint32_t r = r0; r < r1; r++)
      for (uint32_t i = 0; i < n; i++) y[i * stride + (r - r0)] = row_float(w, x[i], r);
    return;
  }
  if (!int8_fast_all(w, x, n)) {
    for (uint32_t r = r0; r < r1; r++)
      for (uint32_t i = 0; i < n; i++) y[i * stride + (r - r0)] = row_int8(w, x[i], r);
    return;
  }
  // One crosswise-packed item (a decode step) straight to its kernel: the
  // classifier calls this per 16 rows, 3 072 times per SmolLM2 token.
  if (n == 1 && x[0].cross && !x[0].pair && !x[0].triple) return int8_cross(w, x[0], r0, r1, y);
  for (uint32_t i = 0; i < n;) {
    if (uint32_t done = int8_packed(w, x + i, n - i, r0, r1, y + i * stride, stride)) {
      i += done;
      continue;
    }
    if (x[i].cross) int8_cross(w, x[i], r0, r1, y + i * stride);
    else int8_plain(w, x[i], r0, r1, y + i * stride);
    i++;
  }
}

void matmul_float(const Matrix& w, const ActVec* x, uint32_t n, float* y, size_t stride, uint32_t r0, uint32_t r1) {
  for (uint32_t r = r0; r < r1; r++)
    for (uint32_t i = 0; i < n; i++) y[i * stride + (r - r0)] = row_float(w, x[i], r);
}

// The classifier: vocab_size rows, so the logits of a block of rows go
// through a small buffer instead of a vocab-sized one per item.
template <void (*Matmul)(const Matrix&, const ActVec*, uint32_t, float*, size_t, uint32_t, uint32_t)>
void argmax_batch(const Matrix& w, const ActVec* x, uint32_t n, ArgMax* best, uint32_t r0, uint32_t r1) {
  constexpr uint32_t kBlock = 16;
  float v[kBlock * kMaxArgmaxItems];
  for (uint32_t i = 0; i < n; i++) best[i] = ArgMax{r0, 0};
  for (uint32_t i0 = 0; i0 < n; i0 += kMaxArgmaxItems) {
    uint32_t m = n - i0 < kMaxArgmaxItems ? n - i0 : kMaxArgmaxItems;
    for (uint32_t b0 = r0; b0 < r1; b0 += kBlock) {
      uint32_t b1 = b0 + kBlock < r1 ? b0 + kBlock : r1;
      Matmul(w, x + i0, m, v, kBlock, b0, b1);
      for (uint32_t i = 0; i < m; i++) {
        ArgMax& b = best[i0 + i];
        for (uint32_t r = b0; r < b1; r++) {
          float val = v[i * kBlock + (r - b0)];
          if (r == r0 || argmax_beats(val, b.value)) b = ArgMax{r, val};
        }
      }
    }
  }
}

template <void (*Matmul)(const Matrix&, const ActVec*, uint32_t, float*, size_t, uint32_t, uint32_t)>
void matvec_one(const Matrix& w, const ActVec& x, float* y, uint32_t r0, uint32_t r1) {
  Matmul(w, &x, 1, y + r0, 0, r0, r1);
}

template <void (*Matmul)(const Matrix&, const ActVec*, uint32_t, float*, size_t, uint32_t, uint32_t)>
ArgMax argmax_one(const Matrix& w, const ActVec& x, uint32_t r0, uint32_t r1) {
  ArgMax best;
  argmax_batch<Matmul>(w, &x, 1, &best, r0, r1);
  return best;
}

}  // namespace

const MatvecOps kMatvecFloat = {"float", MatvecKind::Float, matvec_one<matmul_float>, argmax_one<matmul_float>,
                                matmul_float, argmax_batch<matmul_float>};
const MatvecOps kMatvecInt8 = {"int8", MatvecKind::Int8, matvec_one<matmul_int8>, argmax_one<matmul_int8>,
                               matmul_int8, argmax_batch<matmul_int8>};

const MatvecOps& matvec_ops(MatvecKind kind) {
  return kind == MatvecKind::Int8 ? kMatvecInt8 : kMatvecFloat;
}

// Quantizing a vector runs once per product on one hart, between the parallel
// passes, so under QEMU it is float work that nothing hides: every float
// instruction is emulated in software (~10-15x an integer one). So the
// comparisons are done on the bit patterns, with integer instructions: for
// floats that are not NaN, |x| orders exactly as (bits & 0x7fffffff) does as
// an unsigned integer, and a NaN (a pattern above +inf's) is skipped, as a
// float comparison would skip it. The rounding is done on the bits too
// (to_int8), so only the multiply stays in float: 1 float instruction per
// value, not ~10 (3 when the rounding add and the conversion were float).
namespace {
constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kInfBits = 0x7f800000u;   // +inf; anything above is a NaN
constexpr uint32_t k127Bits = 0x42fe0000u;   // 127.0f
inline uint32_t bits_of(float f) { return __builtin_bit_cast(uint32_t, f); }

// The largest |x[c]| over [c0, c1), NaNs skipped, as bits (0 = +0.0).
uint32_t abs_max_bits(const float* x, uint32_t c0, uint32_t c1) {
  uint32_t best = 0;
  for (uint32_t c = c0; c < c1; c++) {
    uint32_t a = bits_of(x[c]) & kAbsMask;
    if (a > best && a <= kInfBits) best = a;
  }
  return best;
}

// round-half-away of v, clamped to [-127, 127] (NaN -> -127): the same value
// as the float definition in the comment of quantize_act, int(|v| + 0.5f)
// with v's sign, computed on v's bits:
//  - |v| = m * 2^(e-23) with m the 24-bit mantissa (leading one included), so
//    floor(|v| + 0.5) = (m + 2^(22-e)) >> (23-e) for 0.5 <= |v| < 127
//    (e = -1..6), exactly;
//  - below 0.5 the result is 0, but for one value: the float add rounds
//    0.49999997f + 0.5f (= 1 - 2^-25, halfway between 1 - 2^-24 and 1) to
//    1.0f, which is even; every other sum is exact or stays below 1.
inline int8_t to_int8(float v) {
  constexpr uint32_t kHalfBits = 0x3f000000u;         // 0.5f
  constexpr uint32_t kJustBelowHalf = kHalfBits - 1;  // 0.49999997f
  uint32_t b = bits_of(v), a = b & kAbsMask;
  if (a > kInfBits) return -127;                       // NaN
  if (a >= k127Bits) return (b >> 31) ? -127 : 127;   // |v| >= 127, inf included
  int32_t r;
  if (a < kJustBelowHalf) {
    r = 0;
  } else if (a == kJustBelowHalf) {
    r = 1;
  } else {
    int32_t e = int32_t(a >> 23) - 127;                // -1..6
    uint32_t m = (a & 0x007fffffu) | 0x00800000u;
    r = int32_t((m + (1u << (22 - e))) >> (23 - e));
  }
  return int8_t((b >> 31) ? -r : r);
}
}  // namespace

// Per group of g values: q = round(x * 127 / amax * 2^k), with k the group's
// power-of-two gain (see below). In float, per value:
//   v = x[c] * m;  q = v >= 127 ? 127 : v > -127 ? int(v >= 0 ? v + 0.5f : v - 0.5f) : -127
// (NaN fails both comparisons: -127). to_int8 computes exactly that.
ActVec quantize_act(const float* x, uint32_t n, uint32_t group, int8_t* q, uint8_t* shift) {
  ActVec a;
  a.x = x;
  a.n = n;
  a.q = q;
  a.shift = shift;
  a.group = group;
  float amax = __builtin_bit_cast(float, abs_max_bits(x, 0, n));
  a.scale = amax / 127.0f;
  float inv = amax > 0 && is_finite(amax) ? 127.0f / amax : 0.0f;
  uint32_t g = group ? group : n;
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t c1 = c0 + g < n ? c0 + g : n;
    float gmax = __builtin_bit_cast(float, abs_max_bits(x, c0, c1));
    // The largest k with gmax * 2^k <= amax: small blocks keep their precision.
    uint32_t k = 0;
    float scaled = gmax * 2.0f;
    while (k < kMaxShift && scaled <= amax) {
      k++;
      scaled *= 2.0f;
    }
    shift[gi] = uint8_t(k);
    float m = inv * float(1u << k);
    for (uint32_t c = c0; c < c1; c++) q[c] = to_int8(x[c] * m);
  }
  return a;
}

}  // namespace llm
