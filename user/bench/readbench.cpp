// readbench FILE [BUFSIZE [PASSES]]: reads FILE sequentially with a BUFSIZE
// buffer (default 1M; suffixes K and M), then measures the guest's memcpy
// bandwidth on a 64 MiB copy (64-bit loads and stores), and prints the ratio:
// how close file reading comes to moving bytes in RAM. Both are measured
// PASSES times (default 3) and the best of each counts: QEMU's speed on a
// shared machine varies a lot from one moment to the next.
#include "kai.h"

static long parse_size(const char* s) {
  char* end;
  long v = strtol(s, &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10;
  else if (*end == 'M' || *end == 'm') v <<= 20;
  else if (*end != 0) return -1;
  return v;
}

static double mib_per_s(uint64_t bytes, uint64_t ns) {
  return ns ? (double)bytes / (1024.0 * 1024.0) / ((double)ns / 1e9) : 0.0;
}

// A plain word-by-word copy; the empty asm keeps the compiler from turning
// it into a call to memcpy, so we measure exactly this loop.
static void copy_words(uint64_t* dst, const uint64_t* src, size_t words) {
  for (size_t i = 0; i < words; i += 8) {
    uint64_t a = src[i], b = src[i + 1], c = src[i + 2], d = src[i + 3];
    uint64_t e = src[i + 4], f = src[i + 5], g = src[i + 6], h = src[i + 7];
    dst[i] = a; dst[i + 1] = b; dst[i + 2] = c; dst[i + 3] = d;
    dst[i + 4] = e; dst[i + 5] = f; dst[i + 6] = g; dst[i + 7] = h;
    asm volatile("" ::: "memory");
  }
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fprintf(2, "usage: readbench FILE [BUFSIZE [PASSES]]\n");
    return 2;
  }
  long bufsize = argc >= 3 ? parse_size(argv[2]) : 1 << 20;
  if (bufsize <= 0) {
    fprintf(2, "readbench: bad buffer size %s\n", argv[2]);
    return 2;
  }
  char* buf = static_cast<char*>(aligned_alloc(4096, bufsize));
  if (!buf) {
    fprintf(2, "readbench: cannot allocate %ld bytes\n", bufsize);
    return 1;
  }
  memset(buf, 1, bufsize);
  int passes = argc == 4 ? int(number_option("readbench", "PASSES", argv[3], 1, 1000)) : 3;
  uint64_t total = 0, best_ns = ~0ull;
  for (int pass = 0; pass < passes; pass++) {
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
      fprintf(2, "readbench: %s: %s\n", argv[1], strerror(fd));
      return 1;
    }
    total = 0;
    uint64_t t0 = clock_ns();
    long n;
    while ((n = read(fd, buf, bufsize)) > 0) total += n;
    uint64_t t1 = clock_ns();
    close(fd);
    if (n < 0) {
      fprintf(2, "readbench: %s: %s\n", argv[1], strerror(n));
      return 1;
    }
    if (t1 - t0 < best_ns) best_ns = t1 - t0;
  }
  double read_bw = mib_per_s(total, best_ns);
  printf("readbench: %s: %lu bytes in %lu ms with a %ld-byte buffer: %.1f MiB/s (best of %d)\n", argv[1],
         (unsigned long)total, (unsigned long)(best_ns / 1000000), bufsize, read_bw, passes);

  constexpr size_t COPY = 64u << 20;
  uint64_t* src = static_cast<uint64_t*>(aligned_alloc(4096, COPY));
  uint64_t* dst = static_cast<uint64_t*>(aligned_alloc(4096, COPY));
  if (!src || !dst) {
    fprintf(2, "readbench: cannot allocate 2 x 64 MiB for the memcpy measurement\n");
    return 1;
  }
  memset(src, 3, COPY);
  memset(dst, 0, COPY);
  uint64_t best_copy = ~0ull;
  for (int pass = 0; pass < passes; pass++) {
    uint64_t c0 = clock_ns();
    copy_words(dst, src, COPY / 8);
    uint64_t c1 = clock_ns();
    if (c1 - c0 < best_copy) best_copy = c1 - c0;
  }
  double copy_bw = mib_per_s(COPY, best_copy);
  printf("readbench: memcpy of 64 MiB: %.1f MiB/s (best of %d)\n", copy_bw, passes);
  printf("readbench: read/memcpy ratio: %.2f\n", copy_bw > 0 ? read_bw / copy_bw : 0.0);
  return 0;
}
