// cksum FILE...: the POSIX cksum checksum (CRC-32, polynomial 0x04C11DB7,
// most significant bit first, the length appended, then complemented) and
// the size in bytes, so the result can be compared with the host's `cksum`.
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

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(2, "usage: cksum FILE...\n");
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
    long n;
    while ((n = read(fd, buf, BUF)) > 0) {
      crc = update(crc, buf, n);
      size += n;
    }
    close(fd);
    if (n < 0) {
      fprintf(2, "cksum: %s: %s\n", argv[i], strerror(n));
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
