// kill PID...: kills processes.
#include "kai.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(2, "usage: kill PID...\n");
    return 2;
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    char* end;
    long pid = strtol(argv[i], &end, 10);
    if (*end || end == argv[i] || pid < 1 || pid > 0x7fffffff) {
      fprintf(2, "kill: %s: not a process id\n", argv[i]);
      rc = 1;
      continue;
    }
    int r = kill(static_cast<int>(pid));
    if (r < 0) {
      fprintf(2, "kill: %ld: %s\n", pid, strerror(r));
      rc = 1;
    }
  }
  return rc;
}
