// rm PATH...: removes directory entries (an empty directory too).
#include "kai.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(2, "usage: rm PATH...\n");
    return 2;
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    int r = unlink(argv[i]);
    if (r < 0) {
      fprintf(2, "rm: %s: %s\n", argv[i], strerror(r));
      rc = 1;
    }
  }
  return rc;
}
