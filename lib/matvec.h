// Matrix products and the classifier argmax: the only place where the
// forward pass touches weight matrices, so faster kernels (hand-unrolled,
// multi-hart by row ranges, ...) plug in here without changing the model code.
// The seam is matrix x matrix: one weight matrix times the activation vectors
// of n items (tokens) of a batch; the vector case is n == 1. A kernel loads
// each weight once per call and uses it for every item: that is what makes
// prefill and batched decode cheaper per token than one token at a time.
// Every kernel computes each (row, item) value with the same operations in the
// same order whatever n, the row range or the kernel's blocking: results are
// bit-identical to the single-vector case.
//
// Two kernel sets exist:
//   kMatvecFloat: exact course semantics, y[r] = scale[r] * sum_c q[r][c]*x[c]
//                 with float activations (or plain float weights for f32 bundles).
//   kMatvecInt8:  x is first quantised to int8 in blocks of `group` values
//                 that share one vector scale S = max|x|/127 and have each a
//                 power-of-two gain 2^k (k <= 15, the largest that keeps the
//                 block within int8): x[c] ~ q[c] * S / 2^k. A row's block
//                 sums (int32) are shifted into one int64 total, so the inner
//                 loops never touch floats; one float multiply per row at the
//                 end. ~10x faster under QEMU (qemu-facts.md) than floats;
//                 f32 weights fall back to the float kernel.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "llm_util.h"

namespace llm {

// A weight matrix inside caller-owned bundle bytes (zero-copy).
struct Matrix {
  const uint8_t* scales = nullptr;  // q8: float32[rows], possibly unaligned
  const int8_t* q = nullptr;        // q8: int8[rows*cols], row-major
  const float* f = nullptr;         // f32 format: float[rows*cols], row-major
  uint32_t rows = 0, cols = 0;

