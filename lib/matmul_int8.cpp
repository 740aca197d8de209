// The register-blocked int8 kernels: several multiply-adds per 64-bit multiply
// (SWAR, "SIMD within a register"), exact.
//
// Why: under QEMU every guest instruction costs about the same, so the cost of
// a product is the instructions per multiply-add. The plain int8 kernel
// (matvec.cpp) spends ~4 per multiply-add: extract a byte (2 shifts), multiply,
// add. Here one 64-bit multiply computes two products at once: the operands
// are packed as two 32-bit lanes, a + b * 2^32, and since
//   w * (a + b * 2^32) = w*a + (w*b) * 2^32
// a 64-bit sum of such products holds sum(w*a) in its low half and sum(w*b)
// in its high half. Why that is exact: with int8 values every |w*a| <= 127*255
// and a group sums at most a few thousand products, so |sum(w*a)| < 2^31: the
// low half, sign-extended, IS sum(w*a); subtracting it leaves exactly
// sum(w*b) * 2^32 (arithmetic modulo 2^64 is exact for sums, and the value
// fits). The group's power-of-two gains and the float end are the plain
// kernel's, so every (row, item) result is bit-identical to it.
//
// Two kernels:
//   pairs  (two items in the lanes): item i's and item i+1's activations are
//          packed once per product (pack_int8_batch), each weight is loaded
//          once as a byte and multiplied into both items. 4 rows x 4 items
//          per step: 4 weight loads + 2 activation loads + 8 multiplies + 8
//          adds per column = 22 instructions for 16 multiply-adds.
//   cross  (one item, two columns in the lanes): 8 weights come in one 64-bit
//          load; XOR 0x80 per byte makes them unsigned (u = w + 128), and two
//          masks pick lanes (u[j], u[j+4]). The activation word is packed
//          crosswise, q[j] * 2^32 + q[j+4], so
//            (u[j] + u[j+4] * 2^32) * (q[j+4] + q[j] * 2^32)
//              = u[j]q[j+4] + (u[j]q[j] + u[j+4]q[j+4]) * 2^32 + (.)* 2^64
//          puts two products of the dot product in the high lane (the 2^64
//          term vanishes modulo 2^64, the low lane is extracted as above).
//          sum(u q) - 128 * sum(q) = sum(w q): the correction depends only on
//          the activations and is computed once per vector (cross_fix).
//          Per 8 weights and row: load, xor, 4 masks, 3 shifts, 4 multiplies,
//          4 adds (17), plus 4 activation loads shared by 4 rows.
#include "matmul_int8.h"

