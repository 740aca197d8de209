// time CMD [ARG...]: runs CMD (found like the shell finds it) and prints the
// wall-clock time it took, measured with clock_ns(), to standard error:
//   real 123.456 ms
// The exit status is CMD's.
#include "kai.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(2, "usage: time CMD [ARG...]\n");
    return 2;
  }
  uint64_t t0 = clock_ns();
  int pid = fork();
  if (pid < 0) {
    fprintf(2, "time: fork: %s\n", strerror(pid));
    return 1;
  }
  if (pid == 0) {
    int r = execvp(argv[1], argv + 1);
    fprintf(2, "exec %s failed: %s\n", argv[1], strerror(r));
    exit(127);
  }
  int status = 0;
  for (int w = 0; w != pid;) {
    w = wait(&status);
    if (w < 0) break;
  }
  uint64_t ns = clock_ns() - t0;
  fprintf(2, "real %lu.%03lu ms\n", (unsigned long)(ns / 1000000), (unsigned long)(ns / 1000 % 1000));
  return status;
}
