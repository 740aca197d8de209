// calib [--iterations N]: a fixed piece of integer work, timed.
//
//   calib: 4000000 iterations in 123456 us (checksum 1234567)
//
// The host-noise check of tools/bench.py. In real-time mode a guest hart is
// a host thread, so whatever else the host runs slows the guest down, and a
// measurement cannot tell "the code got slower" from "the host was busy".
// calib always does exactly the same work (an int8 multiply-add loop like
// the runtime's inner loop, over a 4 KiB table that stays in the cache, no
// system calls inside the loop), so any change in its time between runs is
// the host's doing. bench.py runs it just before and just after each sweep
// point in the same boot and flags the point if the two differ too much.
// The checksum is printed so the compiler cannot drop the work.
#include "kai.h"

namespace {

constexpr uint32_t kDefaultIterations = 4'000'000;
constexpr uint32_t kTable = 4096;

int8_t table[kTable];

}  // namespace

int main(int argc, char** argv) {
  uint32_t iterations = kDefaultIterations;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      char* end = nullptr;
      unsigned long n = strtoul(argv[++i], &end, 10);
      if (*end != 0 || n == 0 || n > 4'000'000'000ul) {
        fprintf(2, "calib: --iterations %s: want a whole number 1..4000000000\n", argv[i]);
        return 2;
      }
      iterations = static_cast<uint32_t>(n);
    } else {
      fprintf(2, "calib: unknown argument %s\nusage: calib [--iterations N]\n", argv[i]);
      return 2;
    }
  }
  for (uint32_t i = 0; i < kTable; i++) table[i] = static_cast<int8_t>(i * 37 + 11);

  uint64_t t0 = clock_ns();
  int32_t acc = 0;
  uint32_t x = 12345;
  for (uint32_t i = 0; i < iterations; i++) {
    x = x * 1664525u + 1013904223u;              // a cheap pseudo-random index
    acc += int32_t(table[x >> 20]) * int32_t(table[i & (kTable - 1)]);
  }
  uint64_t us = (clock_ns() - t0) / 1000;
  printf("calib: %u iterations in %lu us (checksum %d)\n", iterations, (unsigned long)us, acc);
  return 0;
}
