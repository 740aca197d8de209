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
// g * 127 * 127 in magnitude (g = 32: 516,128 < 2^19; g = 64: 1,032,256 <
// 2^20). With B = 32 (pairs) or B = 21 (triples, g <= 64) every lane's sum
// plus a bias of 2^(B-1) lies in [0, 2^B): a sum that starts at the bias
// 2^(B-1) in every lane (lane_bias) never borrows from or carries into a
// neighbour, and the whole sum is below 2^63 (triples) or 2^64 (pairs), so
// the 64-bit sum IS that integer and each lane is a plain bit field: two
// shifts take it out (take_lanes). The bias adds 2^(B-1) << h per block to
// every total; it depends only on the item, so pack_int8_batch sums it once
// per vector (ActVec::lane_fix) and the end subtracts it. The block's
// power-of-two gains and the float end are the plain kernel's, so every
// (row, item) result is bit-identical to it.
//
// Kernels:
//   triples (3 items in 21-bit lanes, blocks of groups <= 64 values) and
//   pairs   (2 items in 32-bit lanes, any group): the Batch packs the items'
//           activations once per product (pack_int8_batch) into blocks of up
//           to three packed words (9 or 6 items), interleaved column by
//           column, so one pointer walks all of them; each weight is read
//           once (eight of a row per 64-bit load, load_rows8) and multiplied
//           into every packed word. 4 rows x 3 words (7 to 9 items: a batch
//           of 8 in one sweep) share each weight among 36 lanes: per column
//           half a weight load + 3 activation loads + 8 shifts (taking the
//           4 weights out) + 12 multiplies + 12 adds, 37 instructions for 36
//           multiply-adds (triples) or 24 (pairs). Under QEMU a load (a
//           software TLB lookup) costs more real time than a shift, so the
//           loads per multiply-add count most (docs/runtime.md).
//           After each group's columns the stream holds one gain word per
//           packed word: the shift amounts of its lanes for that group, made
//           once per product, so a kernel reads a group's gains with one load
//           per word and walks the whole row in one call (block_4x3).
//   cross   (one item, two columns in the lanes): 8 weights come in one
//           64-bit load; XOR 0x80 per byte makes them unsigned (u = w + 128),
//           and two masks pick lanes (u[j], u[j+4]). The activation word is
//           packed crosswise, q[j] * 2^32 + q[j+4], so
//             (u[j] + u[j+4] * 2^32) * (q[j+4] + q[j] * 2^32)
//               = u[j]q[j+4] + (u[j]q[j] + u[j+4]q[j+4]) * 2^32 + (.) * 2^64
//           puts two products of the dot product in the high lane (the 2^64
//           term vanishes modulo 2^64, the low lane is split off as below).
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

// Packed words: L lanes of lane_bits(L) bits; a packed block has at most
// kBlockWords words (Totals holds their 9 or 6 items).
constexpr uint32_t kBlockWords = 3;
constexpr int lane_bits(int L) { return L == 3 ? 21 : 32; }
// 2^(B-1) in every lane: the start of every block's sum (see the top).
constexpr uint64_t lane_bias(int L) {
  uint64_t b = 0;
  for (int l = 0; l < L; l++) b |= uint64_t(1) << (lane_bits(L) * l + lane_bits(L) - 1);
  return b;
}

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

// The packed kernels read a row's weights eight at a time: one 64-bit load
// (rows are 8-byte aligned, as cols % 8 == 0 and the matrix is aligned), then
// weight j of the eight, sign-extended, with two shifts. Under QEMU a load is
// a software TLB lookup, several times the real time of a shift, so 1 load
// and 16 shifts beat 8 byte loads although they are more instructions (per
// 8 columns of block_4x3: 297 instructions with 32 loads, against 259 with
// 57; 8 clients at `-smp 1`, 9.12 against 8.35 tokens/s, paired boots, real
// time). The 4 rows are reached from one pointer (p, p + n, p + 2n, p + 3n):
// the same three adds per 8 columns as four walking pointers, and three
// registers fewer; with four pointers the four weight words did not fit and
// the loop spilled 8 loads and 4 stores per 8 columns.
inline uint64_t load8(const int8_t* p) { return *reinterpret_cast<const uint64_t*>(p); }
inline uint64_t byte_of(uint64_t w, uint32_t j) { return uint64_t(int64_t(w << (56 - 8 * j)) >> 56); }
inline void load_rows8(const int8_t* p, size_t n, uint64_t& w0, uint64_t& w1, uint64_t& w2, uint64_t& w3) {
  w0 = load8(p);
  w1 = load8(p + n);
  w2 = load8(p + 2 * n);
  w3 = load8(p + 3 * n);
}

