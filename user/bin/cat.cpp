// cat [FILE...]: copies each file (or standard input) to standard output.
#include "kai.h"

static char buf[8192];

static int copy(int fd, const char* name) {
  for (;;) {
    long n = read(fd, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0) {
      fprintf(2, "cat: %s: %s\n", name, strerror(n));
      return 1;
    }
    for (long off = 0; off < n;) {
      long w = write(1, buf + off, n - off);
      if (w <= 0) return 1;   // reader went away (closed pipe) or error: stop quietly
      off += w;
    }
  }
}

int main(int argc, char** argv) {
  if (argc < 2) return copy(0, "stdin");
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    int fd = open(argv[i], O_RDONLY);
    if (fd < 0) {
      fprintf(2, "cat: %s: %s\n", argv[i], strerror(fd));
      rc = 1;
      continue;
    }
    if (copy(fd, argv[i])) rc = 1;
    close(fd);
  }
  return rc;
}
