// setsid CMD [ARG...]: runs CMD (found like the shell finds it) in a new
// session, led by CMD itself (the session's id is its pid). The exit status
// is CMD's (127 if it cannot be started).
//
// A session groups a process with everything it starts: fork() copies the
// session id, setsid() starts a new one. The AI service keeps cached prompt
// prefixes within a session (docs/sharing.md), so
//   setsid ai --text "..."
// submits from a session of its own that shares no cache with the shell's.
//
// setsid() fails with EPERM in a process that already leads a session. A
// program the shell started never does (it is a new child), so the usual
// path is one setsid() and an exec: CMD keeps this process's pid and the
// shell waits for it as for any command. Only if this process does lead a
// session (someone exec'd setsid from a leader) does it fork, so that the
// child, which leads nothing, can start the session; then it waits for it.
#include "kai.h"

namespace {

[[noreturn]] void run(char** argv) {
  int r = execvp(argv[0], argv);
  fprintf(2, "setsid: cannot run %s: %s\n", argv[0], strerror(r));
  exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(2, "usage: setsid CMD [ARG...]\n");
    return 2;
  }
  if (argv[1][0] == '-') {
    fprintf(2, "setsid: unknown option %s (usage: setsid CMD [ARG...])\n", argv[1]);
    return 2;
  }
  int sid = setsid();
  if (sid >= 0) run(argv + 1);
  if (sid != -KAI_EPERM) {
    fprintf(2, "setsid: %s\n", strerror(sid));
    return 1;
  }
  int pid = fork();
  if (pid < 0) {
    fprintf(2, "setsid: fork: %s\n", strerror(pid));
    return 1;
  }
  if (pid == 0) {
    if (int r = setsid(); r < 0) {
      fprintf(2, "setsid: %s\n", strerror(r));
      exit(1);
    }
    run(argv + 1);
  }
  int status = 0;
  for (int w = 0; w != pid;) {
    w = wait(&status);
    if (w < 0) return 1;
  }
  return status;
}