// A gain word (pack_int8_batch): byte l is the shift that lane l's field
// needs in take_lanes, h = kMaxShift - k for its item's block gain 2^k:
// lane 0's field is taken from the top of the register, so its byte is
// 64 - B - h (a right shift); the other lanes' bytes are h (a left shift).
// A RISC-V shift reads only the low 6 bits of its amount, so `gains >> 8l`
// serves as the amount as it is; the `& 63` says so in C++ (where a shift by
// 64 or more is undefined). GCC folds it into a shift that is the amount's
// only use; here 4 rows share an amount, and it keeps one `and` per lane.
inline uint64_t lane_shift(uint64_t gains, int l) { return (gains >> (8 * l)) & 63; }

// Adds one block's biased lane fields (L lanes) into the items' totals, each
// shifted by its item's gain: 2 shifts per lane (3 for a middle lane), no
// sign extension, no subtraction (the fields are unsigned, see the top).
// Lane 0: (u << (64 - B)) has the field on top and zeros below, so a right
// shift by 64 - B - h leaves field << h exactly.
template <int L>
inline void take_lanes(uint64_t u, int64_t* tot, uint64_t gains) {
  constexpr int B = lane_bits(L);
  tot[0] += int64_t((u << (64 - B)) >> lane_shift(gains, 0));
  if constexpr (L == 3) tot[1] += int64_t(((u << (64 - 2 * B)) >> (64 - B)) << lane_shift(gains, 1));
  tot[L - 1] += int64_t((u >> (B * (L - 1))) << lane_shift(gains, L - 1));
}

// At the end of a column loop's round trip: the pointers "change" in an
// empty asm, so GCC keeps them in registers to the loop's end, instead of
// recomputing their final values from the trip count after the loop
// (which kept the start values alive in memory: 10 loads and stores per
// group).
inline void walked(const int8_t*& p0, const int64_t*& q) { asm("" : "+r"(p0), "+r"(q)); }
inline void walked(const int8_t*& p0, const uint64_t*& q) { asm("" : "+r"(p0), "+r"(q)); }

// take_lanes in an epilogue, one sum after the other: the volatile asm
// "writes" the sum after every memory access before it, so its split starts
// only here and its totals are loaded only here. Without it GCC split all
// the sums first and loaded all the totals early, and spilled both.
template <int L>
inline void take_next(uint64_t u, int64_t* tot, uint64_t gains) {
  asm volatile("" : "+r"(u) : : "memory");
  take_lanes<L>(u, tot, gains);
}

// Totals of a block of 4 rows x up to 9 items: [row][item].
constexpr uint32_t kMaxBlockItems = 9;
using Totals = int64_t[4][kMaxBlockItems];

