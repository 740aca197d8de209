// The register-blocked int8 kernels: several multiply-adds per 64-bit multiply
// (SWAR, "SIMD within a register"), exact.
//
// Why: under QEMU every guest instruction costs about the same, so the cost of
// a product is the instructions per multiply-add. The plain int8 kernel
// (matvec.cpp) spends ~4 per multiply-add: extract a byte (2 shifts), multiply,
// add. Here one 64-bit multiply computes two or three products at once: the
// activations of several items are packed as lanes of one integer,
//   X = a + b * 2^B (+ c * 2^2B),  and  w * X = w*a + (w*b) * 2^B (+ (w*c) * 2^2B),
// so a 64-bit sum of such products holds sum(w*a), sum(w*b), sum(w*c) side by
// side. Why that is exact: a block of g int8 columns sums at most
// g * 127 * 127 in magnitude (g = 32: 516,128 < 2^20). With B = 32 (pairs)
// or B = 21 (triples, g <= 64: < 2^20) every lane's sum fits its lane as a
// signed number, and the whole sum fits in 63 bits, so the 64-bit sum IS the
// integer above; the lowest lane, sign-extended, is sum(w*a); subtracting it
// and shifting right by B leaves the next lane; and so on. The block's
// power-of-two gains and the float end are the plain kernel's, so every
// (row, item) result is bit-identical to it.
//
// Kernels:
//   triples (3 items in 21-bit lanes, blocks of groups <= 64 values) and
//   pairs   (2 items in 32-bit lanes, any group): the Batch packs the items'
//           activations once per product (pack_int8_batch); each weight is
//           loaded once as a byte and multiplied into every packed word. 4
//           rows x 2 packed words per step: 4 weight loads + 2 activation
//           loads + 8 multiplies + 8 adds per column = 22 instructions for 24
//           multiply-adds (triples) or 16 (pairs). 4 rows x 3 words (7 to 9
//           items: a batch of 8 in one sweep) share the 4 weight loads among
//           36 lanes: 31 instructions, 7 of them loads. Under QEMU a load
//           (a software TLB lookup) costs more real time than an add, so the
//           loads per multiply-add count most (docs/runtime.md).
//   cross   (one item, two columns in the lanes): 8 weights come in one
//           64-bit load; XOR 0x80 per byte makes them unsigned (u = w + 128),
//           and two masks pick lanes (u[j], u[j+4]). The activation word is
//           packed crosswise, q[j] * 2^32 + q[j+4], so
//             (u[j] + u[j+4] * 2^32) * (q[j+4] + q[j] * 2^32)
//               = u[j]q[j+4] + (u[j]q[j] + u[j+4]q[j+4]) * 2^32 + (.) * 2^64
//           puts two products of the dot product in the high lane (the 2^64
//           term vanishes modulo 2^64, the low lane is extracted as above).
//           sum(u q) - 128 * sum(q) = sum(w q): the correction depends only on
//           the activations and is computed once per vector (cross_fix).
//           Per 8 weights and row: load, xor, 4 masks, 3 shifts, 4
//           multiplies, 4 adds (17), plus 4 activation loads shared by 4 rows.
#include "matmul_int8.h"

