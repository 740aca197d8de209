// cksum FILE...: the POSIX cksum checksum (CRC-32, polynomial 0x04C11DB7,
// most significant bit first, the length appended, then complemented) and
// the size in bytes, so the result can be compared with the host's `cksum`.
// cksum --mmap FILE... reads each file through a read-only mapping instead
// of read() (the page cache's pages in place: docs/virtual-memory.md), so
// the two paths can be compared. It maps the whole file but lets go of each
// window of WINDOW bytes once summed (MADV_DONTNEED): kai never evicts a
// page while it is mapped, so a file larger than the free memory can be
// summed through a map only if the pages behind the reader are unmapped.
#include "kai.h"

static uint32_t table[8][256];

// Slicing-by-8: eight table lookups per 8 input bytes instead of one per byte.
static void make_tables() {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i << 24;
    for (int k = 0; k < 8; k++) c = (c & 0x80000000u) ? (c << 1) ^ 0x04C11DB7u : c << 1;
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) table[t][i] = (table[t - 1][i] << 8) ^ table[0][table[t - 1][i] >> 24];
}

static uint32_t update(uint32_t crc, const uint8_t* p, long n) {
  while (n >= 8) {
    uint32_t hi = crc ^ ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
    uint32_t lo = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
    crc = table[7][hi >> 24] ^ table[6][(hi >> 16) & 0xff] ^ table[5][(hi >> 8) & 0xff] ^
          table[4][hi & 0xff] ^ table[3][lo >> 24] ^ table[2][(lo >> 16) & 0xff] ^
          table[1][(lo >> 8) & 0xff] ^ table[0][lo & 0xff];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc << 8) ^ table[0][(crc >> 24) ^ *p++];
  return crc;
}

static constexpr long BUF = 1 << 20;
static constexpr long WINDOW = 8 << 20;

// The checksum of fd's bytes through a mapping; false (reported) on error.
static bool map_sum(int fd, const char* path, uint32_t* crc, uint64_t* size) {
  kai_stat st;
  int r = fstat(fd, &st);
  if (r < 0) {
    fprintf(2, "cksum: %s: %s\n", path, strerror(r));
    return false;
  }
  *size = st.size;
  if (st.size == 0) return true;
  void* p = mmap(nullptr, st.size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (long e = mmap_failed(p)) {
    fprintf(2, "cksum: %s: mmap: %s\n", path, strerror(e));
    return false;
  }
  madvise(p, st.size, MADV_SEQUENTIAL);
  const uint8_t* bytes = static_cast<const uint8_t*>(p);
  for (uint64_t at = 0; at < st.size; at += WINDOW) {
    long n = st.size - at < uint64_t(WINDOW) ? long(st.size - at) : WINDOW;
    *crc = update(*crc, bytes + at, n);
    madvise(const_cast<uint8_t*>(bytes) + at, n, MADV_DONTNEED);   // its pages may now be evicted
  }
  munmap(p, st.size);
  return true;
}

int main(int argc, char** argv) {
  bool use_map = argc > 1 && strcmp(argv[1], "--mmap") == 0;
  if (use_map) {
    argv++;
    argc--;
  }
  if (argc < 2) {
    fprintf(2, "usage: cksum [--mmap] FILE...\n");
    return 2;
  }
  make_tables();
  uint8_t* buf = static_cast<uint8_t*>(aligned_alloc(4096, BUF));
  if (!buf) {
    fprintf(2, "cksum: out of memory\n");
    return 1;
  }
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    int fd = open(argv[i], O_RDONLY);
    if (fd < 0) {
      fprintf(2, "cksum: %s: %s\n", argv[i], strerror(fd));
      rc = 1;
      continue;
    }
    uint32_t crc = 0;
    uint64_t size = 0;
    long n = 0;
    if (use_map && !map_sum(fd, argv[i], &crc, &size)) n = -1;
    while (!use_map && (n = read(fd, buf, BUF)) > 0) {
      crc = update(crc, buf, n);
      size += n;
    }
    close(fd);
    if (n < 0) {
      if (!use_map) fprintf(2, "cksum: %s: %s\n", argv[i], strerror(n));
      rc = 1;
      continue;
    }
    for (uint64_t len = size; len; len >>= 8) {
      uint8_t b = len & 0xff;
      crc = update(crc, &b, 1);
    }
    printf("%u %lu %s\n", ~crc, (unsigned long)size, argv[i]);
  }
  return rc;
}