// The hot loops: 4 weight rows (p0, row stride n = the row length) times a
// packed block of V words (q: its stream, pack_int8_batch), the whole row in
// one call, group by group (g columns, the last group may be shorter): per
// group the column loop (a multiple of 8 columns), then the group's gain
// words (V, after its columns), and the lane fields go into tot.
// Out of line on purpose, so that only their own sums, pointers and loaded
// values compete for registers (with the caller's loop state they spilled).
//
// Per group of 32 columns of 4 rows x 9 items (triples), counted in the
// objdump of the kernel's build, before (a call per group, h[] made by the
// caller) and now (a call per row block):
//   before: 1566 instructions, 382 loads, 107 stores. The column loop 4 x
//           (69 loads, 5 stores): 224 of the data, the rest spilled values;
//           the call 83 loads, 77 stores: 12 callee-saved registers saved and
//           restored, h[] read, 36 totals loaded and stored; the caller 23
//           loads and 10 stores to make h[] from the 9 items' shift arrays.
//   now:    1272 instructions, 272 loads, 37 stores. The column loop 4 x 57
//           loads: 224 of the data and the loop's end; then 3 gain words, 36
//           totals loaded and stored, 5 loads and 1 store of loop state.
//   8 weights per load (load_rows8): the column loop 4 x (297 instructions,
//           32 loads: 24 activation words, 4 weight words, 4 of loop state;
//           1 store), against 4 x (259 instructions, 57 loads) with byte
//           loads; the rest of the group as before.
// The lane split went from 9 shifts and 2 subtractions per packed sum to 7
// shifts (take_lanes).
template <int L>
[[gnu::noinline, gnu::optimize("sched-pressure")]] void block_4x3(const int8_t* p0, size_t n, const int64_t* q,
                                                                  uint32_t g, Totals& tot) {
  const int8_t* row_end = p0 + n;
  while (p0 < row_end) {
    size_t left = size_t(row_end - p0);
    const int8_t* end = p0 + (left < g ? left : g);
    uint64_t s0a = lane_bias(L), s0b = s0a, s0c = s0a, s1a = s0a, s1b = s0a, s1c = s0a;
    uint64_t s2a = s0a, s2b = s0a, s2c = s0a, s3a = s0a, s3b = s0a, s3c = s0a;
    // always_inline: GCC judged this bigger body not worth inlining, and a
    // call per column with every sum in memory ran four times slower.
    uint64_t w0 = 0, w1 = 0, w2 = 0, w3 = 0;
    auto column = [&](uint32_t j) __attribute__((always_inline)) {
      uint64_t a = uint64_t(q[3 * j]), b = uint64_t(q[3 * j + 1]), c = uint64_t(q[3 * j + 2]);
      uint64_t v0 = byte_of(w0, j), v1 = byte_of(w1, j), v2 = byte_of(w2, j), v3 = byte_of(w3, j);
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
    // Walk pointers (not an index): no address arithmetic per load; 8
    // columns per round trip of the loop.
    for (; p0 < end; q += 24, p0 += 8) {
      load_rows8(p0, n, w0, w1, w2, w3);
      column(0); column(1); column(2); column(3);
      column(4); column(5); column(6); column(7);
      walked(p0, q);
    }
    // The group's gain words (loaded before any total is written: the
    // totals are int64 too, so later loads could not be moved above them).
    uint64_t ga = uint64_t(q[0]), gb = uint64_t(q[1]), gc = uint64_t(q[2]);
    q += 3;
    // Word by word, one sum after the other (take_next).
    take_next<L>(s0a, tot[0], ga); take_next<L>(s1a, tot[1], ga);
    take_next<L>(s2a, tot[2], ga); take_next<L>(s3a, tot[3], ga);
    take_next<L>(s0b, tot[0] + L, gb); take_next<L>(s1b, tot[1] + L, gb);
    take_next<L>(s2b, tot[2] + L, gb); take_next<L>(s3b, tot[3] + L, gb);
    take_next<L>(s0c, tot[0] + 2 * L, gc); take_next<L>(s1c, tot[1] + 2 * L, gc);
    take_next<L>(s2c, tot[2] + 2 * L, gc); take_next<L>(s3c, tot[3] + 2 * L, gc);
  }
}

// The same for a block of two packed words.
template <int L>
[[gnu::noinline, gnu::optimize("sched-pressure")]] void block_4x2(const int8_t* p0, size_t n, const int64_t* q,
                                                                  uint32_t g, Totals& tot) {
  const int8_t* row_end = p0 + n;
  while (p0 < row_end) {
    size_t left = size_t(row_end - p0);
    const int8_t* end = p0 + (left < g ? left : g);
    uint64_t s0a = lane_bias(L), s0b = s0a, s1a = s0a, s1b = s0a, s2a = s0a, s2b = s0a, s3a = s0a, s3b = s0a;
    uint64_t w0 = 0, w1 = 0, w2 = 0, w3 = 0;
    auto column = [&](uint32_t j) {
      uint64_t a = uint64_t(q[2 * j]), b = uint64_t(q[2 * j + 1]);
      uint64_t v0 = byte_of(w0, j), v1 = byte_of(w1, j), v2 = byte_of(w2, j), v3 = byte_of(w3, j);
      mac_lanes(s0a, v0, a); mac_lanes(s0b, v0, b);
      mac_lanes(s1a, v1, a); mac_lanes(s1b, v1, b);
      mac_lanes(s2a, v2, a); mac_lanes(s2b, v2, b);
      mac_lanes(s3a, v3, a); mac_lanes(s3b, v3, b);
      in_registers(s0a, s0b, s1a, s1b);
      in_registers(s2a, s2b, s3a, s3b);
      asm volatile("" ::: "memory");   // as in block_4x3
    };
    for (; p0 < end; q += 16, p0 += 8) {
      load_rows8(p0, n, w0, w1, w2, w3);
      column(0); column(1); column(2); column(3);
      column(4); column(5); column(6); column(7);
      walked(p0, q);
    }
    uint64_t ga = uint64_t(q[0]), gb = uint64_t(q[1]);
    q += 2;
    take_next<L>(s0a, tot[0], ga); take_next<L>(s1a, tot[1], ga);
    take_next<L>(s2a, tot[2], ga); take_next<L>(s3a, tot[3], ga);
    take_next<L>(s0b, tot[0] + L, gb); take_next<L>(s1b, tot[1] + L, gb);
    take_next<L>(s2b, tot[2] + L, gb); take_next<L>(s3b, tot[3] + L, gb);
  }
}

// The same for a block of one packed word.
template <int L>
[[gnu::noinline, gnu::optimize("sched-pressure")]] void block_4x1(const int8_t* p0, size_t n, const int64_t* q,
                                                                  uint32_t g, Totals& tot) {
  const int8_t* row_end = p0 + n;
  while (p0 < row_end) {
    size_t left = size_t(row_end - p0);
    const int8_t* end = p0 + (left < g ? left : g);
    uint64_t s0 = lane_bias(L), s1 = s0, s2 = s0, s3 = s0;
    uint64_t w0 = 0, w1 = 0, w2 = 0, w3 = 0;
    auto column = [&](uint32_t j) {
      uint64_t a = uint64_t(q[j]);
      mac_lanes(s0, byte_of(w0, j), a);
      mac_lanes(s1, byte_of(w1, j), a);
      mac_lanes(s2, byte_of(w2, j), a);
      mac_lanes(s3, byte_of(w3, j), a);
      in_registers(s0, s1, s2, s3);
    };
    for (; p0 < end; q += 8, p0 += 8) {
      load_rows8(p0, n, w0, w1, w2, w3);
      column(0); column(1); column(2); column(3);
      column(4); column(5); column(6); column(7);
      walked(p0, q);
    }
    uint64_t ga = uint64_t(*q++);
    take_next<L>(s0, tot[0], ga);
    take_next<L>(s1, tot[1], ga);
    take_next<L>(s2, tot[2], ga);
    take_next<L>(s3, tot[3], ga);
  }
}

// The stream of the packed block that starts at item x (x.triple or x.pair).
template <int L>
const int64_t* packed(const ActVec& x) { return L == 3 ? x.triple : x.pair; }

// Rows r..r+3 times the m items x[0..m) of a packed block of V words of L
// lanes, into y[i * stride + k] for item i, row r + k; factor[i] is item i's
// factor of the float end (int8_item_factor), computed once by the caller
// for all its blocks. Lanes beyond m (a short last word, or fewer items asked
// for than the block holds) are summed but not written.
template <int L, int V>
[[gnu::always_inline]] inline void block_rows4(const Matrix& w, const ActVec* x, uint32_t m, uint32_t r, float* y,
                                               size_t stride, const float* factor) {
  uint32_t n = w.cols, g = group_of(w, x[0]);
  const int8_t* w0 = w.q + size_t(r) * n;
  Totals tot;
  for (auto& row : tot)
    for (auto& t : row) t = 0;
  if constexpr (V == 3) block_4x3<L>(w0, n, packed<L>(x[0]), g, tot);
  else if constexpr (V == 2) block_4x2<L>(w0, n, packed<L>(x[0]), g, tot);
  else block_4x1<L>(w0, n, packed<L>(x[0]), g, tot);
  for (uint32_t k = 0; k < 4; k++) {
    float scale = w.scale(r + k);
    for (uint32_t i = 0; i < m; i++) y[i * stride + k] = finish_int8_with(tot[k][i] - x[i].lane_fix, factor[i], scale);
  }
}

// All 4-row blocks of a range times one packed block of items, in one call:
// the items' factors once, then block by block, without a call and a return
// per block into a caller and no memset call per block (under QEMU a
// return, and a call to another page, is a jump looked up at run time; a
// decode pass of 8 clients has some 51 000 blocks). The totals are zeroed
// in a loop that GCC would otherwise turn back into a memset call.
// Measured in docs/notebook/2026-12-runtime-tuning.md, "Night of 2026-12-04".
template <int L, int V>
[[gnu::noinline, gnu::optimize("no-tree-loop-distribute-patterns")]] void rows4_range(
    const Matrix& w, const ActVec* x, uint32_t m, uint32_t r, uint32_t blocks, float* y, size_t stride) {
  float factor[kMaxBlockItems];
  for (uint32_t i = 0; i < m; i++) factor[i] = int8_item_factor(x[i]);
  for (; blocks > 0; blocks--, r += 4, y += 4) block_rows4<L, V>(w, x, m, r, y, stride, factor);
}

// The one place that picks the kernel for a packed block's shape: L lanes
// per word (3 items, or 2 when a group is too long for 3 lanes' sums) and
// V words (1..kBlockWords; a block's last word may be short).
using Rows4Range = void (*)(const Matrix&, const ActVec*, uint32_t, uint32_t, uint32_t, float*, size_t);
constexpr Rows4Range kRows4Range[2][kBlockWords] = {
    {rows4_range<2, 1>, rows4_range<2, 2>, rows4_range<2, 3>},
    {rows4_range<3, 1>, rows4_range<3, 2>, rows4_range<3, 3>},
};
static_assert(kBlockWords == 3, "kRows4Range has a kernel per word count");

// Lanes per word of the packed block that starts at x (0: none starts there).
uint32_t lanes_of(const ActVec& x) { return x.triple ? 3 : x.pair ? 2 : 0; }

// The same for one row r (the rare remainder of a row range that is not a
// multiple of 4): a plain loop over the block's stream, same sums.
template <int L>
void row_one_block(const Matrix& w, const ActVec* x, uint32_t m, uint32_t words, uint32_t r, float* y,
                   size_t stride) {
  uint32_t n = w.cols, g = group_of(w, x[0]);
  const int8_t* wr = w.q + size_t(r) * n;
  const int64_t* q = packed<L>(x[0]);
  int64_t tot[kMaxBlockItems] = {};
  for (uint32_t c0 = 0; c0 < n; c0 += g) {
    uint32_t c1 = c0 + g < n ? c0 + g : n;
    uint64_t s[kBlockWords] = {lane_bias(L), lane_bias(L), lane_bias(L)};
    for (uint32_t c = c0; c < c1; c++, q += words)
      for (uint32_t v = 0; v < words; v++) mac_lanes(s[v], weight(wr, c), uint64_t(q[v]));
    for (uint32_t v = 0; v < words; v++) take_lanes<L>(s[v], tot + v * L, uint64_t(q[v]));
    q += words;
  }
  for (uint32_t i = 0; i < m; i++) y[i * stride] = finish_int8(tot[i] - x[i].lane_fix, x[i], w.scale(r));
}

// 8 weights (one 64-bit word of a row) times one item's crosswise-packed
// activations p0..p3: 8 multiply-adds into the high lane of the result.
inline uint64_t cross8(uint64_t word, uint64_t p0, uint64_t p1, uint64_t p2, uint64_t p3) {
  uint64_t u = word ^ kFlip;
  return (u & kLanes) * p0 + ((u >> 8) & kLanes) * p1 + ((u >> 16) & kLanes) * p2 + ((u >> 24) & kLanes) * p3;
}

inline int64_t cross_group(uint64_t acc) { return high_lane(acc, low_lane(acc)); }

// Rows r..r+4*blocks-1 times one item (x.cross packed), into y[k]: all
// column blocks of each 4 rows in one out-of-line function (its loop state
// is small enough for the registers), so a block costs only its extraction,
// not a call; and all 4-row blocks of a range in one call, because under
// QEMU every return is a jump looked up at run time (it cannot be chained
// like a direct jump): a call per 4 rows was about 58 000 calls per
// SmolLM2 token.
[[gnu::noinline, gnu::optimize("sched-pressure")]] void cross_4(const Matrix& w, const ActVec& x, uint32_t r,
                                                                uint32_t blocks, float* y) {
  uint32_t n = w.cols, g = group_of(w, x);
  float factor = int8_item_factor(x);   // once for all the rows (matvec.h)
  const auto* w0 = reinterpret_cast<const uint64_t*>(w.q + size_t(r) * n);
  for (; blocks > 0; blocks--, r += 4, y += 4, w0 += 3 * (n / 8)) {
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
    y[0] = finish_int8_with(t0 - x.cross_fix, factor, w.scale(r));
    y[1] = finish_int8_with(t1 - x.cross_fix, factor, w.scale(r + 1));
    y[2] = finish_int8_with(t2 - x.cross_fix, factor, w.scale(r + 2));
    y[3] = finish_int8_with(t3 - x.cross_fix, factor, w.scale(r + 3));
  }
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

// ---- two items crosswise ------------------------------------------------
// Why: a packed word of triples pays two shifts to take each weight out of
// its load before its first multiply (about 2.1 instructions per weight and
// row), and a block of 2 items leaves a third of its lanes empty. The cross
// kernel takes two weights out with one mask (about 1.1), and each item then
// costs a multiply and an add per two weights. Counted in the objdump of
// the kernel's build, per multiply-add over a group of 32 columns (the
// column loop 4 times, then the group's end):
//   2 items, 4 rows: crosswise 2.24 (loop 117 instructions per 8 columns),
//                    one word of triples 2.6 (block_4x1: 146);
//   4 items:         crosswise 2.01 (3 rows; 4 rows spill) against two words
//                    of triples 2.0 (block_4x2): the extraction saved is
//                    spent on activation loads (4 per item and 8 columns)
//                    and on each item's group end, so 4 stay triples.
// So a batch's last block of 2 items is packed crosswise (pack_int8_batch):
// a decode step of 2 requests, or a draft of 1 token plus the last one.
//
// Rows p0 + k * n (k < R, n the row length) times a block of M items packed
// crosswise (pack_cross: per group, the items' words [k][j][i], then one
// gain word), the whole row, group by group, into tot[k][i]. As block_4x1:
// out of line, pointers walked, a barrier per weight pair.
template <int R, int M>
[[gnu::noinline, gnu::optimize("sched-pressure")]] void cross_block_row(const int8_t* p0, size_t n,
                                                                        const uint64_t* q, uint32_t g,
                                                                        int64_t (&tot)[4][M]) {
  const int8_t* row_end = p0 + n;
  while (p0 < row_end) {
    size_t left = size_t(row_end - p0);
    const int8_t* end = p0 + (left < g ? left : g);
    uint64_t s[R][M];
#pragma GCC unroll 16
    for (int k = 0; k < R; k++)
#pragma GCC unroll 16
      for (int i = 0; i < M; i++) s[k][i] = 0;
    for (; p0 < end; p0 += 8, q += 4 * M) {
      uint64_t u[R];
#pragma GCC unroll 4
      for (int k = 0; k < R; k++) u[k] = load8(p0 + k * n) ^ kFlip;
      // j = 0..3: the weight pair (j, j + 4) of every row, times each
      // item's word for that pair.
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) {
        uint64_t e[R];
#pragma GCC unroll 4
        for (int k = 0; k < R; k++) e[k] = (u[k] >> (8 * j)) & kLanes;
#pragma GCC unroll 4
        for (int i = 0; i < M; i++) {
          uint64_t a = q[j * M + i];
#pragma GCC unroll 4
          for (int k = 0; k < R; k++) {
            s[k][i] += e[k] * a;
            asm("" : "+r"(s[k][i]));  // in_registers: one sum, no trees of products
          }
        }
        asm volatile("" ::: "memory");  // as in block_4x3: no load moves across a pair
      }
      walked(p0, q);
    }
    // The group's gain word (byte i: 32 - h, h item i's gain shift): the
    // high lane (cross_group) shifted by h is (acc - low) >> (32 - h), as
    // the low 32 bits of acc - low are zero (h <= 15).
    uint64_t gains = *q++;
#pragma GCC unroll 4
    for (int i = 0; i < M; i++) {
      uint64_t down = lane_shift(gains, i);
#pragma GCC unroll 4
      for (int k = 0; k < R; k++) tot[k][i] += int64_t(s[k][i] - uint64_t(low_lane(s[k][i]))) >> down;
    }
  }
}

// Rows r0..r1-1 times the crosswise block of M items at x[0], m of them
// written: 4 rows per call of cross_block_row, then one by one.
template <int M>
[[gnu::noinline]] void cross_block_range(const Matrix& w, const ActVec* x, uint32_t m, uint32_t r0, uint32_t r1,
                                         float* y, size_t stride) {
  uint32_t n = w.cols, g = group_of(w, x[0]);
  float factor[M];
  for (uint32_t i = 0; i < m; i++) factor[i] = int8_item_factor(x[i]);
  for (uint32_t r = r0; r < r1;) {
    int64_t tot[4][M];
    for (auto& row : tot)
      for (auto& t : row) t = 0;
    const int8_t* p0 = w.q + size_t(r) * n;
    uint32_t rows = r1 - r >= 4 ? 4 : 1;
    if (rows == 4) cross_block_row<4, M>(p0, n, x[0].cross_block, g, tot);
    else cross_block_row<1, M>(p0, n, x[0].cross_block, g, tot);
    for (uint32_t k = 0; k < rows; k++) {
      float scale = w.scale(r + k);
      for (uint32_t i = 0; i < m; i++)
        y[i * stride + (r + k - r0)] = finish_int8_with(tot[k][i] - x[i].cross_fix, factor[i], scale);
    }
    r += rows;
  }
}

// Packs the m items x[0..m) crosswise: word [k][j] of item i is q[8k + j] *
// 2^32 + q[8k + j + 4], as pack_int8_batch packs one item. One item: that
// stream alone (cross_4 reads the gains from x.shift). Several: interleaved,
// [k][j][i], and after each group's words one gain word (byte i: 32 - h for
// item i's shift h = kMaxShift - k of that group, see cross_block_rows).
// Each item's cross_fix: the 128 * sum(q) the flipped weights add.
void pack_cross(ActVec* x, uint32_t m, uint32_t cols, uint32_t g, uint64_t* out) {
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < cols; c0 += g, gi++) {
    uint32_t c1 = c0 + g < cols ? c0 + g : cols;
    uint64_t gains = 0;
    for (uint32_t i = 0; i < m; i++) {
      const int8_t* q = x[i].q;
      for (uint32_t k = c0 / 8; k < c1 / 8; k++)
        for (uint32_t j = 0; j < 4; j++)
          out[(4 * size_t(k - c0 / 8) + j) * m + i] =
              (uint64_t(int64_t(q[8 * k + j])) << 32) + uint64_t(int64_t(q[8 * k + j + 4]));
      int64_t sum = 0;
      for (uint32_t c = c0; c < c1; c++) sum += q[c];
      uint32_t h = kMaxShift - x[i].shift[gi];
      x[i].cross_fix = (c0 == 0 ? 0 : x[i].cross_fix) + ((128 * sum) << h);
      gains |= uint64_t(32 - h) << (8 * i);
    }
    out += size_t(c1 - c0) / 2 * m;
    if (m > 1) *out++ = gains;
  }
}

