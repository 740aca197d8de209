// sleep SECONDS   sleeps that many seconds (a decimal like 0.25 is fine)
// sleep -t TICKS  sleeps that many clock ticks (one tick = 10 ms)
#include "kai.h"

static int usage() {
  fprintf(2, "usage: sleep SECONDS | sleep -t TICKS\n");
  return 2;
}

int main(int argc, char** argv) {
  long ticks;
  if (argc == 3 && strcmp(argv[1], "-t") == 0) {
    char* end;
    ticks = strtol(argv[2], &end, 10);
    if (*end || end == argv[2] || ticks < 0) return usage();
  } else if (argc == 2) {
    // Seconds with up to two decimals: whole ticks (10 ms) are all we can do.
    const char* p = argv[1];
    char* end;
    long whole = strtol(p, &end, 10);
    if (end == p && *p != '.') return usage();
    if (whole < 0) return usage();
    ticks = whole * 100;
    if (*end == '.') {
      long scale = 10;
      for (p = end + 1; *p >= '0' && *p <= '9'; ++p, scale /= 10) ticks += (*p - '0') * scale;
      end = const_cast<char*>(p);
    }
    if (*end) return usage();
  } else {
    return usage();
  }
  int r = sleep(static_cast<int>(ticks));
  if (r < 0) {
    fprintf(2, "sleep: %s\n", strerror(r));
    return 1;
  }
  return 0;
}
