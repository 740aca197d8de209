// echo [-n] ARG...: prints the arguments separated by spaces.
#include "kai.h"

int main(int argc, char** argv) {
  bool newline = true;
  int i = 1;
  if (i < argc && strcmp(argv[i], "-n") == 0) { newline = false; ++i; }
  // Build the whole line first so it reaches the console in one write.
  size_t len = 1;
  for (int k = i; k < argc; ++k) len += strlen(argv[k]) + 1;
  char* out = static_cast<char*>(malloc(len));
  if (!out) return 1;
  size_t n = 0;
  for (int k = i; k < argc; ++k) {
    if (k > i) out[n++] = ' ';
    size_t l = strlen(argv[k]);
    memcpy(out + n, argv[k], l);
    n += l;
  }
  if (newline) out[n++] = '\n';
  return write(1, out, n) == static_cast<long>(n) ? 0 : 1;
}