// Packs columns c0..c1 of the items x[0..lp) (lp <= L) into one packed word
// per column, at o, o + step, ...; lanes past lp hold zeros. Once per
// product, item and column, on one hart: a full word has its own loop
// (3 loads, 2 shifts, 2 adds, 1 store per column).
template <int L>
void pack_columns(const ActVec* x, uint32_t lp, uint32_t c0, uint32_t c1, int64_t* o, size_t step) {
  constexpr int64_t k1 = int64_t(1) << lane_bits(L);              // lane 1's place value
  constexpr int64_t k2 = L == 3 ? int64_t(1) << (2 * lane_bits(L)) : 0;  // lane 2's (triples)
  if (lp == uint32_t(L)) {
    const int8_t *q0 = x[0].q, *q1 = x[1].q, *q2 = x[L - 1].q;
    for (uint32_t c = c0; c < c1; c++, o += step) {
      int64_t v = q0[c] + q1[c] * k1;
      if constexpr (L == 3) v += q2[c] * k2;
      *o = v;
    }
    return;
  }
  for (uint32_t c = c0; c < c1; c++, o += step) {  // the short last word of a batch
    int64_t v = 0;
    for (uint32_t l = lp; l-- > 0;) v = v * k1 + x[l].q[c];
    *o = v;
  }
}

}  // namespace

