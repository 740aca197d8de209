// calib [--iterations N] [--harts H]: a fixed piece of integer work, timed.
//
//   calib: 4000000 iterations in 123456 us (checksum 1234567)
//
// With --harts H, H processes (this one and H-1 children) run the same loop
// at once, and the line gives the slowest of them, "(checksum C, slowest of
// H)". Why: a measurement that keeps two harts busy needs two host cores,
// and when something else on the host takes one of them, a single calib
// still finds a free core and reads as fast as ever, while the two-hart run
// it was meant to vouch for slows down (docs/notebook/2026-12-runtime-tuning.md,
// "Late on 2026-12-04").
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

// The loop; returns its time in us and its checksum.
uint64_t timed_loop(uint32_t iterations, int32_t* checksum) {
  uint64_t t0 = clock_ns();
  int32_t acc = 0;
  uint32_t x = 12345;
  for (uint32_t i = 0; i < iterations; i++) {
    x = x * 1664525u + 1013904223u;              // a cheap pseudo-random index
    acc += int32_t(table[x >> 20]) * int32_t(table[i & (kTable - 1)]);
  }
  *checksum = acc;
  return (clock_ns() - t0) / 1000;
}

bool parse_count(const char* flag, const char* text, unsigned long max, uint32_t* out) {
  char* end = nullptr;
  unsigned long n = strtoul(text, &end, 10);
  if (*end != 0 || n == 0 || n > max) {
    fprintf(2, "calib: %s %s: want a whole number 1..%lu\n", flag, text, max);
    return false;
  }
  *out = static_cast<uint32_t>(n);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t iterations = kDefaultIterations;
  uint32_t harts = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      if (!parse_count("--iterations", argv[++i], 4'000'000'000ul, &iterations)) return 2;
    } else if (strcmp(argv[i], "--harts") == 0 && i + 1 < argc) {
      if (!parse_count("--harts", argv[++i], 8, &harts)) return 2;
    } else {
      fprintf(2, "calib: unknown argument %s\nusage: calib [--iterations N] [--harts H]\n", argv[i]);
      return 2;
    }
  }
  for (uint32_t i = 0; i < kTable; i++) table[i] = static_cast<int8_t>(i * 37 + 11);

  // Each child writes its time (8 bytes) to the pipe; all start about
  // together, as soon as each is forked.
  int times[2];
  if (harts > 1 && pipe(times) < 0) {
    fprintf(2, "calib: pipe failed\n");
    return 1;
  }
  uint32_t children = 0;
  for (; children + 1 < harts; children++) {
    int pid = fork();
    if (pid < 0) {
      fprintf(2, "calib: fork failed: %s\n", strerror(pid));
      return 1;
    }
    if (pid == 0) {
      close(times[0]);
      int32_t sum;
      uint64_t us = timed_loop(iterations, &sum);
      write(times[1], &us, sizeof us);
      exit(0);
    }
  }
  int32_t acc;
  uint64_t us = timed_loop(iterations, &acc);
  if (harts > 1) {
    close(times[1]);
    for (uint32_t k = 0; k < children; k++) {
      uint64_t theirs = 0;
      if (read(times[0], &theirs, sizeof theirs) != sizeof theirs) {
        fprintf(2, "calib: a child did not report its time\n");
        return 1;
      }
      if (theirs > us) us = theirs;
    }
    for (uint32_t k = 0; k < children; k++) wait(nullptr);
    printf("calib: %u iterations in %lu us (checksum %d, slowest of %u)\n", iterations, (unsigned long)us, acc,
           harts);
    return 0;
  }
  printf("calib: %u iterations in %lu us (checksum %d)\n", iterations, (unsigned long)us, acc);
  return 0;
}
