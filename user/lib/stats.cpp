// kai_stats.h: sorting and percentiles for the benchmarks.
#include "kai_stats.h"
#include "kai_stdlib.h"

namespace {
int compare_u64(const void* a, const void* b) {
  uint64_t x = *static_cast<const uint64_t*>(a), y = *static_cast<const uint64_t*>(b);
  return x < y ? -1 : x > y;
}
}  // namespace

void sort_u64(uint64_t* v, size_t n) { qsort(v, n, sizeof(uint64_t), compare_u64); }

uint64_t percentile(const uint64_t* sorted, size_t n, uint32_t p) {
  if (n == 0) return 0;
  size_t rank = (size_t(p) * n + 99) / 100;   // ceil(p n / 100)
  return sorted[rank == 0 ? 0 : rank - 1];
}