uint32_t int8_packed(const Matrix& w, const ActVec* x, uint32_t left, uint32_t r0, uint32_t r1, float* y,
                     size_t stride) {
  if (x[0].cross_block) {  // two items crosswise
    uint32_t m = left < 2 ? left : 2;
    cross_block_range<2>(w, x, m, r0, r1, y, stride);
    return m;
  }
  uint32_t lanes = lanes_of(x[0]);
  if (!lanes) return 0;
  uint32_t items = x[0].block_items, m = left < items ? left : items;
  uint32_t words = (items + lanes - 1) / lanes, blocks = (r1 - r0) / 4;
  if (blocks) kRows4Range[lanes - 2][words - 1](w, x, m, r0, blocks, y, stride);
  for (uint32_t r = r0 + 4 * blocks; r < r1; r++) {
    if (lanes == 3) row_one_block<3>(w, x, m, words, r, y + (r - r0), stride);
    else row_one_block<2>(w, x, m, words, r, y + (r - r0), stride);
  }
  return m;
}

void int8_cross(const Matrix& w, const ActVec& x, uint32_t r0, uint32_t r1, float* y) {
  uint32_t blocks = (r1 - r0) / 4;
  if (blocks) cross_4(w, x, r0, blocks, y);
  for (uint32_t r = r0 + 4 * blocks; r < r1; r++) cross_1(w, x, r, y + (r - r0));
}

