// ln OLD NEW: makes NEW another name (hard link) for the file OLD.
#include "kai.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(2, "usage: ln OLD NEW\n");
    return 2;
  }
  int r = link(argv[1], argv[2]);
  if (r < 0) {
    fprintf(2, "ln: %s -> %s: %s\n", argv[2], argv[1], strerror(r));
    return 1;
  }
  return 0;
}