  float scale(uint32_t r) const { return load_f32(scales + 4 * size_t(r)); }
  // Dequantised element (slow path: embedding rows, tests).
  float at(uint32_t r, uint32_t c) const {
    size_t i = size_t(r) * cols + c;
    return f ? f[i] : float(q[i]) * scale(r);
  }
};

// An activation vector, optionally with its int8 quantisation.
struct ActVec {
  const float* x = nullptr;
  uint32_t n = 0;
  const int8_t* q = nullptr;       // int8 kernels: quantised x
  const uint8_t* shift = nullptr;  // per group: k, x ~ q * scale / 2^k
  float scale = 0;                 // S = max|x| / 127
  uint32_t group = 0;              // values per group (the last one may be shorter)
  // Packed copies of q for the register-blocked int8 kernels (matmul_int8.cpp),
  // made by pack_int8_batch; null: not packed (the plain int8 kernel runs).
  // Several items are packed in blocks of up to 3 words, a word holding the
  // q of 2 items (pair: q[c] + q'[c] * 2^32) or 3 (triple: q[c] + q'[c] *
  // 2^21 + q''[c] * 2^42; q', q'' the next items', 0 past the last item).
  // A block's stream, per group of columns: for each column c the block's
  // words at c, then one gain word per word (its lanes' shifts for the group).
  // pair/triple/block_items are set on the first item of a block only.
  const int64_t* pair = nullptr;    // the stream of the pairs block that starts here
  const int64_t* triple = nullptr;  // the stream of the triples block that starts here
  uint32_t block_items = 0;         // items in that block (up to 6 pairs or 9 triples)
  int64_t lane_fix = 0;             // the lane bias in this item's packed totals (matmul_int8.cpp)
  const uint64_t* cross = nullptr;  // [n/8][4] q[8k+j] * 2^32 + q[8k+j+4], j < 4 (mod 2^64)
  int64_t cross_fix = 0;            // sum over groups of 128 * (sum of the group's q) << (15 - k)
  // A block of 2 items packed crosswise (set on its first item, with
  // block_items = 2): per group of columns, item i's word of `cross` at
  // [k][j][i] (so one pointer walks both items' words), then one gain word.
  // 2 items cost less this way than in a word of triples (matmul_int8.cpp).
  // Each item has its cross_fix.
  const uint64_t* cross_block = nullptr;
};

struct ArgMax {
  uint32_t index = 0;
  float value = 0;
};

// The argmax order: a larger value wins, NaN loses to every number, equal
// values keep the lower index (callers scan rows upwards). It is a total
// order, so the best of several row ranges combined in row order equals the
// best of one scan: row ranges can run on different harts.
inline bool argmax_beats(float v, float best) { return v > best || (best != best && v == v); }

enum class MatvecKind : uint8_t { Float = 0, Int8 = 1 };

struct MatvecOps {
  const char* name;
  MatvecKind kind;
  // y[r] for r in [r0, r1) (y indexed from 0 at row 0, i.e. y[r] not y[r-r0]).
  void (*matvec)(const Matrix& w, const ActVec& x, float* y, uint32_t r0, uint32_t r1);
  // argmax over rows [r0, r1) of w x; the lowest index wins ties.
  ArgMax (*argmax)(const Matrix& w, const ActVec& x, uint32_t r0, uint32_t r1);
  // The batch forms: items i < n, rows r in [r0, r1).
  //   matmul:        y[i * y_stride + (r - r0)] = (w x[i])[r]   (y starts at row r0)
  //   argmax_batch:  best[i] = argmax over [r0, r1) of w x[i]
  // All x[i] are prepared the same way (all int8-quantised or all float).
  void (*matmul)(const Matrix& w, const ActVec* x, uint32_t n, float* y, size_t y_stride, uint32_t r0,
                 uint32_t r1);
  void (*argmax_batch)(const Matrix& w, const ActVec* x, uint32_t n, ArgMax* best, uint32_t r0, uint32_t r1);
};

// argmax_batch works through this many items at a time (stack buffer).
constexpr uint32_t kMaxArgmaxItems = 18;  // a multiple of 6 and 9: packed blocks stay whole

extern const MatvecOps kMatvecFloat;
extern const MatvecOps kMatvecInt8;
const MatvecOps& matvec_ops(MatvecKind kind);

// Quantise x[0..n) into q (int8[n]) and shift (uint8[ceil(n/group)]).
// group == 0 means one group for the whole vector.
constexpr uint32_t kMaxShift = 15;
ActVec quantize_act(const float* x, uint32_t n, uint32_t group, int8_t* q, uint8_t* shift);
// Packs the prepared int8 vectors x[0..n) for the fast kernels: one item
// crosswise into cross_mem ([n/8][4] words); several in triples (0,1,2),
// (3,4,5), ... when group <= 64, else pairs (0,1), (2,3), ..., a short last
// word padded with zeros; words in blocks of 3 (items 0-8, 9-17, ... or
// 0-5, 6-11, ...), block b in the room of words 3b.. at pair_mem +
// 3b * pair_stride (ceil(n/2) rooms of pair_stride int64 values, at least
// int8_pack_stride(vector length)). A last block of 1 or 2 items is
// packed crosswise instead (cross, or cross_block), in the same rooms.
// Only when the shape allows it (vector length % 8 == 0, group % 8 == 0)
// and the rooms are big enough; otherwise nothing is packed (the plain
// kernel runs).
void pack_int8_batch(ActVec* x, uint32_t n, int64_t* pair_mem, size_t pair_stride, uint64_t* cross_mem);
// The pair_stride that vectors of up to `cols` values need: every column
// and one gain word per group (groups of at least 8 values).
constexpr size_t int8_pack_stride(uint32_t cols) { return size_t(cols) + (cols + 7) / 8; }

// total * S / 2^kMaxShift * row scale: the float end of every int8 kernel.
// The item's factor S / 2^kMaxShift is the same for every row, so a kernel
// that finishes many rows of one item computes it once (int8_item_factor)
// and calls finish_int8_with: the same operations in the same order, so the
// same bits, with one float multiply fewer per output. Under QEMU each
// float multiply costs about ten integer instructions, and a batched kernel
// finishes an output every few hundred instructions.
inline float int8_item_factor(const ActVec& x) { return x.scale * (1.0f / float(1u << kMaxShift)); }
inline float finish_int8_with(int64_t total, float item_factor, float row_scale) {
  return float(total) * item_factor * row_scale;
}
inline float finish_int8(int64_t total, const ActVec& x, float row_scale) {
  return finish_int8_with(total, int8_item_factor(x), row_scale);
}

}  // namespace llm