void pack_int8_batch(ActVec* x, uint32_t n, int64_t* pair_mem, size_t pair_stride, uint64_t* cross_mem) {
  for (uint32_t i = 0; i < n; i++) {
    x[i].pair = nullptr;
    x[i].triple = nullptr;
    x[i].cross = nullptr;
    x[i].cross_block = nullptr;
    x[i].block_items = 0;
  }
  if (n == 0 || !x[0].q) return;
  uint32_t cols = x[0].n, g = x[0].group ? x[0].group : cols;
  if (cols % 8 || g % 8) return;
  if (n == 1) {  // one item: crosswise, two columns per multiply
    pack_cross(x, 1, cols, g, cross_mem);
    x[0].cross = cross_mem;
    return;
  }
  // Several items: three per word when a block's sum fits 21 bits (g <= 64),
  // else two per word; a short last word has zero lanes. Blocks of up to
  // kBlockWords words, interleaved: per group, column by column the block's
  // words, then one gain word per word (see ActVec in matvec.h).
  uint32_t lanes = g <= 64 ? 3 : 2, bits = lane_bits(int(lanes));
  uint32_t groups = (cols + g - 1) / g;
  if (size_t(cols) + groups > pair_stride) return;  // no room for the gains: the plain kernel runs
  for (uint32_t b = 0; b < n; b += kBlockWords * lanes) {
    uint32_t items = n - b < kBlockWords * lanes ? n - b : kBlockWords * lanes;
    uint32_t words = (items + lanes - 1) / lanes;
    int64_t* out = pair_mem + size_t(b / lanes) * pair_stride;  // the block's words' room, contiguous
    if (items <= 2) {
      // Crosswise (see "two items crosswise"): at most cols + groups words,
      // in the room at b / lanes, which exists (ceil(n / 2) rooms) and holds
      // int8_pack_stride(cols) >= cols + groups words.
      auto* words_out = reinterpret_cast<uint64_t*>(out);
      pack_cross(x + b, items, cols, g, words_out);
      if (items == 1) {
        x[b].cross = words_out;
      } else {
        x[b].cross_block = words_out;
        x[b].block_items = items;
      }
      continue;
    }
    for (uint32_t v = 0; v < words; v++) {
      const ActVec* xv = x + b + v * lanes;
      uint32_t lp = items - v * lanes < lanes ? items - v * lanes : lanes;  // items in this word
      uint32_t gi = 0;
      for (uint32_t c0 = 0; c0 < cols; c0 += g, gi++) {
        uint32_t c1 = c0 + g < cols ? c0 + g : cols;
        // Column c of group gi is at slot c + gi of the stream (each earlier
        // group added one slot of gain words); a slot holds the block's words.
        int64_t* o = out + size_t(c0 + gi) * words + v;
        if (lanes == 3) pack_columns<3>(xv, lp, c0, c1, o, words);
        else pack_columns<2>(xv, lp, c0, c1, o, words);
        uint64_t gains = 0;
        for (uint32_t l = 0; l < lp; l++) {
          uint32_t h = kMaxShift - xv[l].shift[gi];
          gains |= uint64_t(l == 0 ? 64 - bits - h : h) << (8 * l);
        }
        out[size_t(c1 + gi) * words + v] = int64_t(gains);
      }
    }
    if (lanes == 3) x[b].triple = out;
    else x[b].pair = out;
    x[b].block_items = items;
  }
  // Every lane's sum started at 2^(bits-1) in every group: the bias each
  // item's total carries.
  for (uint32_t i = 0; i < n; i++) {
    int64_t fix = 0;
    for (uint32_t gi = 0; gi < groups; gi++) fix += (int64_t(1) << (bits - 1)) << (kMaxShift - x[i].shift[gi]);
    x[i].lane_fix = fix;
  }
}

}  // namespace llm
