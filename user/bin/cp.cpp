// cp SRC DST: copies a file; DST may be an existing directory (the copy is
// then DST/<basename of SRC>). Large buffer, so big files copy in big writes.
#include "kai.h"

static constexpr long BUF = 256 * 1024;

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(2, "usage: cp SRC DST\n");
    return 2;
  }
  const char* src = argv[1];
  char dst[KAI_PATH_MAX];
  snprintf(dst, sizeof dst, "%s", argv[2]);
  kai_stat st;
  if (stat(dst, &st) == 0 && st.type == KAI_T_DIR) {
    const char* base = strrchr(src, '/');
    base = base ? base + 1 : src;
    if (snprintf(dst, sizeof dst, "%s/%s", argv[2], base) >= (int)sizeof dst) {
      fprintf(2, "cp: %s/%s: %s\n", argv[2], base, strerror(KAI_ENAMETOOLONG));
      return 1;
    }
  }
  int in = open(src, O_RDONLY);
  if (in < 0) {
    fprintf(2, "cp: %s: %s\n", src, strerror(in));
    return 1;
  }
  if (fstat(in, &st) == 0 && st.type == KAI_T_DIR) {
    fprintf(2, "cp: %s: %s\n", src, strerror(KAI_EISDIR));
    return 1;
  }
  int out = open(dst, O_WRONLY | O_CREATE | O_TRUNC);
  if (out < 0) {
    fprintf(2, "cp: %s: %s\n", dst, strerror(out));
    return 1;
  }
  char* buf = static_cast<char*>(malloc(BUF));
  if (!buf) {
    fprintf(2, "cp: out of memory\n");
    return 1;
  }
  for (;;) {
    long n = read(in, buf, BUF);
    if (n == 0) break;
    if (n < 0) {
      fprintf(2, "cp: %s: %s\n", src, strerror(n));
      return 1;
    }
    for (long off = 0; off < n;) {
      long w = write(out, buf + off, n - off);
      if (w < 0) {
        fprintf(2, "cp: %s: %s\n", dst, strerror(w));
        return 1;
      }
      off += w;
    }
  }
  close(in);
  close(out);
  return 0;
}
