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
    if (*end || end == argv[2] || ticks < 0 || ticks > 100000000) {
      fprintf(2, "sleep: -t: '%s' is not a number of ticks from 0 to 100000000\n", argv[2]);
      return 2;
    }
  } else if (argc == 2) {
    // Seconds with up to two decimals: whole ticks (10 ms) are all we can do.
    const char* p = argv[1];
    char* end;
    long whole = strtol(p, &end, 10);
    if ((end == p && *p != '.') || whole < 0 || whole > 1000000) {
      fprintf(2, "sleep: '%s' is not a number of seconds from 0 to 1000000\n", argv[1]);
      return 2;
    }
    ticks = whole * 100;
    if (*end == '.') {
      long scale = 10;
      for (p = end + 1; *p >= '0' && *p <= '9'; ++p, scale /= 10) ticks += (*p - '0') * scale;
      end = const_cast<char*>(p);
    }
    if (*end) {
      fprintf(2, "sleep: '%s' is not a number of seconds from 0 to 1000000\n", argv[1]);
      return 2;
    }
  } else {
    if (argc > 2) fprintf(2, "sleep: unexpected argument '%s'\n", argv[2]);
    return usage();
  }
  int r = sleep(static_cast<int>(ticks));
  if (r < 0) {
    fprintf(2, "sleep: %s\n", strerror(r));
    return 1;
  }
  return 0;
}
