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
#include "kai.h"

namespace {

// ---------------------------------------------------------------- plumbing

char reason[200];

bool fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
bool fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  return false;
}

#define EXPECT(cond, ...) \
  do {                    \
    if (!(cond)) return fail(__VA_ARGS__); \
  } while (0)

// Runs fn in a child and returns its exit status (or -1000 - error if the
// fork or wait failed).
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

// Forks a child that runs fn with an argument; returns the pid.
int spawn(void (*fn)(long), long arg) {
  int pid = fork();
  if (pid == 0) {
    fn(arg);
    exit(0);
  }
  return pid;
}

// Waits for one specific child; returns its status, or -1000 on error.
// Other children that exit meanwhile are remembered for their own reap().
struct Reaped { int pid, status; };
Reaped reaped[64];
int nreaped;

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

// Addresses that no system call may accept as a user buffer.
struct BadPtr { uint64_t addr; const char* what; };
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
constexpr int NBAD = sizeof bad_ptrs / sizeof bad_ptrs[0];

template <typename T>
T* bad(int i) { return reinterpret_cast<T*>(bad_ptrs[i].addr); }

const char* scratch_dir = "/ut";
char big_buf[64 * 1024];
char big_buf2[64 * 1024];

// Fills buf with a pattern derived from seed.
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

// ---------------------------------------------------------------- processes

bool t_exit_status() {
  for (int code : {0, 1, 42, 255}) {
    int pid = fork();
    EXPECT(pid >= 0, "fork: %s", strerror(pid));
    if (pid == 0) exit(code);
    int status = -7;
    int w = wait(&status);
    EXPECT(w == pid, "wait returned %d, expected %d", w, pid);
    EXPECT(status == code, "exit(%d) but wait saw status %d", code, status);
  }
  return true;
}

bool t_wait_nochild() {
  int r = wait(nullptr);
  EXPECT(r == -KAI_ECHILD, "wait with no children returned %d (%s)", r, strerror(r));
  return true;
}

bool t_fork_many() {
  // Rounds of many concurrent children; wait must collect every one.
  for (int round = 0; round < 8; ++round) {
    constexpr int N = 40;
    int pids[N];
    for (int i = 0; i < N; ++i) {
      pids[i] = fork();
      EXPECT(pids[i] >= 0, "round %d: fork %d failed: %s", round, i, strerror(pids[i]));
      if (pids[i] == 0) exit(i + 1);
    }
    int seen = 0, sum = 0;
    for (;;) {
      int status;
      int w = wait(&status);
      if (w < 0) break;
      bool mine = false;
      for (int i = 0; i < N; ++i) if (pids[i] == w) { mine = true; pids[i] = -1; }
      EXPECT(mine, "wait returned unknown pid %d", w);
      ++seen;
      sum += status;
    }
    EXPECT(seen == N, "round %d: collected %d of %d children", round, seen, N);
    EXPECT(sum == N * (N + 1) / 2, "round %d: statuses add up to %d", round, sum);
  }
  return true;
}

void grandchild_tree(long depth) {
  if (depth == 0) exit(0);
  int a = spawn(grandchild_tree, depth - 1);
  int b = spawn(grandchild_tree, depth - 1);
  if (a < 0 || b < 0) exit(1);
  int bad = 0;
  for (int k = 0; k < 2; ++k) {
    int status = 0;
    int w = wait(&status);
    if ((w != a && w != b) || status != 0) bad = 1;
  }
  exit(bad);
}

bool t_fork_tree() {
  // 2^5 leaves, 63 processes over the run (at most ~32 alive at once).
  int pid = spawn(grandchild_tree, 4);
  EXPECT(pid > 0, "fork failed");
  int s = reap(pid);
  EXPECT(s == 0, "a process in the tree failed (status %d)", s);
  return true;
}

bool t_orphans() {
  // Children whose parent exits first are adopted and reaped by init; the
  // parent here only waits for the middle process.
  int pid = fork();
  EXPECT(pid >= 0, "fork failed");
  if (pid == 0) {
    for (int i = 0; i < 5; ++i)
      if (fork() == 0) { sleep(2); exit(0); }
    exit(7);
  }
  EXPECT(reap(pid) == 7, "middle process status wrong");
  EXPECT(wait(nullptr) == -KAI_ECHILD, "orphans were not re-parented away from us");
  return true;
}

bool t_getpid() {
  int me = getpid();
  EXPECT(me > 0, "getpid returned %d", me);
  int p[2];
  EXPECT(pipe(p) == 0, "pipe failed");
  int pid = fork();
  if (pid == 0) {
    int child = getpid();
    write(p[1], &child, sizeof child);
    exit(0);
  }
  int child = 0;
  EXPECT(read(p[0], &child, sizeof child) == sizeof child, "read from pipe failed");
  reap(pid);
  EXPECT(child == pid, "child's getpid %d != fork's return %d", child, pid);
  EXPECT(child != me, "child has the parent's pid");
  close(p[0]); close(p[1]);
  return true;
}

bool t_fork_memory() {
  // The child gets a copy: its writes do not show in the parent.
  static volatile int shared_value = 1;
  char* heap = static_cast<char*>(malloc(100000));
  EXPECT(heap, "malloc failed");
  memset(heap, 'p', 100000);
  int pid = fork();
  if (pid == 0) {
    shared_value = 2;
    memset(heap, 'c', 100000);
    exit(heap[99999] == 'c' ? 0 : 1);
  }
  EXPECT(reap(pid) == 0, "child could not write its copy");
  EXPECT(shared_value == 1, "child's write to .data visible in the parent");
  EXPECT(heap[0] == 'p' && heap[99999] == 'p', "child's write to the heap visible in the parent");
  free(heap);
  return true;
}

bool t_exec_echo() {
  int p[2];
  EXPECT(pipe(p) == 0, "pipe failed");
  int pid = fork();
  if (pid == 0) {
    close(1);
    dup(p[1]);
    close(p[0]);
    close(p[1]);
    const char* argv[] = {"echo", "hello", "exec", "world", nullptr};
    exec("/bin/echo", argv);
    exit(99);
  }
  close(p[1]);
  char buf[64] = {};
  long n = 0, r;
  while (n < 63 && (r = read(p[0], buf + n, 63 - n)) > 0) n += r;
  close(p[0]);
  int s = reap(pid);
  EXPECT(s == 0, "echo exited with %d", s);
  EXPECT(strcmp(buf, "hello exec world\n") == 0, "echo wrote \"%s\"", buf);
  return true;
}