namespace llm {
namespace {

constexpr uint64_t kFlip = 0x8080808080808080ull;   // w + 128 in every byte
constexpr uint64_t kLanes = 0x000000FF000000FFull;  // bytes 0 and 4 -> lanes 0 and 1

// Splits a sum of lane products: low lane (sign-extended) and high lane.
inline int64_t low_lane(uint64_t acc) { return int64_t(int32_t(uint32_t(acc))); }
inline int64_t high_lane(uint64_t acc, int64_t low) { return int64_t(acc - uint64_t(low)) >> 32; }

inline uint32_t group_of(const Matrix& w, const ActVec& x) { return x.group ? x.group : w.cols; }

// The compiler keeps these accumulators in registers only when they are
// plain variables (arrays indexed in unrolled loops stay on the stack), so
// the 4-row blocks below are written out by hand.

// Two details make the compiler emit the loops as counted above:
//  - in_registers(): an empty asm that "reads and writes" the sums. They must
//    then sit in registers at that point, and the additions cannot be
//    reassociated across columns (GCC built trees of products over 4 columns
//    and ran out of registers, spilling the sums inside the loop).
//  - [[gnu::optimize("sched-pressure")]] on the hot functions: the scheduler
//    otherwise hoists all loads of the unrolled columns to the top (fine on
//    a real pipeline with spare registers, spills here).
// Neither changes a result: integer sums are exact in any order.
inline void in_registers(uint64_t& a, uint64_t& b, uint64_t& c, uint64_t& d) {
  asm("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
}

// One weight times a packed pair of items: two multiply-adds, one multiply.
inline void mac_pair(uint64_t& acc, uint64_t w, uint64_t packed) { acc += w * packed; }
inline uint64_t weight(const int8_t* row, uint32_t c) { return uint64_t(int64_t(row[c])); }

// Adds a group's lane sums into the two items' totals, each shifted by its
// own power-of-two gain for this group.
inline void take_group(uint64_t acc, int64_t& tot_a, int64_t& tot_b, uint32_t sa, uint32_t sb) {
  int64_t lo = low_lane(acc);
  tot_a += lo << sa;
  tot_b += high_lane(acc, lo) << sb;
}

// The hot loop of the pairs kernel: one group of columns (count a multiple
// of 4) of 4 weight rows (p0, row stride n) times two packed pairs (pa, pb,
// at the group's first column). out: the 8 lane sums [row][pair]. Out of
// line on purpose, so that only its own 8 sums, 7 pointers and the loaded
// values compete for registers (with the caller's loop state they spilled).
[[gnu::noinline, gnu::optimize("sched-pressure")]] void sums_4x4(const int8_t* p0, size_t n, const int64_t* pa,
                                                                 const int64_t* pb, uint32_t count,
                                                                 uint64_t out[8]) {
  const int8_t *p1 = p0 + n, *p2 = p1 + n, *p3 = p2 + n;
  const int64_t* end = pa + count;
  uint64_t s0a = 0, s0b = 0, s1a = 0, s1b = 0, s2a = 0, s2b = 0, s3a = 0, s3b = 0;
  auto column = [&](uint32_t j) {
    uint64_t a = uint64_t(pa[j]), b = uint64_t(pb[j]);
    uint64_t v0 = weight(p0, j), v1 = weight(p1, j), v2 = weight(p2, j), v3 = weight(p3, j);
    mac_pair(s0a, v0, a); mac_pair(s0b, v0, b);
    mac_pair(s1a, v1, a); mac_pair(s1b, v1, b);
    mac_pair(s2a, v2, a); mac_pair(s2b, v2, b);
    mac_pair(s3a, v3, a); mac_pair(s3b, v3, b);
    in_registers(s0a, s0b, s1a, s1b);
    in_registers(s2a, s2b, s3a, s3b);
  };
  // Walk pointers (not an index): no address arithmetic per load.
  for (; pa < end; pa += 4, pb += 4, p0 += 4, p1 += 4, p2 += 4, p3 += 4) {
    column(0);
    column(1);
    column(2);
    column(3);
  }
  out[0] = s0a; out[1] = s0b; out[2] = s1a; out[3] = s1b;
  out[4] = s2a; out[5] = s2b; out[6] = s3a; out[7] = s3b;
}

// Rows r..r+3 times items x[0..4) (x[0].pair, x[2].pair packed), into
// y[i * stride + k] for item i, row r + k.
void pairs_4x4(const Matrix& w, const ActVec* x, uint32_t r, float* y, size_t stride) {
  uint32_t n = w.cols, g = group_of(w, x[0]);
  const int8_t* w0 = w.q + size_t(r) * n;
  int64_t tot[4][4] = {};  // [row][item]
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t c1 = c0 + g < n ? c0 + g : n;
    uint64_t s[8];
    sums_4x4(w0 + c0, n, x[0].pair + c0, x[2].pair + c0, c1 - c0, s);
    uint32_t h0 = kMaxShift - x[0].shift[gi], h1 = kMaxShift - x[1].shift[gi];
    uint32_t h2 = kMaxShift - x[2].shift[gi], h3 = kMaxShift - x[3].shift[gi];
    for (uint32_t k = 0; k < 4; k++) {
      take_group(s[2 * k], tot[k][0], tot[k][1], h0, h1);
      take_group(s[2 * k + 1], tot[k][2], tot[k][3], h2, h3);
    }
  }
  for (uint32_t i = 0; i < 4; i++)
    for (uint32_t k = 0; k < 4; k++) y[i * stride + k] = finish_int8(tot[k][i], x[i], w.scale(r + k));
}

// Rows r..r+rows-1 (any count) times items x[0..2) (x[0].pair packed).
void pairs_rows(const Matrix& w, const ActVec* x, uint32_t r, uint32_t rows, float* y, size_t stride) {
  uint32_t n = w.cols, g = group_of(w, x[0]);
  const int64_t* xa = x[0].pair;
  for (uint32_t k = 0; k < rows; k++) {
    const int8_t* wr = w.q + size_t(r + k) * n;
    int64_t ta = 0, tb = 0;
    uint32_t gi = 0;
    for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
      uint32_t c1 = c0 + g < n ? c0 + g : n;
      uint64_t s = 0;
      for (uint32_t c = c0; c < c1; c++) mac_pair(s, weight(wr, c), uint64_t(xa[c]));
      take_group(s, ta, tb, kMaxShift - x[0].shift[gi], kMaxShift - x[1].shift[gi]);
    }
    y[k] = finish_int8(ta, x[0], w.scale(r + k));
    y[stride + k] = finish_int8(tb, x[1], w.scale(r + k));
  }
}

// 8 weights (one 64-bit word of a row) times one item's crosswise-packed
// activations p0..p3: 8 multiply-adds into the high lane of the result.
inline uint64_t cross8(uint64_t word, uint64_t p0, uint64_t p1, uint64_t p2, uint64_t p3) {
  uint64_t u = word ^ kFlip;
  return (u & kLanes) * p0 + ((u >> 8) & kLanes) * p1 + ((u >> 16) & kLanes) * p2 + ((u >> 24) & kLanes) * p3;
}

inline int64_t cross_group(uint64_t acc) { return high_lane(acc, low_lane(acc)); }

// The hot loop of the cross kernel: words [k0, k0 + count) of 4 weight rows
// (w0, row stride nw words) times one crosswise-packed item (xc at k0).
[[gnu::noinline, gnu::optimize("sched-pressure")]] void sums_cross_4(const uint64_t* w0, size_t nw,
                                                                     const uint64_t* xc, uint32_t count,
                                                                     uint64_t out[4]) {
  const uint64_t *w1 = w0 + nw, *w2 = w1 + nw, *w3 = w2 + nw, *end = w0 + count;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (; w0 < end; w0++, w1++, w2++, w3++, xc += 4) {
    uint64_t p0 = xc[0], p1 = xc[1], p2 = xc[2], p3 = xc[3];
    s0 += cross8(*w0, p0, p1, p2, p3);
    s1 += cross8(*w1, p0, p1, p2, p3);
    s2 += cross8(*w2, p0, p1, p2, p3);
    s3 += cross8(*w3, p0, p1, p2, p3);
  }
  out[0] = s0; out[1] = s1; out[2] = s2; out[3] = s3;
}

// Rows r..r+3 times one item (x.cross packed), into y[k].
void cross_4(const Matrix& w, const ActVec& x, uint32_t r, float* y) {
  uint32_t n = w.cols, g = group_of(w, x);
  const auto* w0 = reinterpret_cast<const uint64_t*>(w.q + size_t(r) * n);
  int64_t t[4] = {};
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t c1 = c0 + g < n ? c0 + g : n;
    uint64_t s[4];
    sums_cross_4(w0 + c0 / 8, n / 8, x.cross + c0 / 2, (c1 - c0) / 8, s);
    uint32_t sh = kMaxShift - x.shift[gi];
    for (uint32_t k = 0; k < 4; k++) t[k] += cross_group(s[k]) << sh;
  }
  for (uint32_t k = 0; k < 4; k++) y[k] = finish_int8(t[k] - x.cross_fix, x, w.scale(r + k));
}

