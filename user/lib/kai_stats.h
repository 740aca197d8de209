// Order statistics for the benchmarks and test drivers: one sort and one
// percentile rule (nearest rank), so that every program's p50 and p95 mean
// the same thing (tools/benchlib/latency.py's percentile is the host's).
#pragma once
#include <stddef.h>
#include <stdint.h>

// Sorts v[0..n) ascending.
void sort_u64(uint64_t* v, size_t n);

// The p-th percentile (0..100) of n sorted values, nearest rank: the
// smallest value with at least p% of the values at or below it (p50 of an
// even count is the lower middle one). 0 when n is 0.
uint64_t percentile(const uint64_t* sorted, size_t n, uint32_t p);