namespace llm {
namespace {

constexpr uint64_t kFlip = 0x8080808080808080ull;   // w + 128 in every byte
constexpr uint64_t kLanes = 0x000000FF000000FFull;  // bytes 0 and 4 -> lanes 0 and 1

// Splits a sum of lane products: low lane (sign-extended) and high lane.
inline int64_t low_lane(uint64_t acc) { return int64_t(int32_t(uint32_t(acc))); }
inline int64_t high_lane(uint64_t acc, int64_t low) { return int64_t(acc - uint64_t(low)) >> 32; }

inline uint32_t group_of(const Matrix& w, const ActVec& x) { return x.group ? x.group : w.cols; }

// Two details make the compiler emit the loops as counted above:
//  - in_registers(): an empty asm that "reads and writes" the sums. They must
//    then sit in registers at that point, and the additions cannot be
//    reassociated across columns (GCC built trees of products over several
//    columns and ran out of registers, spilling the sums inside the loop).
//  - [[gnu::optimize("sched-pressure")]] on the hot functions: the scheduler
//    otherwise hoists all loads of the unrolled columns to the top (fine on
//    a real pipeline with spare registers, spills here).
// Neither changes a result: integer sums are exact in any order.
inline void in_registers(uint64_t& a, uint64_t& b, uint64_t& c, uint64_t& d) {
  asm("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
}

// One weight times a packed word of items: 2 or 3 multiply-adds, one multiply.
inline void mac_lanes(uint64_t& acc, uint64_t w, uint64_t packed) { acc += w * packed; }
inline uint64_t weight(const int8_t* row, uint32_t c) { return uint64_t(int64_t(row[c])); }

// Adds one block's lane sums (L lanes) into the items' totals, each shifted
// by its item's power-of-two gain h for this block.
template <int L>
inline void take_lanes(uint64_t acc, int64_t* tot, const uint32_t* h) {
  if constexpr (L == 2) {
    int64_t lo = low_lane(acc);
    tot[0] += lo << h[0];
    tot[1] += high_lane(acc, lo) << h[1];
  } else {  // three 21-bit lanes: the sum is a true int64 (see the top)
    int64_t v = int64_t(acc);
    int64_t l0 = int64_t(uint64_t(v) << 43) >> 43;  // sign-extend the low 21 bits
    int64_t rest = (v - l0) >> 21;
    int64_t l1 = int64_t(uint64_t(rest) << 43) >> 43;
    int64_t l2 = (rest - l1) >> 21;
    tot[0] += l0 << h[0];
    tot[1] += l1 << h[1];
    tot[2] += l2 << h[2];
  }
}

// Totals of a block of 4 rows x up to 9 items: [row][item].
constexpr uint32_t kMaxBlockItems = 9;
using Totals = int64_t[4][kMaxBlockItems];

// The hot loops: one block of columns (count a multiple of 8) of 4 weight
// rows (p0, row stride n) times one or two packed words per column (pa, pb,
// at the block's first column, L lanes each); the lane sums go into tot,
// shifted by h[item] (items of pa first, then pb's). Out of line on purpose,
// so that only their own sums, pointers and loaded values compete for
// registers (with the caller's loop state they spilled).
template <int L>
[[gnu::noinline, gnu::optimize("sched-pressure")]] void block_4x2(const int8_t* p0, size_t n, const int64_t* pa,
                                                                  const int64_t* pb, uint32_t count,
                                                                  const uint32_t* h, Totals& tot) {
  const int8_t *p1 = p0 + n, *p2 = p1 + n, *p3 = p2 + n;
  const int64_t* end = pa + count;
  uint64_t s0a = 0, s0b = 0, s1a = 0, s1b = 0, s2a = 0, s2b = 0, s3a = 0, s3b = 0;
  auto column = [&](uint32_t j) {
    uint64_t a = uint64_t(pa[j]), b = uint64_t(pb[j]);
    uint64_t v0 = weight(p0, j), v1 = weight(p1, j), v2 = weight(p2, j), v3 = weight(p3, j);
    mac_lanes(s0a, v0, a); mac_lanes(s0b, v0, b);
    mac_lanes(s1a, v1, a); mac_lanes(s1b, v1, b);
    mac_lanes(s2a, v2, a); mac_lanes(s2b, v2, b);
    mac_lanes(s3a, v3, a); mac_lanes(s3b, v3, b);
    in_registers(s0a, s0b, s1a, s1b);
    in_registers(s2a, s2b, s3a, s3b);
  };
  // Walk pointers (not an index): no address arithmetic per load; 8 columns
  // per round trip of the loop.
  for (; pa < end; pa += 8, pb += 8, p0 += 8, p1 += 8, p2 += 8, p3 += 8) {
    column(0); column(1); column(2); column(3);
    column(4); column(5); column(6); column(7);
  }
  take_lanes<L>(s0a, tot[0], h); take_lanes<L>(s0b, tot[0] + L, h + L);
  take_lanes<L>(s1a, tot[1], h); take_lanes<L>(s1b, tot[1] + L, h + L);
  take_lanes<L>(s2a, tot[2], h); take_lanes<L>(s2b, tot[2] + L, h + L);
  take_lanes<L>(s3a, tot[3], h); take_lanes<L>(s3b, tot[3] + L, h + L);
}

// The same for three packed words per column (pc after pb's items).
template <int L>
[[gnu::noinline, gnu::optimize("sched-pressure")]] void block_4x3(const int8_t* p0, size_t n, const int64_t* pa,
                                                                  const int64_t* pb, const int64_t* pc,
                                                                  uint32_t count, const uint32_t* h, Totals& tot) {
  const int8_t *p1 = p0 + n, *p2 = p1 + n, *p3 = p2 + n;
  const int64_t* end = pa + count;
  uint64_t s0a = 0, s0b = 0, s0c = 0, s1a = 0, s1b = 0, s1c = 0;
  uint64_t s2a = 0, s2b = 0, s2c = 0, s3a = 0, s3b = 0, s3c = 0;
  // always_inline: GCC judged this bigger body not worth inlining, and a
  // call per column with every sum in memory ran four times slower.
  auto column = [&](uint32_t j) __attribute__((always_inline)) {
    uint64_t a = uint64_t(pa[j]), b = uint64_t(pb[j]), c = uint64_t(pc[j]);
    uint64_t v0 = weight(p0, j), v1 = weight(p1, j), v2 = weight(p2, j), v3 = weight(p3, j);
    mac_lanes(s0a, v0, a); mac_lanes(s0b, v0, b); mac_lanes(s0c, v0, c);
    mac_lanes(s1a, v1, a); mac_lanes(s1b, v1, b); mac_lanes(s1c, v1, c);
    mac_lanes(s2a, v2, a); mac_lanes(s2b, v2, b); mac_lanes(s2c, v2, c);
    mac_lanes(s3a, v3, a); mac_lanes(s3b, v3, b); mac_lanes(s3c, v3, c);
    in_registers(s0a, s0b, s0c, s1a);
    in_registers(s1b, s1c, s2a, s2b);
    in_registers(s2c, s3a, s3b, s3c);
    // No load may move across a column's end: hoisted to the top of the
    // loop, the loads of later columns ran out of registers and spilled.
    asm volatile("" ::: "memory");
  };
  for (; pa < end; pa += 8, pb += 8, pc += 8, p0 += 8, p1 += 8, p2 += 8, p3 += 8) {
    column(0); column(1); column(2); column(3);
    column(4); column(5); column(6); column(7);
  }
  take_lanes<L>(s0a, tot[0], h); take_lanes<L>(s0b, tot[0] + L, h + L); take_lanes<L>(s0c, tot[0] + 2 * L, h + 2 * L);
  take_lanes<L>(s1a, tot[1], h); take_lanes<L>(s1b, tot[1] + L, h + L); take_lanes<L>(s1c, tot[1] + 2 * L, h + 2 * L);
  take_lanes<L>(s2a, tot[2], h); take_lanes<L>(s2b, tot[2] + L, h + L); take_lanes<L>(s2c, tot[2] + 2 * L, h + 2 * L);
  take_lanes<L>(s3a, tot[3], h); take_lanes<L>(s3b, tot[3] + L, h + L); take_lanes<L>(s3c, tot[3] + 2 * L, h + 2 * L);
}

template <int L>
[[gnu::noinline, gnu::optimize("sched-pressure")]] void block_4x1(const int8_t* p0, size_t n, const int64_t* pa,
                                                                  uint32_t count, const uint32_t* h, Totals& tot) {
  const int8_t *p1 = p0 + n, *p2 = p1 + n, *p3 = p2 + n;
  const int64_t* end = pa + count;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  auto column = [&](uint32_t j) {
    uint64_t a = uint64_t(pa[j]);
    mac_lanes(s0, weight(p0, j), a);
    mac_lanes(s1, weight(p1, j), a);
    mac_lanes(s2, weight(p2, j), a);
    mac_lanes(s3, weight(p3, j), a);
    in_registers(s0, s1, s2, s3);
  };
  for (; pa < end; pa += 8, p0 += 8, p1 += 8, p2 += 8, p3 += 8) {
    column(0); column(1); column(2); column(3);
    column(4); column(5); column(6); column(7);
  }
  take_lanes<L>(s0, tot[0], h);
  take_lanes<L>(s1, tot[1], h);
  take_lanes<L>(s2, tot[2], h);
  take_lanes<L>(s3, tot[3], h);
}

// The packed word of item i's vector (L lanes: x[i].triple or x[i].pair).
template <int L>
const int64_t* packed(const ActVec& x) { return L == 3 ? x.triple : x.pair; }

// Rows r..r+3 times the m <= V*L items x[0..m) in V packed words of L lanes
// each, into y[i * stride + k] for item i, row r + k. Lanes beyond m hold
// zeros (the last word of a batch may be short) and are not written.
template <int L, int V>
void block_rows4(const Matrix& w, const ActVec* x, uint32_t m, uint32_t r, float* y, size_t stride) {
  uint32_t n = w.cols, g = group_of(w, x[0]);
  const int8_t* w0 = w.q + size_t(r) * n;
  const int64_t* pa = packed<L>(x[0]);
  const int64_t* pb = V >= 2 ? packed<L>(x[L]) : nullptr;
  const int64_t* pc = V == 3 ? packed<L>(x[2 * L]) : nullptr;
  Totals tot = {};
  uint32_t h[kMaxBlockItems] = {};
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t c1 = c0 + g < n ? c0 + g : n;
    for (uint32_t i = 0; i < m; i++) h[i] = kMaxShift - x[i].shift[gi];
    if constexpr (V == 3) block_4x3<L>(w0 + c0, n, pa + c0, pb + c0, pc + c0, c1 - c0, h, tot);
    else if constexpr (V == 2) block_4x2<L>(w0 + c0, n, pa + c0, pb + c0, c1 - c0, h, tot);
    else block_4x1<L>(w0 + c0, n, pa + c0, c1 - c0, h, tot);
  }
  for (uint32_t k = 0; k < 4; k++) {
    float scale = w.scale(r + k);
    for (uint32_t i = 0; i < m; i++) y[i * stride + k] = finish_int8(tot[k][i], x[i], scale);
  }
}

// The same for one row r (the rare remainder of a row range that is not a
// multiple of 4): a plain loop, same sums.
template <int L>
void row_one_word(const Matrix& w, const ActVec* x, uint32_t m, uint32_t r, float* y, size_t stride) {
  uint32_t n = w.cols, g = group_of(w, x[0]);
  const int8_t* wr = w.q + size_t(r) * n;
  const int64_t* pa = packed<L>(x[0]);
  int64_t tot[3] = {};
  uint32_t h[3] = {};
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t c1 = c0 + g < n ? c0 + g : n;
    for (uint32_t i = 0; i < m; i++) h[i] = kMaxShift - x[i].shift[gi];
    uint64_t s = 0;
    for (uint32_t c = c0; c < c1; c++) mac_lanes(s, weight(wr, c), uint64_t(pa[c]));
    take_lanes<L>(s, tot, h);
  }
  for (uint32_t i = 0; i < m; i++) y[i * stride] = finish_int8(tot[i], x[i], w.scale(r));
}

// Rows r..r+rows-1 (rows <= 4) times the items of up to three packed words
// (two for pairs) starting at x[0]; returns how many items it did.
template <int L>
uint32_t packed_items(const Matrix& w, const ActVec* x, uint32_t left, uint32_t r, uint32_t rows, float* y,
                      size_t stride) {
  bool two = left > L && packed<L>(x[L]) != nullptr;
  // Three words only for triples: 9 items fill Totals; pairs keep to 4.
  bool three = L == 3 && two && left > 2 * L && packed<L>(x[2 * L]) != nullptr;
  uint32_t words = three ? 3 : two ? 2 : 1;
  uint32_t m = left < words * L ? left : words * L;
  if (rows == 4) {
    if (three) block_rows4<L, 3>(w, x, m, r, y, stride);
    else if (two) block_rows4<L, 2>(w, x, m, r, y, stride);
    else block_rows4<L, 1>(w, x, m, r, y, stride);
    return m;
  }
  for (uint32_t k = 0; k < rows; k++)
    for (uint32_t i = 0; i < m; i += L)
      row_one_word<L>(w, x + i, m - i < L ? m - i : L, r + k, y + i * stride + k, stride);
  return m;
}

// 8 weights (one 64-bit word of a row) times one item's crosswise-packed
// activations p0..p3: 8 multiply-adds into the high lane of the result.
inline uint64_t cross8(uint64_t word, uint64_t p0, uint64_t p1, uint64_t p2, uint64_t p3) {
  uint64_t u = word ^ kFlip;
  return (u & kLanes) * p0 + ((u >> 8) & kLanes) * p1 + ((u >> 16) & kLanes) * p2 + ((u >> 24) & kLanes) * p3;
}

inline int64_t cross_group(uint64_t acc) { return high_lane(acc, low_lane(acc)); }

// Rows r..r+3 times one item (x.cross packed), into y[k]: all blocks of
// the row in one out-of-line function (its loop state is small enough for
// the registers), so a block costs only its extraction, not a call.
[[gnu::noinline, gnu::optimize("sched-pressure")]] void cross_4(const Matrix& w, const ActVec& x, uint32_t r,
                                                                float* y) {
  uint32_t n = w.cols, g = group_of(w, x);
  const auto* w0 = reinterpret_cast<const uint64_t*>(w.q + size_t(r) * n);
  const uint64_t *w1 = w0 + n / 8, *w2 = w1 + n / 8, *w3 = w2 + n / 8;
  const uint64_t* xc = x.cross;
  const uint8_t* shift = x.shift;
  int64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g) {
    const uint64_t* end = w0 + (c0 + g < n ? g : n - c0) / 8;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; w0 < end; w0++, w1++, w2++, w3++, xc += 4) {
      uint64_t p0 = xc[0], p1 = xc[1], p2 = xc[2], p3 = xc[3];
      s0 += cross8(*w0, p0, p1, p2, p3);
      s1 += cross8(*w1, p0, p1, p2, p3);
      s2 += cross8(*w2, p0, p1, p2, p3);
      s3 += cross8(*w3, p0, p1, p2, p3);
    }
    uint32_t sh = kMaxShift - *shift++;
    t0 += cross_group(s0) << sh;
    t1 += cross_group(s1) << sh;
    t2 += cross_group(s2) << sh;
    t3 += cross_group(s3) << sh;
  }
  y[0] = finish_int8(t0 - x.cross_fix, x, w.scale(r));
  y[1] = finish_int8(t1 - x.cross_fix, x, w.scale(r + 1));
  y[2] = finish_int8(t2 - x.cross_fix, x, w.scale(r + 2));
  y[3] = finish_int8(t3 - x.cross_fix, x, w.scale(r + 3));
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

