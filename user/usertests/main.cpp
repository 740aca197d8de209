// usertests [-v] [NAME...]: checks the system-call interface from user space.
//
// Every test runs in a child process of its own, so a test that crashes or
// corrupts its address space cannot take the others down. The child sends
// back "OK" or the reason for its failure through a pipe; a child that dies
// without saying anything (killed by the kernel, or replaced by a wrongly
// successful exec) counts as a failure. Output: one line per test,
//   ok NAME        or        FAIL NAME: why
// and finally exactly "N passed, M failed". With NAME arguments only the
// tests whose names start with one of them run. -v prints each test's time.
//
// The tests live in one file per topic (processes.cpp, memory.cpp, pipes.cpp,
// bad_pointers.cpp, files.cpp, libc.cpp, time.cpp, sessions.cpp); harness.h has what they
// share. This file only runs them.
#include "harness.h"

using namespace ut;

namespace {

const TestGroup* const groups[] = {&processes_tests, &memory_tests, &pipes_tests,
                                   &bad_pointer_tests, &files_tests, &libc_tests, &time_tests,
                                   &sessions_tests, &vm_tests};

bool selected(const char* name, int argc, char** argv, int first) {
  if (first >= argc) return true;
  for (int i = first; i < argc; ++i)
    if (strncmp(name, argv[i], strlen(argv[i])) == 0) return true;
  return false;
}

// Runs one test in a child; fills why on failure.
bool run(const Test& t, char* why, size_t why_size) {
  int p[2];
  if (pipe(p) < 0) {
    snprintf(why, why_size, "pipe failed");
    return false;
  }
  int pid = fork();
  if (pid < 0) {
    close(p[0]); close(p[1]);
    snprintf(why, why_size, "fork failed: %s", strerror(pid));
    return false;
  }
  if (pid == 0) {
    close(p[0]);
    write(p[1], "+", 1);   // "started": lets the parent tell silence from death
    bool ok = t.fn();
    const char* msg = ok ? "OK" : reason;
    write(p[1], msg, strlen(msg));
    exit(ok ? 0 : 1);
  }
  close(p[1]);
  int status = reap(pid);
  // Everything the child wrote is in the pipe now (it fits in the pipe's
  // buffer), so one read gets it; reading to end of file could hang if the
  // test left a grandchild holding the write end.
  char buf[sizeof reason + 2];
  long n = read(p[0], buf, sizeof buf - 1);
  close(p[0]);
  if (n < 1) n = 1;
  buf[n] = 0;
  const char* msg = buf + 1;
  if (status == 0 && strcmp(msg, "OK") == 0) return true;
  if (*msg && strcmp(msg, "OK") != 0) snprintf(why, why_size, "%s", msg);
  else if (status == -1000) snprintf(why, why_size, "lost the test process");
  else snprintf(why, why_size, "test process died (status %d) %s", status, msg);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  bool verbose = false;
  if (argc > 1 && strcmp(argv[1], "-v") == 0) { verbose = true; first = 2; }
  printf("usertests starting\n");
  int passed = 0, failed = 0;
  uint64_t t_all = clock_ns();
  for (const TestGroup* g : groups) for (int i = 0; i < g->count; i++) {
    const Test& t = g->tests[i];
    if (!selected(t.name, argc, argv, first)) continue;
    uint64_t t0 = clock_ns();
    char why[256];
    bool ok = run(t, why, sizeof why);
    uint64_t ms = (clock_ns() - t0) / 1000000;
    if (ok) {
      ++passed;
      if (verbose) printf("ok %s (%lu ms)\n", t.name, (unsigned long)ms);
      else printf("ok %s\n", t.name);
    } else {
      ++failed;
      printf("FAIL %s: %s\n", t.name, why);
    }
  }
  unlink(scratch_dir);   // empty unless a test failed
  if (verbose) printf("total %lu ms\n", (unsigned long)((clock_ns() - t_all) / 1000000));
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

