// halt: powers the machine off.
#include "kai.h"

int main(int argc, char** argv) {
  no_arguments("halt", argc, argv);
  int r = halt();
  fprintf(2, "halt: %s\n", strerror(r));
  return 1;
}
