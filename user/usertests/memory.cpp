// usertests: memory (sbrk growing and shrinking, running out, malloc).
#include "harness.h"

using namespace ut;

namespace {

// ---------------------------------------------------------------- memory

bool t_sbrk_basic() {
  long start = sbrk(0);
  EXPECT(start > 0, "sbrk(0) = %ld", start);
  long old = sbrk(10000);
  EXPECT(old == start, "sbrk(10000) returned %ld, break was %ld", old, start);
  EXPECT(sbrk(0) == start + 10000, "break did not move by 10000");
  char* p = reinterpret_cast<char*>(start);
  for (int i = 0; i < 10000; ++i) EXPECT(p[i] == 0, "new memory not zeroed at +%d", i);
  memset(p, 0x5a, 10000);
  EXPECT(sbrk(-10000) == start + 10000, "sbrk(-10000) did not return the old break");
  EXPECT(sbrk(0) == start, "break did not shrink back");
  // Grown again: fresh zeroed memory, not the old contents.
  EXPECT(sbrk(8192) == start, "regrow");
  for (int i = 4096 - (start & 4095); i < 8192 - (start & 4095); ++i)
    EXPECT(p[i] == 0, "re-grown page not zeroed at +%d", i);
  sbrk(-8192);
  return true;
}

void touch_after_shrink() {
  long start = sbrk(0);
  long base = (start + 4095) & ~4095L;
  sbrk(base - start + 4 * 4096);
  char* p = reinterpret_cast<char*>(base);
  p[3 * 4096] = 1;
  sbrk(-(4 * 4096));
  p[3 * 4096] = 2;   // must fault: the page is gone
}

bool t_sbrk_shrink_unmaps() {
  int s = in_child(touch_after_shrink);
  EXPECT(s != 0 && s > -1000, "memory was still accessible after sbrk shrank past it (status %d)", s);
  return true;
}

bool t_sbrk_big() {
  constexpr long SIZE = 300L << 20;
  long start = sbrk(0);
  uint64_t t0 = clock_ns();
  long r = sbrk(SIZE);
  EXPECT(r == start, "sbrk(300 MiB) failed: %ld (%s)", r, r < 0 ? strerror(r) : "");
  char* p = reinterpret_cast<char*>(start);
  for (long off = 0; off < SIZE; off += 4096) p[off] = static_cast<char>(off >> 12);
  for (long off = 0; off < SIZE; off += 4096)
    EXPECT(p[off] == static_cast<char>(off >> 12), "page at +%ld lost its value", off);
  p[SIZE - 1] = 1;
  EXPECT(sbrk(-SIZE) == start + SIZE, "shrink failed");
  EXPECT(sbrk(0) == start, "break not back");
  // The memory went back to the kernel: we can take it again.
  r = sbrk(SIZE);
  EXPECT(r == start, "second sbrk(300 MiB) failed: %ld", r);
  p[SIZE - 1] = 2;
  sbrk(-SIZE);
  (void)t0;
  return true;
}

bool t_sbrk_huge_fails() {
  long start = sbrk(0);
  for (long n : {1L << 40, 1L << 36, 0x7fffffffffffffffL}) {
    long r = sbrk(n);
    EXPECT(r < 0, "sbrk(%ld) succeeded", n);
    EXPECT(sbrk(0) == start, "failed sbrk(%ld) moved the break", n);
  }
  long r = sbrk(-(start + 4096));
  EXPECT(r < 0, "sbrk below address 0 succeeded");
  EXPECT(sbrk(0) == start, "failed negative sbrk moved the break");
  return true;
}

void eat_memory() {
  // Grow 32 MiB at a time until the kernel says no, touching every page.
  long total = 0;
  for (;;) {
    long r = sbrk(32L << 20);
    if (r < 0) break;
    char* p = reinterpret_cast<char*>(r);
    for (long off = 0; off < (32L << 20); off += 4096) p[off] = 1;
    total += 32L << 20;
  }
  // Report how much we got (MiB) as the exit status; 0 means the kernel
  // never refused (which would be a failure of the test).
  exit(static_cast<int>(total >> 25));
}

bool t_out_of_memory() {
  // Exhausting memory makes sbrk fail (no panic, no kill), and exiting
  // gives everything back: a second child gets about the same amount.
  int a = in_child(eat_memory);
  EXPECT(a > 0, "first memory eater failed (status %d)", a);
  int b = in_child(eat_memory);
  EXPECT(b > 0, "second memory eater failed (status %d)", b);
  EXPECT(b >= a - 1, "memory leaked: first child got %d x 32 MiB, second only %d", a, b);
  // And fork still works afterwards.
  int pid = fork();
  if (pid == 0) exit(0);
  EXPECT(pid > 0 && reap(pid) == 0, "fork after exhausting memory failed");
  return true;
}

bool t_fork_until_fail() {
  int p[2];
  EXPECT(pipe(p) == 0, "pipe");
  int n = 0, err = 0;
  for (; n < 1000; ++n) {
    int pid = fork();
    if (pid < 0) { err = pid; break; }
    if (pid == 0) {
      close(p[1]);
      char c;
      read(p[0], &c, 1);   // blocks until the parent closes the write end
      exit(0);
    }
  }
  close(p[1]);
  close(p[0]);
  int reaped = 0;
  while (wait(nullptr) > 0) ++reaped;
  EXPECT(err < 0, "fork never failed after %d children", n);
  EXPECT(reaped == n, "forked %d, reaped %d", n, reaped);
  EXPECT(n >= 20, "only %d processes could be created", n);
  // The process table is usable again.
  int pid = fork();
  if (pid == 0) exit(0);
  EXPECT(pid > 0 && reap(pid) == 0, "fork after the table was full failed");
  return true;
}

bool t_malloc() {
  // Random sizes, checked contents, all freed; then the big-block path.
  static void* ptrs[500];
  static long sizes[500];
  uint64_t rng = kai_rng_seed(7);
  for (int round = 0; round < 20000; ++round) {
    int i = static_cast<int>(kai_rng_next(&rng) % 500);
    if (ptrs[i]) {
      unsigned char* q = static_cast<unsigned char*>(ptrs[i]);
      for (long k = 0; k < sizes[i]; k += 61)
        EXPECT(q[k] == static_cast<unsigned char>(i + k), "block %d corrupted", i);
      free(ptrs[i]);
      ptrs[i] = nullptr;
    } else {
      long n = kai_rng_next(&rng) % 16 == 0 ? kai_rng_next(&rng) % 200000 : kai_rng_next(&rng) % 300;
      unsigned char* q = static_cast<unsigned char*>(malloc(n));
      EXPECT(q, "malloc(%ld) failed", n);
      EXPECT((reinterpret_cast<uintptr_t>(q) & 15) == 0, "malloc returned a misaligned pointer");
      for (long k = 0; k < n; ++k) q[k] = static_cast<unsigned char>(i + k);
      ptrs[i] = q;
      sizes[i] = n;
    }
  }
  for (auto& q : ptrs) { free(q); q = nullptr; }
  kai_heap_stats st;
  malloc_stats(&st);
  EXPECT(st.used_bytes == 0, "%lu bytes still counted as used", (unsigned long)st.used_bytes);
  // Big blocks are reused / returned, so repeated big allocations do not grow the heap.
  for (int k = 0; k < 4; ++k) {
    char* b = static_cast<char*>(malloc(200L << 20));
    EXPECT(b, "malloc(200 MiB) #%d failed", k);
    b[0] = 1;
    b[(200L << 20) - 1] = 2;
    free(b);
  }
  malloc_stats(&st);
  EXPECT(st.heap_bytes < (16L << 20), "heap still holds %lu bytes after freeing", (unsigned long)st.heap_bytes);
  void* x = malloc(5000);
  free(x);
  void* y = malloc(5000);
  EXPECT(x == y, "freed block not reused");
  free(y);
  void* a = aligned_alloc(4096, 10000);
  EXPECT(a && (reinterpret_cast<uintptr_t>(a) & 4095) == 0, "aligned_alloc(4096) gave %p", a);
  free(a);
  char* r = static_cast<char*>(malloc(10));
  strcpy(r, "realloc");
  r = static_cast<char*>(realloc(r, 100000));
  EXPECT(r && strcmp(r, "realloc") == 0, "realloc lost the contents");
  free(r);
  return true;
}

const Test kTests[] = {
    {"sbrk_basic", t_sbrk_basic},
    {"sbrk_shrink_unmaps", t_sbrk_shrink_unmaps},
    {"sbrk_big", t_sbrk_big},
    {"sbrk_huge_fails", t_sbrk_huge_fails},
    {"out_of_memory", t_out_of_memory},
    {"fork_until_fail", t_fork_until_fail},
    {"malloc", t_malloc},
};
}  // namespace

const TestGroup ut::memory_tests = UT_GROUP(kTests);
