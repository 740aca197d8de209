// execvp: exec with the command search rule of the shell.
#include "kai.h"

extern "C" int execvp(const char* name, const char* const argv[]) {
  if (strchr(name, '/')) return exec(name, argv);
  char path[KAI_PATH_MAX];
  if (snprintf(path, sizeof path, "/bin/%s", name) >= static_cast<int>(sizeof path))
    return -KAI_ENAMETOOLONG;
  return exec(path, argv);
}