bool t_exec_errors() {
  const char* argv[] = {"x", nullptr};
  int r = exec("/no/such/program", argv);
  EXPECT(r == -KAI_ENOENT, "exec of a missing file returned %d", r);
  // A file that is not an ELF executable.
  mkdir(scratch_dir);
  char path[64];
  snprintf(path, sizeof path, "%s/notelf", scratch_dir);
  EXPECT(write_file(path, "#!/bin/sh\necho hi\n", 18) == 0, "cannot create %s", path);
  r = exec(path, argv);
  unlink(path);
  EXPECT(r < 0, "exec of a text file returned %d", r);
  r = exec("/", argv);
  EXPECT(r < 0, "exec of a directory returned %d", r);
  // Too many arguments: the kernel takes MAXARG = 300 (kernel/param.h).
  static const char* many[302];
  for (int i = 0; i < 301; ++i) many[i] = "arg";
  many[301] = nullptr;
  r = exec("/bin/echo", many);
  EXPECT(r == -KAI_E2BIG, "exec with 301 arguments returned %d", r);
  // A huge argument (larger than the 256 KiB stack).
  char* huge = static_cast<char*>(malloc(300 * 1024));
  EXPECT(huge, "malloc");
  memset(huge, 'a', 300 * 1024 - 1);
  huge[300 * 1024 - 1] = 0;
  const char* hargv[] = {"echo", huge, nullptr};
  r = exec("/bin/echo", hargv);
  EXPECT(r < 0, "exec with a 300 KiB argument returned %d", r);
  free(huge);
  return true;
}

bool t_exec_many_args() {
  // 30 arguments of 100 bytes reach the program intact.
  static char args[30][101];
  const char* argv[32];
  argv[0] = "echo";
  for (int i = 0; i < 30; ++i) {
    for (int k = 0; k < 100; ++k) args[i][k] = static_cast<char>('a' + (i + k) % 26);
    args[i][100] = 0;
    argv[i + 1] = args[i];
  }
  argv[31] = nullptr;
  int p[2];
  EXPECT(pipe(p) == 0, "pipe");
  int pid = fork();
  if (pid == 0) {
    close(1); dup(p[1]); close(p[0]); close(p[1]);
    exec("/bin/echo", argv);
    exit(99);
  }
  close(p[1]);
  long n = 0, r;
  while ((r = read(p[0], big_buf + n, sizeof big_buf - 1 - n)) > 0) n += r;
  close(p[0]);
  EXPECT(reap(pid) == 0, "echo failed");
  EXPECT(n == 30 * 101, "echo printed %ld bytes, expected %d", n, 30 * 101);
  for (int i = 0; i < 30; ++i)
    EXPECT(memcmp(big_buf + i * 101, args[i], 100) == 0, "argument %d garbled", i);
  return true;
}

bool t_exec_concurrent() {
  // Several children exec at the same time (exercises exec on many harts).
  constexpr int N = 8;
  int pids[N];
  for (int i = 0; i < N; ++i) {
    pids[i] = fork();
    EXPECT(pids[i] >= 0, "fork");
    if (pids[i] == 0) {
      int p[2];
      pipe(p);   // echo's output goes into a pipe nobody reads (it fits)
      close(1);
      dup(p[1]);
      const char* argv[] = {"echo", "x", nullptr};
      exec("/bin/echo", argv);
      exit(99);
    }
  }
  for (int i = 0; i < N; ++i) {
    int s = reap(pids[i]);
    EXPECT(s == 0, "child %d: exec or echo failed (status %d)", i, s);
  }
  return true;
}

// ---------------------------------------------------------------- faults and kill

void do_null_read() { volatile int* p = nullptr; exit(*p == 12345 ? 0 : 0); }
void do_null_write() { *reinterpret_cast<volatile int*>(0) = 1; }
void do_illegal() { asm volatile(".word 0"); }
void do_csr() { uint64_t v; asm volatile("csrr %0, mstatus" : "=r"(v)); (void)v; }
void do_text_write() { *reinterpret_cast<volatile uint32_t*>(reinterpret_cast<uintptr_t>(&do_text_write)) = 0; }
void do_kernel_read() { volatile int* p = reinterpret_cast<int*>(0x80200000); (void)*p; }
void do_trapframe_read() { volatile int* p = reinterpret_cast<int*>(0x3fffffe000); (void)*p; }
void do_jump_null() { reinterpret_cast<void (*)()>(0)(); }
void do_jump_kernel() { reinterpret_cast<void (*)()>(0x80200000)(); }
int recurse(int n) {
  volatile char pad[1024];
  pad[0] = static_cast<char>(n);
  return n == 0 ? pad[0] : recurse(n - 1) + pad[0];
}
void do_stack_overflow() { exit(recurse(1 << 20) == 1 ? 0 : 0); }

bool t_faults() {
  struct { void (*fn)(); const char* what; } cases[] = {
      {do_null_read, "null read"},
      {do_null_write, "null write"},
      {do_illegal, "illegal instruction"},
      {do_csr, "machine CSR access"},
      {do_text_write, "store to text"},
      {do_kernel_read, "read of kernel memory"},
      {do_trapframe_read, "read of the trapframe page"},
      {do_jump_null, "jump to 0"},
      {do_jump_kernel, "jump into the kernel"},
      {do_stack_overflow, "stack overflow"},
  };
  for (auto& c : cases) {
    int s = in_child(c.fn);
    EXPECT(s != 0 && s > -1000, "%s: child not killed (status %d)", c.what, s);
  }
  return true;
}

bool t_bad_syscall() {
  long r;
  for (long nr : {0L, 99L, 1000L, -1L}) {
    register long a7 asm("a7") = nr;
    register long a0 asm("a0") = 0;
    asm volatile("ecall" : "+r"(a0) : "r"(a7) : "memory");
    r = a0;
    EXPECT(r == -KAI_ENOSYS, "system call %ld returned %ld, expected -ENOSYS", nr, r);
  }
  return true;
}

void spin_forever(long) { for (;;) asm volatile(""); }
void sleep_forever(long) { for (;;) sleep(1000); }
void read_forever(long fd) { char c; read(static_cast<int>(fd), &c, 1); exit(0); }

bool t_kill() {
  int pid = spawn(spin_forever, 0);
  EXPECT(pid > 0, "fork");
  sleep(2);
  EXPECT(kill(pid) == 0, "kill of a running child failed");
  int s = reap(pid);
  EXPECT(s != 0 && s > -1000, "killed spinner exited with %d", s);

  uint64_t t0 = clock_ns();
  pid = spawn(sleep_forever, 0);
  sleep(2);
  EXPECT(kill(pid) == 0, "kill of a sleeping child failed");
  s = reap(pid);
  EXPECT(s != 0 && s > -1000, "killed sleeper exited with %d", s);
  EXPECT(clock_ns() - t0 < 5000000000ULL, "killing a sleeper took more than 5 s");

  int p[2];
  EXPECT(pipe(p) == 0, "pipe");
  pid = spawn(read_forever, p[0]);
  sleep(2);
  EXPECT(kill(pid) == 0, "kill of a child blocked in read failed");
  s = reap(pid);
  EXPECT(s != 0 && s > -1000, "killed reader exited with %d", s);
  close(p[0]); close(p[1]);

  EXPECT(kill(999999) < 0, "kill of a nonexistent pid succeeded");
  EXPECT(kill(-1) < 0, "kill(-1) succeeded");
  EXPECT(kill(0) < 0, "kill(0) succeeded");
  return true;
}

// ---------------------------------------------------------------- memory