uint32_t int8_packed(const Matrix& w, const ActVec* x, uint32_t left, uint32_t r, uint32_t rows, float* y,
                     size_t stride) {
  if (x[0].triple) return packed_items<3>(w, x, left, r, rows, y, stride);
  if (x[0].pair) return packed_items<2>(w, x, left, r, rows, y, stride);
  return 0;
}

void int8_cross(const Matrix& w, const ActVec& x, uint32_t r, uint32_t rows, float* y) {
  if (rows == 4) return cross_4(w, x, r, y);
  for (uint32_t k = 0; k < rows; k++) cross_1(w, x, r + k, y + k);
}

void pack_int8_batch(ActVec* x, uint32_t n, int64_t* pair_mem, size_t pair_stride, uint64_t* cross_mem) {
  for (uint32_t i = 0; i < n; i++) {
    x[i].pair = nullptr;
    x[i].triple = nullptr;
    x[i].cross = nullptr;
  }
  if (n == 0 || !x[0].q) return;
  uint32_t cols = x[0].n, g = x[0].group ? x[0].group : cols;
  if (cols % 8 || g % 8) return;
  if (n == 1) {  // one item: crosswise, two columns per multiply
    ActVec& a = x[0];
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
    return;
  }
  // Several items: three per word when a block's sum fits 21 bits (g <= 64),
  // else two per word; a short last word has zero lanes.
  uint32_t lanes = g <= 64 ? 3 : 2, bits = lanes == 3 ? 21 : 32;
  for (uint32_t i = 0; i < n; i += lanes) {
    int64_t* out = pair_mem + (i / lanes) * pair_stride;
    for (uint32_t c = 0; c < cols; c++) {
      int64_t v = 0;
      for (uint32_t l = lanes; l-- > 0;) v = v * (int64_t(1) << bits) + (i + l < n ? x[i + l].q[c] : 0);
      out[c] = v;
    }
    if (lanes == 3) x[i].triple = out;
    else x[i].pair = out;
  }
}

}  // namespace llm
