// The usertests harness: failure reports, children, shared test data
// (declared in harness.h).
#include "harness.h"

namespace ut {

char reason[200];

bool fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  return false;
}

int in_child(void (*fn)()) {
  int pid = fork();
  if (pid < 0) return -1000 + pid;
  if (pid == 0) {
    fn();
    exit(0);
  }
  int status = 0;
  int w = wait(&status);
  if (w != pid) return -1000 + (w < 0 ? w : 0);
  return status;
}

int spawn(void (*fn)(long), long arg) {
  int pid = fork();
  if (pid == 0) {
    fn(arg);
    exit(0);
  }
  return pid;
}

// Children reaped while waiting for another one, kept for their own reap().
namespace {
struct Reaped { int pid, status; };
Reaped reaped[64];
int nreaped;
}  // namespace

int reap(int pid) {
  for (int i = 0; i < nreaped; ++i)
    if (reaped[i].pid == pid) {
      int status = reaped[i].status;
      reaped[i] = reaped[--nreaped];
      return status;
    }
  for (;;) {
    int status = 0;
    int w = wait(&status);
    if (w < 0) return -1000;
    if (w == pid) return status;
    if (nreaped < 64) reaped[nreaped++] = {w, status};
  }
}

// Runs exec(path, argv) in a child and tells whether it failed as it
// should. A wrongly successful exec would replace the child (and, run
// directly, the test itself); here it only shows up as the program's output.
bool exec_fails(const char* path, const char* const* argv) {
  int p[2];
  if (pipe(p) < 0) return false;
  int pid = fork();
  if (pid == 0) {
    close(1);
    dup(p[1]);
    close(p[0]);
    int r = exec(path, argv);
    write(1, r < 0 ? "E" : "?", 1);
    exit(0);
  }
  close(p[1]);
  char c = 0;
  long n = read(p[0], &c, 1);
  close(p[0]);
  reap(pid);
  return n == 1 && c == 'E';
}

const BadPtr bad_ptrs[] = {
    {0x0, "null"},
    {0x1, "0x1"},
    {0x8000, "below the program"},
    {0x80200000, "kernel text"},
    {0x80000000, "OpenSBI"},
    {0x3fffffe000, "trapframe"},
    {0x3ffffff000, "trampoline"},
    {0x1000000000, "unmapped user"},
    {0x4000000000, "just above MAXVA"},
    {0xffffffffffffffff, "all ones"},
    {0xffffffc000000000, "high half"},
};
const int NBAD = sizeof bad_ptrs / sizeof bad_ptrs[0];

const char* const scratch_dir = "/ut";
char big_buf[64 * 1024];
char big_buf2[64 * 1024];

void pattern(char* buf, long n, uint64_t seed) {
  uint64_t s = kai_rng_seed(seed);
  for (long i = 0; i < n; i += 8) {
    uint64_t v = kai_rng_next(&s);
    for (long k = 0; k < 8 && i + k < n; ++k) buf[i + k] = static_cast<char>(v >> (8 * k));
  }
}

int write_file(const char* path, const void* data, long n) {
  int fd = open(path, O_CREATE | O_WRONLY | O_TRUNC);
  if (fd < 0) return fd;
  long w = write(fd, data, n);
  close(fd);
  return w == n ? 0 : (w < 0 ? static_cast<int>(w) : -KAI_EIO);
}


}  // namespace ut