bool t_sbrk_basic() {
  long start = sbrk(0);
  EXPECT(start > 0, "sbrk(0) = %ld", start);
  long old = sbrk(10000);
  EXPECT(old == start, "sbrk(10000) returned %ld, break was %ld", old, start);
  EXPECT(sbrk(0) == start + 10000, "break did not move by 10000");
  char* p = reinterpret_cast<char*>(start);
  for (int i = 0; i < 10000; ++i) EXPECT(p[i] == 0, "new memory not zeroed at +%d", i);
  memset(p, 0x5a, 10000);
  EXPECT(sbrk(-10000) == start + 10000, "sbrk(-10000) did not return the old break");
  EXPECT(sbrk(0) == start, "break did not shrink back");
  // Grown again: fresh zeroed memory, not the old contents.
  EXPECT(sbrk(8192) == start, "regrow");
  for (int i = 4096 - (start & 4095); i < 8192 - (start & 4095); ++i)
    EXPECT(p[i] == 0, "re-grown page not zeroed at +%d", i);
  sbrk(-8192);
  return true;
}

void touch_after_shrink() {
  long start = sbrk(0);
  long base = (start + 4095) & ~4095L;
  sbrk(base - start + 4 * 4096);
  char* p = reinterpret_cast<char*>(base);
  p[3 * 4096] = 1;
  sbrk(-(4 * 4096));
  p[3 * 4096] = 2;   // must fault: the page is gone
}

bool t_sbrk_shrink_unmaps() {
  int s = in_child(touch_after_shrink);
  EXPECT(s != 0 && s > -1000, "memory was still accessible after sbrk shrank past it (status %d)", s);
  return true;
}

bool t_sbrk_big() {
  constexpr long SIZE = 300L << 20;
  long start = sbrk(0);
  uint64_t t0 = clock_ns();
  long r = sbrk(SIZE);
  EXPECT(r == start, "sbrk(300 MiB) failed: %ld (%s)", r, r < 0 ? strerror(r) : "");
  char* p = reinterpret_cast<char*>(start);
  for (long off = 0; off < SIZE; off += 4096) p[off] = static_cast<char>(off >> 12);
  for (long off = 0; off < SIZE; off += 4096)
    EXPECT(p[off] == static_cast<char>(off >> 12), "page at +%ld lost its value", off);
  p[SIZE - 1] = 1;
  EXPECT(sbrk(-SIZE) == start + SIZE, "shrink failed");
  EXPECT(sbrk(0) == start, "break not back");
  // The memory went back to the kernel: we can take it again.
  r = sbrk(SIZE);
  EXPECT(r == start, "second sbrk(300 MiB) failed: %ld", r);
  p[SIZE - 1] = 2;
  sbrk(-SIZE);
  (void)t0;
  return true;
}

bool t_sbrk_huge_fails() {
  long start = sbrk(0);
  for (long n : {1L << 40, 1L << 36, 0x7fffffffffffffffL}) {
    long r = sbrk(n);
    EXPECT(r < 0, "sbrk(%ld) succeeded", n);
    EXPECT(sbrk(0) == start, "failed sbrk(%ld) moved the break", n);
  }
  long r = sbrk(-(start + 4096));
  EXPECT(r < 0, "sbrk below address 0 succeeded");
  EXPECT(sbrk(0) == start, "failed negative sbrk moved the break");
  return true;
}

void eat_memory() {
  // Grow 32 MiB at a time until the kernel says no, touching every page.
  long total = 0;
  for (;;) {
    long r = sbrk(32L << 20);
    if (r < 0) break;
    char* p = reinterpret_cast<char*>(r);
    for (long off = 0; off < (32L << 20); off += 4096) p[off] = 1;
    total += 32L << 20;
  }
  // Report how much we got (MiB) as the exit status; 0 means the kernel
  // never refused (which would be a failure of the test).
  exit(static_cast<int>(total >> 25));
}

bool t_out_of_memory() {
  // Exhausting memory makes sbrk fail (no panic, no kill), and exiting
  // gives everything back: a second child gets about the same amount.
  int a = in_child(eat_memory);
  EXPECT(a > 0, "first memory eater failed (status %d)", a);
  int b = in_child(eat_memory);
  EXPECT(b > 0, "second memory eater failed (status %d)", b);
  EXPECT(b >= a - 1, "memory leaked: first child got %d x 32 MiB, second only %d", a, b);
  // And fork still works afterwards.
  int pid = fork();
  if (pid == 0) exit(0);
  EXPECT(pid > 0 && reap(pid) == 0, "fork after exhausting memory failed");
  return true;
}

bool t_fork_until_fail() {
  int p[2];
  EXPECT(pipe(p) == 0, "pipe");
  int n = 0, err = 0;
  for (; n < 1000; ++n) {
    int pid = fork();
    if (pid < 0) { err = pid; break; }
    if (pid == 0) {
      close(p[1]);
      char c;
      read(p[0], &c, 1);   // blocks until the parent closes the write end
      exit(0);
    }
  }
  close(p[1]);
  close(p[0]);
  int reaped = 0;
  while (wait(nullptr) > 0) ++reaped;
  EXPECT(err < 0, "fork never failed after %d children", n);
  EXPECT(reaped == n, "forked %d, reaped %d", n, reaped);
  EXPECT(n >= 20, "only %d processes could be created", n);
  // The process table is usable again.
  int pid = fork();
  if (pid == 0) exit(0);
  EXPECT(pid > 0 && reap(pid) == 0, "fork after the table was full failed");
  return true;
}

bool t_malloc() {
  // Random sizes, checked contents, all freed; then the big-block path.
  static void* ptrs[500];
  static long sizes[500];
  uint64_t rng = kai_rng_seed(7);
  for (int round = 0; round < 20000; ++round) {
    int i = static_cast<int>(kai_rng_next(&rng) % 500);
    if (ptrs[i]) {
      unsigned char* q = static_cast<unsigned char*>(ptrs[i]);
      for (long k = 0; k < sizes[i]; k += 61)
        EXPECT(q[k] == static_cast<unsigned char>(i + k), "block %d corrupted", i);
      free(ptrs[i]);
      ptrs[i] = nullptr;
    } else {
      long n = kai_rng_next(&rng) % 16 == 0 ? kai_rng_next(&rng) % 200000 : kai_rng_next(&rng) % 300;
      unsigned char* q = static_cast<unsigned char*>(malloc(n));
      EXPECT(q, "malloc(%ld) failed", n);
      EXPECT((reinterpret_cast<uintptr_t>(q) & 15) == 0, "malloc returned a misaligned pointer");
      for (long k = 0; k < n; ++k) q[k] = static_cast<unsigned char>(i + k);
      ptrs[i] = q;
      sizes[i] = n;
    }
  }
  for (auto& q : ptrs) { free(q); q = nullptr; }
  kai_heap_stats st;
  malloc_stats(&st);
  EXPECT(st.used_bytes == 0, "%lu bytes still counted as used", (unsigned long)st.used_bytes);
  // Big blocks are reused / returned, so repeated big allocations do not grow the heap.
  for (int k = 0; k < 4; ++k) {
    char* b = static_cast<char*>(malloc(200L << 20));
    EXPECT(b, "malloc(200 MiB) #%d failed", k);
    b[0] = 1;
    b[(200L << 20) - 1] = 2;
    free(b);
  }
  malloc_stats(&st);
  EXPECT(st.heap_bytes < (16L << 20), "heap still holds %lu bytes after freeing", (unsigned long)st.heap_bytes);
  void* x = malloc(5000);
  free(x);
  void* y = malloc(5000);
  EXPECT(x == y, "freed block not reused");
  free(y);
  void* a = aligned_alloc(4096, 10000);
  EXPECT(a && (reinterpret_cast<uintptr_t>(a) & 4095) == 0, "aligned_alloc(4096) gave %p", a);
  free(a);
  char* r = static_cast<char*>(malloc(10));
  strcpy(r, "realloc");
  r = static_cast<char*>(realloc(r, 100000));
  EXPECT(r && strcmp(r, "realloc") == 0, "realloc lost the contents");
  free(r);
  return true;
}

