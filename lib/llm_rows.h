// Matrix products cut into parts by rows: how the batched forward pass
// (llm_batch.h) hands its products to a row team (the kernel's harts, or
// threads in the host tests), and why the cut changes no bit.
//
// A *job* is one call of Parallel::run: the runner calls fn(arg, part) for
// every part, perhaps on several harts at once, and returns when all are
// done. Every job is a hand-off between harts and costs real time whatever
// its size (the worker posts it, the helpers wake or stop spinning, the
// worker waits for the last part, and a hart idles while that last part
// finishes). So products that read the same input vectors and do not depend
// on each other go out as ONE job:
//   run_products  independent products: attention's q, k and v, DeltaNet's
//                 in_qkv, in_z, in_a and in_b. A part takes its share of all
//                 the products' 4-row blocks laid end to end.
//   run_swiglu    the MLP's gate and up, then gate = silu(gate) * up. A part
//                 takes rows r0..r1 of both, then the epilogue on those rows
//                 (it needs the same rows of both, so the two matrices are cut
//                 in step rather than laid end to end).
//   run_argmax    the classifier: each part's best row per item, combined in
//                 row order.
// A Llama layer is then four jobs (q|k|v, o, gate|up, down) instead of
// seven, a DeltaNet layer four instead of eight.
//
// Why no cut changes a bit: every row of every product is computed by
// exactly one part, in one ops.matmul call over a row range that starts at
// a multiple of 4 of its own matrix (the kernels' row blocks, so a block
// never straddles two parts), and the kernels compute each (row, item) the
// same way whatever the range (matvec.h). Fusing, the number of parts, who
// runs a part and in which order decide only where a row is computed.
//
//   Product qkv[] = {{&L.wq, q, q_stride}, {&L.wk, k, kv_stride}, {&L.wv, v, kv_stride}};
//   run_products(ops, par, qkv, 3, a, n);    // one hand-off, not three
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "matvec.h"

namespace llm {

// Runs fn(arg, part) for part in [0, parts) possibly in parallel, returns when
// all are done. The kernel implements it with harts, host tests with
// std::thread; nullptr run (or parts 1) = serial on the caller. `macs` is the
// job's size in multiply-adds, so a runner can tell how fast it went.
struct Parallel {
  uint32_t parts = 1;
  void* ctx = nullptr;
  void (*run)(void* ctx, uint32_t parts, void (*fn)(void* arg, uint32_t part), void* arg, uint64_t macs) = nullptr;
};
constexpr uint32_t kMaxParts = 16;  // parts beyond this are not used

// The parts a job is cut into under p: 1 when there is no runner.
uint32_t parts_of(const Parallel* p);

// One matrix product of a job: y[i * stride + r] = (w a[i])[r] for every
// item i and row r of w.
struct Product {
  const Matrix* w;
  float* y;
  size_t stride;   // floats from one item's row of y to the next
};

// The products list[0..count), all over the same n prepared input vectors
// a[0..n) (so all have a's column count), as one job on par's parts. The
// products must write disjoint memory.
void run_products(const MatvecOps& ops, const Parallel* par, const Product* list, uint32_t count,
                  const ActVec* a, uint32_t n);

// gate and up (matrices of the same shape) over a[0..n) as one job, then
// gate.y[i * stride + r] = silu(gate.y) * up.y, row by row, in the same
// parts. gate.stride == up.stride.
void run_swiglu(const MatvecOps& ops, const Parallel* par, const Product& gate, const Product& up,
                const ActVec* a, uint32_t n);

// best[i] = argmax over the rows of w a[i] (argmax_beats: the lowest index
// wins ties), for i in [0, n). part_best holds kMaxParts * n scratch entries.
void run_argmax(const MatvecOps& ops, const Parallel* par, const Matrix& w, const ActVec* a, uint32_t n,
                ArgMax* part_best, ArgMax* best);

}  // namespace llm
