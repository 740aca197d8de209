// wc [FILE...]: counts lines, words and bytes.
#include "kai.h"

static char buf[8192];

struct Counts { unsigned long lines = 0, words = 0, bytes = 0; };

static int count(int fd, const char* name, Counts& c) {
  bool in_word = false;
  for (;;) {
    long n = read(fd, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0) {
      fprintf(2, "wc: %s: %s\n", name, strerror(n));
      return 1;
    }
    c.bytes += n;
    for (long i = 0; i < n; ++i) {
      char ch = buf[i];
      if (ch == '\n') ++c.lines;
      bool space = ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
      if (space) in_word = false;
      else if (!in_word) { in_word = true; ++c.words; }
    }
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    Counts c;
    int rc = count(0, "stdin", c);
    printf("%lu %lu %lu\n", c.lines, c.words, c.bytes);
    return rc;
  }
  int rc = 0;
  Counts total;
  for (int i = 1; i < argc; ++i) {
    int fd = open(argv[i], O_RDONLY);
    if (fd < 0) {
      fprintf(2, "wc: %s: %s\n", argv[i], strerror(fd));
      rc = 1;
      continue;
    }
    Counts c;
    rc |= count(fd, argv[i], c);
    close(fd);
    printf("%lu %lu %lu %s\n", c.lines, c.words, c.bytes, argv[i]);
    total.lines += c.lines; total.words += c.words; total.bytes += c.bytes;
  }
  if (argc > 2) printf("%lu %lu %lu total\n", total.lines, total.words, total.bytes);
  return rc;
}