// ---------------------------------------------------------------- pipes

bool t_pipe_data() {
  int p[2];
  EXPECT(pipe(p) == 0, "pipe failed");
  EXPECT(p[0] >= 0 && p[1] >= 0 && p[0] != p[1], "pipe gave fds %d %d", p[0], p[1]);
  constexpr long N = 100000;
  int pid = fork();
  if (pid == 0) {
    close(p[0]);
    static char out[N];
    pattern(out, N, 3);
    // Write in odd-sized pieces.
    for (long off = 0; off < N;) {
      long chunk = N - off < 777 ? N - off : 777;
      long w = write(p[1], out + off, chunk);
      if (w <= 0) exit(1);
      off += w;
    }
    exit(0);
  }
  close(p[1]);
  static char in[N], expect[N];
  pattern(expect, N, 3);
  long n = 0, r;
  while ((r = read(p[0], in + n, N - n + 1 > 5000 ? 5000 : N - n + 1)) > 0) n += r;
  close(p[0]);
  EXPECT(r == 0, "read ended with %ld", r);
  EXPECT(reap(pid) == 0, "writer failed");
  EXPECT(n == N, "read %ld bytes, expected %ld", n, N);
  EXPECT(memcmp(in, expect, N) == 0, "data through the pipe differs");
  return true;
}

bool t_pipe_closed() {
  int p[2];
  EXPECT(pipe(p) == 0, "pipe");
  close(p[0]);
  long w = write(p[1], "x", 1);
  EXPECT(w < 0, "write to a pipe without readers returned %ld", w);
  close(p[1]);
  EXPECT(pipe(p) == 0, "pipe");
  close(p[1]);
  char c;
  EXPECT(read(p[0], &c, 1) == 0, "read from a pipe without writers did not return 0");
  close(p[0]);
  EXPECT(pipe(p) == 0, "pipe");
  EXPECT(lseek(p[0], 0, SEEK_SET) == -KAI_ESPIPE, "lseek on a pipe did not fail with ESPIPE");
  close(p[0]); close(p[1]);
  return true;
}

bool t_pipe_many() {
  // Open and close many pipes: the kernel must not leak them.
  for (int i = 0; i < 300; ++i) {
    int p[2];
    int r = pipe(p);
    EXPECT(r == 0, "pipe #%d failed: %s", i, strerror(r));
    EXPECT(write(p[1], "ab", 2) == 2, "write");
    char b[2];
    EXPECT(read(p[0], b, 2) == 2 && b[1] == 'b', "read");
    close(p[0]);
    close(p[1]);
  }
  return true;
}

// ---------------------------------------------------------------- bad pointers

// Every system call that takes a pointer must fail (return < 0) for every
// bad address, and the caller must live on.
bool t_bad_pointers() {
  mkdir(scratch_dir);
  char file[64];
  snprintf(file, sizeof file, "%s/badptr", scratch_dir);
  EXPECT(write_file(file, "0123456789abcdef", 16) == 0, "cannot create %s", file);
  int pid = fork();
  if (pid == 0) exit(0);
  for (int i = 0; i < NBAD; ++i) {
    const char* what = bad_ptrs[i].what;
    long r;
    // Reads into bad memory: from a file, from a pipe.
    int fd = open(file, O_RDONLY);
    EXPECT(fd >= 0, "open");
    r = read(fd, bad<char>(i), 10);
    EXPECT(r < 0, "read(file, %s) returned %ld", what, r);
    close(fd);
    int p[2];
    EXPECT(pipe(p) == 0, "pipe");
    write(p[1], "abcdef", 6);
    r = read(p[0], bad<char>(i), 6);
    EXPECT(r < 0, "read(pipe, %s) returned %ld", what, r);
    r = write(p[1], bad<char>(i), 6);
    EXPECT(r < 0, "write(pipe, %s) returned %ld", what, r);
    close(p[0]); close(p[1]);
    fd = open(file, O_WRONLY);
    r = write(fd, bad<char>(i), 10);
    EXPECT(r < 0, "write(file, %s) returned %ld", what, r);
    close(fd);
    r = write(2, bad<char>(i), 10);
    EXPECT(r < 0, "write(console, %s) returned %ld", what, r);
    // Paths.
    EXPECT((r = open(bad<char>(i), O_RDONLY)) < 0, "open(%s) returned %ld", what, r);
    EXPECT((r = open(bad<char>(i), O_CREATE | O_RDWR)) < 0, "open(%s, O_CREATE) returned %ld", what, r);
    EXPECT((r = mkdir(bad<char>(i))) < 0, "mkdir(%s) returned %ld", what, r);
    EXPECT((r = chdir(bad<char>(i))) < 0, "chdir(%s) returned %ld", what, r);
    EXPECT((r = unlink(bad<char>(i))) < 0, "unlink(%s) returned %ld", what, r);
    EXPECT((r = mknod(bad<char>(i), KAI_DEV_CONSOLE, 0)) < 0, "mknod(%s) returned %ld", what, r);
    EXPECT((r = link(bad<char>(i), "/ut/l")) < 0, "link(%s, new) returned %ld", what, r);
    EXPECT((r = link(file, bad<char>(i))) < 0, "link(old, %s) returned %ld", what, r);
    kai_stat st;
    EXPECT((r = stat(bad<char>(i), &st)) < 0, "stat(%s, ok) returned %ld", what, r);
    EXPECT((r = stat(file, bad<kai_stat>(i))) < 0, "stat(ok, %s) returned %ld", what, r);
    fd = open(file, O_RDONLY);
    EXPECT((r = fstat(fd, bad<kai_stat>(i))) < 0, "fstat(fd, %s) returned %ld", what, r);
    close(fd);
    EXPECT((r = statfs(bad<kai_statfs>(i))) < 0, "statfs(%s) returned %ld", what, r);
    EXPECT((r = pipe(bad<int>(i))) < 0, "pipe(%s) returned %ld", what, r);
    // exec: bad path, bad argv array, bad string inside argv.
    const char* ok_argv[] = {"echo", nullptr};
    EXPECT(exec_fails(bad<char>(i), ok_argv), "exec(%s, argv) succeeded", what);
    EXPECT(exec_fails("/bin/echo", bad<const char* const>(i)), "exec(path, argv=%s) succeeded", what);
    const char* bad_argv[] = {"echo", bad<char>(i), nullptr};
    // (a null element just ends argv: that exec is fine)
    if (bad_ptrs[i].addr != 0)
      EXPECT(exec_fails("/bin/echo", bad_argv), "exec(path, {ok, %s}) succeeded", what);
    // The AI service calls (they may not exist yet: any error is right).
    EXPECT((r = ai_submit(bad<kai_ai_submit>(i))) < 0, "ai_submit(%s) returned %ld", what, r);
    kai_ai_submit req{};
    req.model = bad<char>(i);
    uint32_t tok = 1;
    req.prompt = &tok;
    req.prompt_len = 1;
    req.n_predict = 1;
    EXPECT((r = ai_submit(&req)) < 0, "ai_submit(model=%s) returned %ld", what, r);
    req.model = "SMOL";
    req.prompt = bad<uint32_t>(i);
    EXPECT((r = ai_submit(&req)) < 0, "ai_submit(prompt=%s) returned %ld", what, r);
    EXPECT((r = ai_wait(1, bad<uint32_t>(i), 16, nullptr)) < 0, "ai_wait(out=%s) returned %ld", what, r);
    EXPECT((r = ai_query(1, bad<kai_ai_status>(i))) < 0, "ai_query(%s) returned %ld", what, r);
    EXPECT((r = ai_info(bad<kai_ai_info>(i))) < 0, "ai_info(%s) returned %ld", what, r);
  }
  // Read-only memory (our own text) is a bad destination too.
  {
    int fd = open(file, O_RDONLY);
    long r = read(fd, reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&t_bad_pointers)), 10);
    close(fd);
    EXPECT(r < 0, "read into the read-only text segment returned %ld", r);
    void* text = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&t_bad_pointers));
    r = pipe(static_cast<int*>(text));
    EXPECT(r < 0, "pipe() into the text segment returned %ld", r);
    EXPECT((r = fstat(1, static_cast<kai_stat*>(text))) < 0, "fstat into the text segment returned %ld", r);
    EXPECT((r = stat("/", static_cast<kai_stat*>(text))) < 0, "stat into the text segment returned %ld", r);
    EXPECT((r = statfs(static_cast<kai_statfs*>(text))) < 0, "statfs into the text segment returned %ld", r);
    EXPECT((r = ai_info(static_cast<kai_ai_info*>(text))) < 0, "ai_info into the text segment returned %ld", r);
    r = wait(static_cast<int*>(text));
    EXPECT(r < 0, "wait() storing into the text segment returned %ld", r);
  }
  // A buffer that starts mapped and runs past the end of the heap.
  {
    char* end = reinterpret_cast<char*>(sbrk(0));
    long top = ((reinterpret_cast<long>(end) + 4095) & ~4095L);
    int fd = open(file, O_RDONLY);
    long r = read(fd, reinterpret_cast<char*>(top) - 4, 16);
    close(fd);
    EXPECT(r < 0 || r <= 4, "read straddling the heap end returned %ld", r);
    r = write(2, reinterpret_cast<char*>(top) - 4, 16) ;
    EXPECT(r < 0 || r <= 4, "write straddling the heap end returned %ld", r);
  }
  // wait() with a bad status pointer.
  for (int i = 0; i < NBAD; ++i) {
    if (bad_ptrs[i].addr == 0) continue;   // null means "don't care"
    int r = wait(bad<int>(i));
    EXPECT(r < 0 || r == pid, "wait(%s) returned %d", bad_ptrs[i].what, r);
    if (r == pid) return fail("wait(%s) succeeded", bad_ptrs[i].what);
  }
  wait(nullptr);   // reap the child now
  unlink(file);
  return true;
}