void cross_1(const Matrix& w, const ActVec& x, uint32_t r, float* y) {
  uint32_t n = w.cols, g = group_of(w, x);
  const auto* w0 = reinterpret_cast<const uint64_t*>(w.q + size_t(r) * n);
  const uint64_t* xc = x.cross;
  int64_t t0 = 0;
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t k1 = (c0 + g < n ? c0 + g : n) / 8;
    uint64_t s0 = 0;
    for (uint32_t k = c0 / 8; k < k1; k++) {
      const uint64_t* p = xc + 4 * size_t(k);
      s0 += cross8(w0[k], p[0], p[1], p[2], p[3]);
    }
    t0 += cross_group(s0) << (kMaxShift - x.shift[gi]);
  }
  y[0] = finish_int8(t0 - x.cross_fix, x, w.scale(r));
}

}  // namespace

void int8_pairs(const Matrix& w, const ActVec* x, uint32_t pairs, uint32_t r, uint32_t rows, float* y,
                size_t stride) {
  if (pairs == 2 && rows == 4) return pairs_4x4(w, x, r, y, stride);
  for (uint32_t p = 0; p < pairs; p++) pairs_rows(w, x + 2 * p, r, rows, y + 2 * p * stride, stride);
}

void int8_cross(const Matrix& w, const ActVec& x, uint32_t r, uint32_t rows, float* y) {
  if (rows == 4) return cross_4(w, x, r, y);
  for (uint32_t k = 0; k < rows; k++) cross_1(w, x, r + k, y + k);
}

void pack_int8_batch(ActVec* x, uint32_t n, int64_t* pair_mem, size_t pair_stride, uint64_t* cross_mem) {
  for (uint32_t i = 0; i < n; i++) {
    x[i].pair = nullptr;
    x[i].cross = nullptr;
  }
  if (n == 0 || !x[0].q) return;
  uint32_t cols = x[0].n, g = x[0].group ? x[0].group : cols;
  if (cols % 8 || g % 8) return;
  for (uint32_t i = 0; i + 1 < n; i += 2) {
    const int8_t *a = x[i].q, *b = x[i + 1].q;
    int64_t* out = pair_mem + (i / 2) * pair_stride;
    for (uint32_t c = 0; c < cols; c++) out[c] = int64_t(a[c]) + int64_t(uint64_t(int64_t(b[c])) << 32);
    x[i].pair = out;
  }
  if (n % 2) {
    ActVec& a = x[n - 1];
    for (uint32_t k = 0; k < cols / 8; k++)
      for (uint32_t j = 0; j < 4; j++)
        cross_mem[4 * k + j] = (uint64_t(int64_t(a.q[8 * k + j])) << 32) + uint64_t(int64_t(a.q[8 * k + j + 4]));
    int64_t fix = 0;
    uint32_t gi = 0;
    for (uint32_t c0 = 0; c0 < cols; c0 += g, gi++) {
      uint32_t c1 = c0 + g < cols ? c0 + g : cols;
      int64_t s = 0;
      for (uint32_t c = c0; c < c1; c++) s += a.q[c];
      fix += (128 * s) << (kMaxShift - a.shift[gi]);
    }
    a.cross = cross_mem;
    a.cross_fix = fix;
  }
}

}  // namespace llm
