// Row jobs (see llm_rows.h): the share of 4-row blocks each part computes,
// and the three kinds of job (independent products, gate and up with the
// SwiGLU epilogue, the classifier's argmax).
#include "llm_rows.h"
#include "llm_math.h"

namespace llm {
namespace {

// The kernels' row block: a part's rows start at a multiple of it.
constexpr uint32_t kRowBlock = 4;

uint64_t blocks_of(uint32_t rows) { return (uint64_t(rows) + kRowBlock - 1) / kRowBlock; }

// The first row of block b of a matrix with `rows` rows (its end, past the
// last block).
uint32_t block_row(uint64_t b, uint32_t rows) {
  uint64_t r = b * kRowBlock;
  return r < rows ? uint32_t(r) : rows;
}

// Part p of `parts` gets blocks [B p / parts, B (p+1) / parts) of B: the
// shares differ by at most one block, and together they cover each block
// exactly once.
struct Share {
  uint64_t b0, b1;
};
Share share_of(uint64_t blocks, uint32_t part, uint32_t parts) {
  return {blocks * part / parts, blocks * (part + 1) / parts};
}

// The rows [r0, r1) of a matrix of `rows` rows that part p computes when the
// matrix alone is cut into `parts` (r0 == r1: none).
struct RowRange {
  uint32_t r0, r1;
};
RowRange rows_of_part(uint32_t rows, uint32_t part, uint32_t parts) {
  Share s = share_of(blocks_of(rows), part, parts);
  return {block_row(s.b0, rows), block_row(s.b1, rows)};
}

uint64_t product_macs(const Matrix& w, uint32_t n) { return uint64_t(w.rows) * w.cols * n; }

void run_job(const Parallel* par, uint32_t parts, void (*fn)(void*, uint32_t), void* job, uint64_t macs) {
  if (parts == 1) fn(job, 0);
  else par->run(par->ctx, parts, fn, job, macs);
}

struct ProductsJob {
  const MatvecOps* ops;
  const Product* list;
  uint32_t count;
  const ActVec* a;
  uint32_t n, parts;
  uint64_t blocks;   // all products' blocks together

  // The part's share of the concatenation, cut back into each product's own
  // blocks: one matmul call per product it touches.
  static void part(void* self, uint32_t part) {
    auto* j = static_cast<const ProductsJob*>(self);
    Share s = share_of(j->blocks, part, j->parts);
    uint64_t first = 0;   // the product's first block in the concatenation
    for (uint32_t k = 0; k < j->count && first < s.b1; k++) {
      const Product& p = j->list[k];
      uint64_t end = first + blocks_of(p.w->rows);
      uint64_t lo = s.b0 > first ? s.b0 : first, hi = s.b1 < end ? s.b1 : end;
      if (lo < hi) {
        uint32_t r0 = block_row(lo - first, p.w->rows), r1 = block_row(hi - first, p.w->rows);
        j->ops->matmul(*p.w, j->a, j->n, p.y + r0, p.stride, r0, r1);
      }
      first = end;
    }
  }
};

struct SwigluJob {
  const MatvecOps* ops;
  const Product* gate;
  const Product* up;
  const ActVec* a;
  uint32_t n, parts;

  // The SwiGLU step is element-wise, so running it in the parts (each on its
  // own rows) changes no bit, and every hart of the team does its share
  // instead of one hart after the job (under QEMU silu's float work costs
  // about as much real time as a small product).
  static void part(void* self, uint32_t part) {
    auto* j = static_cast<const SwigluJob*>(self);
    auto [r0, r1] = rows_of_part(j->gate->w->rows, part, j->parts);
    if (r0 >= r1) return;
    size_t stride = j->gate->stride;
    j->ops->matmul(*j->gate->w, j->a, j->n, j->gate->y + r0, stride, r0, r1);
    j->ops->matmul(*j->up->w, j->a, j->n, j->up->y + r0, stride, r0, r1);
    for (uint32_t i = 0; i < j->n; i++) {
      float* g = j->gate->y + i * stride;
      const float* u = j->up->y + i * stride;
      for (uint32_t r = r0; r < r1; r++) g[r] = silu_f(g[r]) * u[r];
    }
  }
};

struct ArgmaxJob {
  const MatvecOps* ops;
  const Matrix* w;
  const ActVec* a;
  uint32_t n, parts;
  ArgMax* part_best;   // [parts][n]

  static void part(void* self, uint32_t part) {
    auto* j = static_cast<const ArgmaxJob*>(self);
    auto [r0, r1] = rows_of_part(j->w->rows, part, j->parts);
    if (r0 < r1) j->ops->argmax_batch(*j->w, j->a, j->n, j->part_best + size_t(part) * j->n, r0, r1);
  }
};

}  // namespace

uint32_t parts_of(const Parallel* p) {
  if (!p || !p->run || p->parts <= 1) return 1;
  return p->parts < kMaxParts ? p->parts : kMaxParts;
}

void run_products(const MatvecOps& ops, const Parallel* par, const Product* list, uint32_t count,
                  const ActVec* a, uint32_t n) {
  ProductsJob job{&ops, list, count, a, n, parts_of(par), 0};
  uint64_t macs = 0;
  for (uint32_t k = 0; k < count; k++) {
    job.blocks += blocks_of(list[k].w->rows);
    macs += product_macs(*list[k].w, n);
  }
  run_job(par, job.parts, ProductsJob::part, &job, macs);
}

void run_swiglu(const MatvecOps& ops, const Parallel* par, const Product& gate, const Product& up,
                const ActVec* a, uint32_t n) {
  SwigluJob job{&ops, &gate, &up, a, n, parts_of(par)};
  run_job(par, job.parts, SwigluJob::part, &job, product_macs(*gate.w, n) + product_macs(*up.w, n));
}

// argmax_beats is a total order, so the parts' winners combined in row
// order give the winner of one scan over all rows.
void run_argmax(const MatvecOps& ops, const Parallel* par, const Matrix& w, const ActVec* a, uint32_t n,
                ArgMax* part_best, ArgMax* best) {
  ArgmaxJob job{&ops, &w, a, n, parts_of(par), part_best};
  run_job(par, job.parts, ArgmaxJob::part, &job, product_macs(w, n));
  for (uint32_t i = 0; i < n; i++) {
    bool have = false;
    for (uint32_t p = 0; p < job.parts; p++) {
      RowRange r = rows_of_part(w.rows, p, job.parts);
      if (r.r0 >= r.r1) continue;   // a part with no rows wrote nothing
      const ArgMax& b = part_best[size_t(p) * n + i];
      if (!have || argmax_beats(b.value, best[i].value)) best[i] = b;
      have = true;
    }
  }
}

}  // namespace llm