// ---------------------------------------------------------------- files

// scratch_dir/name, in one of 8 rotating buffers (so a few can be alive).
const char* P(const char* name) {
  static char bufs[8][128];
  static int next;
  char* b = bufs[next++ % 8];
  snprintf(b, 128, "%s/%s", scratch_dir, name);
  return b;
}

bool t_file_rw() {
  mkdir(scratch_dir);
  const char* f = P("rw");
  pattern(big_buf, sizeof big_buf, 11);
  int fd = open(f, O_CREATE | O_RDWR | O_TRUNC);
  EXPECT(fd >= 0, "create %s: %s", f, strerror(fd));
  long w = write(fd, big_buf, sizeof big_buf);
  EXPECT(w == sizeof big_buf, "write returned %ld", w);
  kai_stat st;
  EXPECT(fstat(fd, &st) == 0, "fstat");
  EXPECT(st.type == KAI_T_FILE && st.size == sizeof big_buf, "fstat: type %d size %lu", st.type,
         (unsigned long)st.size);
  close(fd);
  fd = open(f, O_RDONLY);
  EXPECT(fd >= 0, "reopen");
  long n = 0, r;
  while ((r = read(fd, big_buf2 + n, 1000)) > 0) n += r;
  EXPECT(r == 0 && n == sizeof big_buf, "read back %ld bytes (last %ld)", n, r);
  EXPECT(memcmp(big_buf, big_buf2, sizeof big_buf) == 0, "contents differ");
  EXPECT(write(fd, "x", 1) < 0, "write to a read-only descriptor succeeded");
  close(fd);
  fd = open(f, O_WRONLY);
  EXPECT(read(fd, big_buf2, 1) < 0, "read from a write-only descriptor succeeded");
  close(fd);
  EXPECT(stat(f, &st) == 0 && st.size == sizeof big_buf && st.nlink == 1, "stat: size %lu nlink %d",
         (unsigned long)st.size, st.nlink);
  EXPECT(unlink(f) == 0, "unlink");
  EXPECT(open(f, O_RDONLY) == -KAI_ENOENT, "file still there after unlink");
  EXPECT(stat(f, &st) == -KAI_ENOENT, "stat of unlinked file did not say ENOENT");
  return true;
}

bool t_file_lseek() {
  mkdir(scratch_dir);
  const char* f = P("seek");
  int fd = open(f, O_CREATE | O_RDWR | O_TRUNC);
  EXPECT(fd >= 0, "create");
  EXPECT(write(fd, "0123456789", 10) == 10, "write");
  EXPECT(lseek(fd, 0, SEEK_CUR) == 10, "SEEK_CUR 0 != 10");
  EXPECT(lseek(fd, 3, SEEK_SET) == 3, "SEEK_SET 3");
  char b[8] = {};
  EXPECT(read(fd, b, 3) == 3 && memcmp(b, "345", 3) == 0, "read after seek got %s", b);
  EXPECT(lseek(fd, -2, SEEK_END) == 8, "SEEK_END -2");
  EXPECT(read(fd, b, 5) == 2 && memcmp(b, "89", 2) == 0, "read at end");
  EXPECT(lseek(fd, -1, SEEK_SET) < 0, "seek to a negative offset succeeded");
  EXPECT(lseek(fd, 0, 7) < 0, "bad whence accepted");
  // Overwrite in the middle.
  EXPECT(lseek(fd, 4, SEEK_SET) == 4 && write(fd, "ab", 2) == 2, "overwrite");
  EXPECT(lseek(fd, 0, SEEK_SET) == 0 && read(fd, b, 8) == 8 && memcmp(b, "0123ab67", 8) == 0,
         "overwrite result");
  // Past the end: a hole reads as zeros.
  long r = lseek(fd, 20, SEEK_SET);
  if (r == 20) {
    EXPECT(write(fd, "Z", 1) == 1, "write after seeking past the end");
    char h[11];
    EXPECT(lseek(fd, 10, SEEK_SET) == 10 && read(fd, h, 11) == 11, "read hole");
    for (int i = 0; i < 10; ++i) EXPECT(h[i] == 0, "hole byte %d is %d", i, h[i]);
    EXPECT(h[10] == 'Z', "byte after the hole");
  }
  close(fd);
  unlink(f);
  return true;
}

