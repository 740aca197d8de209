// usertests: processes (fork, exit, wait, exec) and what kills them
// (faults, bad system-call numbers, kill).
#include "harness.h"

using namespace ut;

namespace {

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

// A fork loop of children that each make one unknown system call: every
// call returns -ENOSYS. The kernel reports an unknown number once per
// process but at most a few lines a second in all, so this loop cannot
// flood the console (tests/qemu/test_kernel.py counts the lines).
constexpr long kFloodNumber = 777;   // no system call has this number
constexpr int kFloodChildren = 100;

void unknown_call_child() {
  register long a7 asm("a7") = kFloodNumber;
  register long a0 asm("a0") = 0;
  asm volatile("ecall" : "+r"(a0) : "r"(a7) : "memory");
  exit(a0 == -KAI_ENOSYS ? 0 : 1);
}

bool t_unknown_syscall_flood() {
  for (int i = 0; i < kFloodChildren; ++i) {
    int s = in_child(unknown_call_child);
    EXPECT(s == 0, "child %d: system call %ld did not return -ENOSYS (status %d)", i, kFloodNumber, s);
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

const Test kTests[] = {
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
    {"unknown_syscall_flood", t_unknown_syscall_flood},
    {"kill", t_kill},
};
}  // namespace

const TestGroup ut::processes_tests = UT_GROUP(kTests);