bool t_file_trunc_append() {
  mkdir(scratch_dir);
  const char* f = P("ta");
  EXPECT(write_file(f, "hello world", 11) == 0, "create");
  int fd = open(f, O_WRONLY | O_APPEND);
  EXPECT(fd >= 0, "open append");
  EXPECT(write(fd, "!!", 2) == 2, "append write");
  close(fd);
  kai_stat st;
  EXPECT(stat(f, &st) == 0 && st.size == 13, "size after append is %lu", (unsigned long)st.size);
  fd = open(f, O_WRONLY | O_TRUNC);
  EXPECT(fd >= 0, "open trunc");
  close(fd);
  EXPECT(stat(f, &st) == 0 && st.size == 0, "size after O_TRUNC is %lu", (unsigned long)st.size);
  EXPECT(open(P("missing"), O_WRONLY) == -KAI_ENOENT, "open without O_CREATE created a file");
  unlink(f);
  return true;
}

bool t_dirs() {
  mkdir(scratch_dir);
  const char* d = P("dir");
  unlink(P("dir/inner"));   // left over from an earlier failed run?
  unlink(d);
  EXPECT(mkdir(d) == 0, "mkdir %s", d);
  EXPECT(mkdir(d) == -KAI_EEXIST, "second mkdir did not say EEXIST");
  kai_stat st;
  EXPECT(stat(d, &st) == 0 && st.type == KAI_T_DIR, "stat dir");
  EXPECT(chdir(d) == 0, "chdir");
  EXPECT(write_file("inner", "x", 1) == 0, "create file in the new cwd");
  EXPECT(stat(P("dir/inner"), &st) == 0 && st.size == 1, "file not where expected");
  EXPECT(chdir("..") == 0, "chdir ..");
  EXPECT(stat("dir/inner", &st) == 0, "relative path after chdir ..");
  // Read the directory's records and find our file.
  int fd = open(d, O_RDONLY);
  EXPECT(fd >= 0, "open dir");
  kai_dirent de;
  bool found = false, dot = false, dotdot = false;
  while (read(fd, &de, sizeof de) == sizeof de) {
    if (de.inum == 0) continue;
    if (strcmp(de.name, "inner") == 0) found = true;
    if (strcmp(de.name, ".") == 0) dot = true;
    if (strcmp(de.name, "..") == 0) dotdot = true;
  }
  close(fd);
  EXPECT(found && dot && dotdot, "directory records: inner %d . %d .. %d", found, dot, dotdot);
  EXPECT(open(d, O_WRONLY) < 0, "opening a directory for writing succeeded");
  int r = unlink(d);
  EXPECT(r < 0, "unlink of a non-empty directory succeeded");
  EXPECT(chdir(P("dir/inner")) < 0, "chdir into a file succeeded");
  EXPECT(mkdir(P("nodir/sub")) == -KAI_ENOENT, "mkdir in a missing directory did not say ENOENT");
  EXPECT(unlink(P("dir/inner")) == 0, "unlink inner");
  EXPECT(unlink(P("dir/.")) < 0, "unlink of . succeeded");
  EXPECT(unlink(d) == 0, "unlink of the empty directory failed");
  EXPECT(stat(d, &st) == -KAI_ENOENT, "directory still there");
  chdir("/");
  return true;
}

bool t_link() {
  mkdir(scratch_dir);
  char a[64], b[64];
  snprintf(a, sizeof a, "%s/la", scratch_dir);
  snprintf(b, sizeof b, "%s/lb", scratch_dir);
  unlink(b);
  EXPECT(write_file(a, "linked", 6) == 0, "create");
  EXPECT(link(a, b) == 0, "link");
  kai_stat sa, sb;
  EXPECT(stat(a, &sa) == 0 && stat(b, &sb) == 0, "stat");
  EXPECT(sa.ino == sb.ino, "link has a different inode");
  EXPECT(sa.nlink == 2, "nlink is %d, expected 2", sa.nlink);
  EXPECT(link(a, b) == -KAI_EEXIST, "linking onto an existing name did not say EEXIST");
  EXPECT(link(P("nothere"), P("x")) == -KAI_ENOENT, "link of a missing file did not say ENOENT");
  EXPECT(link(scratch_dir, P("dirlink")) < 0, "hard link to a directory succeeded");
  EXPECT(unlink(a) == 0, "unlink a");
  int fd = open(b, O_RDONLY);
  char buf[8] = {};
  EXPECT(fd >= 0 && read(fd, buf, 8) == 6 && memcmp(buf, "linked", 6) == 0, "data gone with the first name");
  EXPECT(fstat(fd, &sb) == 0 && sb.nlink == 1, "nlink after unlink is %d", sb.nlink);
  close(fd);
  unlink(b);
  return true;
}

bool t_unlink_open() {
  // An unlinked file stays readable through an open descriptor.
  mkdir(scratch_dir);
  const char* f = P("uo");
  EXPECT(write_file(f, "still here", 10) == 0, "create");
  int fd = open(f, O_RDONLY);
  EXPECT(fd >= 0, "open");
  EXPECT(unlink(f) == 0, "unlink");
  char buf[16] = {};
  EXPECT(read(fd, buf, 16) == 10 && strcmp(buf, "still here") == 0, "read after unlink got \"%s\"", buf);
  close(fd);
  return true;
}

bool t_dup() {
  mkdir(scratch_dir);
  const char* f = P("dup");
  int fd = open(f, O_CREATE | O_RDWR | O_TRUNC);
  EXPECT(fd >= 0, "create");
  int fd2 = dup(fd);
  EXPECT(fd2 >= 0 && fd2 != fd, "dup returned %d", fd2);
  EXPECT(write(fd, "ab", 2) == 2 && write(fd2, "cd", 2) == 2, "writes");
  EXPECT(lseek(fd, 0, SEEK_CUR) == 4, "dup'd descriptors do not share the offset");
  close(fd);
  char buf[5] = {};
  EXPECT(lseek(fd2, 0, SEEK_SET) == 0 && read(fd2, buf, 4) == 4 && strcmp(buf, "abcd") == 0,
         "contents \"%s\"", buf);
  close(fd2);
  EXPECT(dup(fd2) == -KAI_EBADF, "dup of a closed fd did not say EBADF");
  unlink(f);
  return true;
}

bool t_bad_fds() {
  char c;
  for (int fd : {-1, 16, 100, 1 << 30}) {
    EXPECT(read(fd, &c, 1) == -KAI_EBADF, "read(%d) not EBADF", fd);
    EXPECT(write(fd, &c, 1) == -KAI_EBADF, "write(%d) not EBADF", fd);
    EXPECT(close(fd) == -KAI_EBADF, "close(%d) not EBADF", fd);
    EXPECT(dup(fd) == -KAI_EBADF, "dup(%d) not EBADF", fd);
    kai_stat st;
    EXPECT(fstat(fd, &st) == -KAI_EBADF, "fstat(%d) not EBADF", fd);
    EXPECT(lseek(fd, 0, SEEK_SET) == -KAI_EBADF, "lseek(%d) not EBADF", fd);
  }
  EXPECT(close(10) == -KAI_EBADF, "close of an unused fd");
  // Running out of descriptors.
  int fds[40], n = 0, last = 0;
  for (; n < 40; ++n) {
    fds[n] = open("/", O_RDONLY);
    if (fds[n] < 0) { last = fds[n]; break; }
  }
  for (int i = 0; i < n; ++i) close(fds[i]);
  EXPECT(n < 40, "opened 40 files without running out");
  EXPECT(last == -KAI_EMFILE, "running out of fds gave %d, expected EMFILE", last);
  return true;
}

bool t_bigfile() {
  // 1 MiB written in pieces of 64 KiB and read back.
  mkdir(scratch_dir);
  const char* f = P("big");
  int fd = open(f, O_CREATE | O_WRONLY | O_TRUNC);
  EXPECT(fd >= 0, "create");
  constexpr int PIECES = 16;
  for (int i = 0; i < PIECES; ++i) {
    pattern(big_buf, sizeof big_buf, 100 + i);
    long w = write(fd, big_buf, sizeof big_buf);
    EXPECT(w == sizeof big_buf, "write piece %d returned %ld (%s)", i, w, w < 0 ? strerror(w) : "short");
  }
  close(fd);
  kai_stat st;
  EXPECT(stat(f, &st) == 0 && st.size == PIECES * sizeof big_buf, "size %lu", (unsigned long)st.size);
  fd = open(f, O_RDONLY);
  for (int i = 0; i < PIECES; ++i) {
    pattern(big_buf, sizeof big_buf, 100 + i);
    long n = 0, r;
    while (n < (long)sizeof big_buf && (r = read(fd, big_buf2 + n, sizeof big_buf - n)) > 0) n += r;
    EXPECT(n == sizeof big_buf, "short read in piece %d", i);
    EXPECT(memcmp(big_buf, big_buf2, sizeof big_buf) == 0, "piece %d differs", i);
  }
  close(fd);
  EXPECT(unlink(f) == 0, "unlink");
  return true;
}

void concurrent_writer(long i) {
  char name[64];
  snprintf(name, sizeof name, "%s/cw%ld", scratch_dir, i);
  static char buf[20000];
  pattern(buf, sizeof buf, 500 + i);
  for (int round = 0; round < 5; ++round) {
    if (write_file(name, buf, sizeof buf) != 0) exit(1);
    int fd = open(name, O_RDONLY);
    static char back[20000];
    long n = 0, r;
    while ((r = read(fd, back + n, sizeof back - n)) > 0) n += r;
    close(fd);
    if (n != sizeof buf || memcmp(buf, back, sizeof buf) != 0) exit(2);
  }
  if (unlink(name) != 0) exit(3);
  exit(0);
}

bool t_concurrent_files() {
  mkdir(scratch_dir);
  constexpr int N = 6;
  int pids[N];
  for (int i = 0; i < N; ++i) pids[i] = spawn(concurrent_writer, i);
  for (int i = 0; i < N; ++i) {
    int s = reap(pids[i]);
    EXPECT(s == 0, "writer %d failed with %d", i, s);
  }
  return true;
}

void create_unlink_loop(long i) {
  char name[64];
  for (int k = 0; k < 30; ++k) {
    snprintf(name, sizeof name, "%s/cu%ld_%d", scratch_dir, i, k % 3);
    int fd = open(name, O_CREATE | O_RDWR);
    if (fd < 0) exit(1);
    write(fd, "x", 1);
    close(fd);
    unlink(name);
  }
  exit(0);
}

bool t_concurrent_create() {
  mkdir(scratch_dir);
  int pids[4];
  for (int i = 0; i < 4; ++i) pids[i] = spawn(create_unlink_loop, i);
  for (int i = 0; i < 4; ++i) EXPECT(reap(pids[i]) == 0, "child %d failed", i);
  return true;
}

bool t_statfs() {
  kai_statfs st;
  int r = statfs(&st);
  EXPECT(r == 0, "statfs: %s", strerror(r));
  EXPECT(st.block_size >= 512 && st.total_blocks > 0 && st.free_blocks <= st.total_blocks &&
             st.free_inodes <= st.total_inodes,
         "implausible statfs: bs %lu blocks %lu/%lu inodes %lu/%lu", (unsigned long)st.block_size,
         (unsigned long)st.free_blocks, (unsigned long)st.total_blocks, (unsigned long)st.free_inodes,
         (unsigned long)st.total_inodes);
  // Writing a file uses blocks; removing it gives them back.
  mkdir(scratch_dir);
  const char* f = P("sf");
  pattern(big_buf, sizeof big_buf, 1);
  EXPECT(write_file(f, big_buf, sizeof big_buf) == 0, "create");
  kai_statfs after;
  statfs(&after);
  EXPECT(after.free_blocks < st.free_blocks, "free blocks did not drop (%lu -> %lu)",
         (unsigned long)st.free_blocks, (unsigned long)after.free_blocks);
  unlink(f);
  statfs(&after);
  EXPECT(after.free_blocks == st.free_blocks, "free blocks not restored (%lu -> %lu)",
         (unsigned long)st.free_blocks, (unsigned long)after.free_blocks);
  return true;
}

bool t_long_names() {
  char name[300];
  memset(name, 'n', sizeof name);
  name[299] = 0;
  int r = open(name, O_CREATE | O_RDWR);
  EXPECT(r < 0, "open of a 299-character path succeeded");
  // A component longer than KAI_NAME_MAX.
  mkdir(scratch_dir);
  char p[128];
  int len = snprintf(p, sizeof p, "%s/", scratch_dir);
  memset(p + len, 'c', KAI_NAME_MAX + 5);
  p[len + KAI_NAME_MAX + 5] = 0;
  r = open(p, O_CREATE | O_RDWR);
  if (r >= 0) { close(r); unlink(p); }
  EXPECT(r < 0, "creating a %d-character name succeeded", KAI_NAME_MAX + 5);
  // Exactly KAI_NAME_MAX works.
  p[len + KAI_NAME_MAX] = 0;
  r = open(p, O_CREATE | O_RDWR);
  EXPECT(r >= 0, "creating a %d-character name failed: %s", KAI_NAME_MAX, strerror(r));
  close(r);
  kai_stat st;
  EXPECT(stat(p, &st) == 0, "stat of the long name");
  unlink(p);
  return true;
}

bool t_console_dev() {
  kai_stat st;
  EXPECT(stat("/dev/console", &st) == 0, "stat /dev/console failed");
  EXPECT(st.type == KAI_T_DEVICE, "/dev/console has type %d", st.type);
  EXPECT(fstat(1, &st) == 0, "fstat(1)");
  return true;
}

// ---------------------------------------------------------------- time

bool t_clock() {
  uint64_t prev = clock_ns();
  EXPECT(prev > 0, "clock_ns returned 0");
  for (int i = 0; i < 2000; ++i) {
    uint64_t t = clock_ns();
    EXPECT(t >= prev, "clock_ns went backwards: %lu then %lu", (unsigned long)prev, (unsigned long)t);
    prev = t;
  }
  return true;
}

bool t_sleep() {
  long u0 = uptime();
  uint64_t t0 = clock_ns();
  EXPECT(sleep(20) == 0, "sleep(20) failed");
  uint64_t dt = clock_ns() - t0;
  long du = uptime() - u0;
  EXPECT(dt >= 180000000ULL, "sleep(20) lasted only %lu ms", (unsigned long)(dt / 1000000));
  EXPECT(dt < 5000000000ULL, "sleep(20) lasted %lu ms", (unsigned long)(dt / 1000000));
  EXPECT(du >= 18 && du <= 200, "uptime advanced %ld ticks during sleep(20)", du);
  EXPECT(sleep(0) == 0, "sleep(0)");
  return true;
}

bool t_sleep_many() {
  // Sleepers in parallel wake up at about the same time.
  uint64_t t0 = clock_ns();
  int pids[8];
  for (int i = 0; i < 8; ++i) {
    pids[i] = fork();
    if (pids[i] == 0) { sleep(30); exit(0); }
  }
  for (int i = 0; i < 8; ++i) EXPECT(reap(pids[i]) == 0, "sleeper failed");
  uint64_t dt = clock_ns() - t0;
  EXPECT(dt < 5000000000ULL, "8 parallel sleep(30) took %lu ms", (unsigned long)(dt / 1000000));
  return true;
}

// ---------------------------------------------------------------- libc

bool expect_fmt(const char* want, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
bool expect_fmt(const char* want, const char* fmt, ...) {
  char buf[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  EXPECT(strcmp(buf, want) == 0 && n == static_cast<int>(strlen(want)),
         "format \"%s\" gave \"%s\", expected \"%s\"", fmt, buf, want);
  return true;
}

int cmp_long(const void* a, const void* b) {
  long x = *static_cast<const long*>(a), y = *static_cast<const long*>(b);
  return x < y ? -1 : x > y;
}

bool t_libc() {
  // printf: integers, widths, floats (the FPU must work in user mode).
  if (!expect_fmt("-42|  -42|-0042|-42  |", "%d|%5d|%05d|%-5d|", -42, -42, -42, -42)) return false;
  if (!expect_fmt("ff FF 0x1f 777", "%x %X %p %o", 255, 255, reinterpret_cast<void*>(0x1f), 0777)) return false;
  if (!expect_fmt("18446744073709551615 -9223372036854775807", "%lu %lld", ~0UL, -9223372036854775807LL)) return false;
  if (!expect_fmt("3.141593 3.14  2.7 -0.50 100", "%f %.2f %4.1f %.2f %.0f", 3.14159265, 3.14159, 2.71828, -0.5, 99.6)) return false;
  if (!expect_fmt("1.500000e+03 nan", "%e %f", 1500.0, __builtin_nan(""))) return false;
  if (!expect_fmt("[hi   ][   hi][he]", "[%-5s][%5s][%.2s]", "hi", "hi", "hello")) return false;
  char small[4];
  EXPECT(snprintf(small, sizeof small, "%s", "abcdef") == 6 && strcmp(small, "abc") == 0, "snprintf truncation");
  // Number parsing.
  EXPECT(strtol("  -123x", nullptr, 10) == -123 && strtol("0x1F", nullptr, 0) == 31 &&
         strtol("017", nullptr, 0) == 15 && atoi("77") == 77, "strtol");
  EXPECT(strtoul("18446744073709551615", nullptr, 10) == ~0UL, "strtoul max");
  // memcpy/memmove/memset over every alignment pair.
  static char a[600], b[600];
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d)
      for (int len : {0, 1, 7, 8, 31, 32, 33, 100, 513}) {
        for (int i = 0; i < 600; ++i) { a[i] = static_cast<char>(i * 7 + 1); b[i] = 0; }
        memcpy(b + d, a + s, len);
        EXPECT(memcmp(b + d, a + s, len) == 0 && b[d + len] == 0 && (d == 0 || b[d - 1] == 0),
               "memcpy(dst+%d, src+%d, %d) wrong", d, s, len);
        memset(b + d, 'z', len);
        for (int i = 0; i < len; ++i) EXPECT(b[d + i] == 'z', "memset(+%d, %d)", d, len);
        EXPECT(b[d + len] == 0, "memset wrote past the end");
        for (int i = 0; i < 600; ++i) a[i] = static_cast<char>(i);
        memmove(a + d, a + s, len);
        for (int i = 0; i < len; ++i)
          EXPECT(a[d + i] == static_cast<char>(s + i), "memmove(+%d, +%d, %d) wrong", d, s, len);
      }
  EXPECT(strcmp("abc", "abd") < 0 && strncmp("abc", "abd", 2) == 0 && strcmp("b", "a") > 0, "strcmp");
  EXPECT(strstr("hello world", "o w") && !strstr("abc", "abd") && strrchr("a/b/c", '/')[1] == 'c', "strstr/strrchr");
  // qsort, including many equal keys.
  static long v[5000];
  uint64_t rng = kai_rng_seed(3);
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 5000; ++i) v[i] = k ? i % 4 : static_cast<long>(kai_rng_next(&rng) % 100000);
    qsort(v, 5000, sizeof v[0], cmp_long);
    for (int i = 1; i < 5000; ++i) EXPECT(v[i - 1] <= v[i], "qsort: not sorted at %d", i);
  }
  EXPECT(strcmp(strerror(-KAI_ENOENT), "No such file or directory") == 0, "strerror");
  return true;
}

// ---------------------------------------------------------------- table

struct Test { const char* name; bool (*fn)(); };
const Test tests[] = {
    {"exit_status", t_exit_status},
    {"wait_nochild", t_wait_nochild},
    {"getpid", t_getpid},
    {"fork_many", t_fork_many},
    {"fork_tree", t_fork_tree},
    {"fork_memory", t_fork_memory},
    {"orphans", t_orphans},
    {"exec_echo", t_exec_echo},
    {"exec_errors", t_exec_errors},
    {"exec_many_args", t_exec_many_args},
    {"exec_concurrent", t_exec_concurrent},
    {"faults", t_faults},
    {"bad_syscall", t_bad_syscall},
    {"kill", t_kill},
    {"sbrk_basic", t_sbrk_basic},
    {"sbrk_shrink_unmaps", t_sbrk_shrink_unmaps},
    {"sbrk_big", t_sbrk_big},
    {"sbrk_huge_fails", t_sbrk_huge_fails},
    {"out_of_memory", t_out_of_memory},
    {"fork_until_fail", t_fork_until_fail},
    {"malloc", t_malloc},
    {"pipe_data", t_pipe_data},
    {"pipe_closed", t_pipe_closed},
    {"pipe_many", t_pipe_many},
    {"bad_pointers", t_bad_pointers},
    {"file_rw", t_file_rw},
    {"file_lseek", t_file_lseek},
    {"file_trunc_append", t_file_trunc_append},
    {"dirs", t_dirs},
    {"link", t_link},
    {"unlink_open", t_unlink_open},
    {"dup", t_dup},
    {"bad_fds", t_bad_fds},
    {"bigfile", t_bigfile},
    {"concurrent_files", t_concurrent_files},
    {"concurrent_create", t_concurrent_create},
    {"statfs", t_statfs},
    {"long_names", t_long_names},
    {"console_dev", t_console_dev},
    {"libc", t_libc},
    {"clock", t_clock},
    {"sleep", t_sleep},
    {"sleep_many", t_sleep_many},
};

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
  for (const Test& t : tests) {
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
