// sysfuzz [--calls N] [--seed S] [--limit-s T]: makes N random system calls
// with hostile arguments in a child process, then checks that the kernel
// still answers. The kernel's promise under test: a bad argument returns an
// error code; it never panics, hangs or corrupts another process.
//
// Hostile arguments, by the kind of each parameter:
//   pointer: null, kernel text, OpenSBI, unmapped, far above user space,
//            misaligned, straddling the end of the heap into unmapped memory,
//            or a valid scratch buffer (random bytes or a short path);
//   length:  0, small, page-sized, huge, negative;
//   fd:      -1, 0..20 (the child closes 0, 1 and 2 first), huge;
//   number:  anything (the system-call number too: unknown ones included).
// Calls that would legitimately end or freeze the experiment get only
// arguments that cannot: exit, fork, halt and setfg are never made; kill
// only with pids no process has; sleep at most 2 ticks; pipe and mknod only
// with bad pointers (a pipe it holds both ends of, or a console device,
// would block read forever). So a child that does not finish within the
// limit means a kernel bug, and the parent (through a watchdog child)
// kills it and reports "hung".
//
// Besides returning, two answers are known in advance and checked: an
// unknown system-call number gets ENOSYS, and pipe/mknod with a pointer no
// call can use get an error. A run must also reach both sides: some calls
// succeed, some return an error (a fuzzer whose every call failed at the
// first check would test nothing). The summary line counts all of these.
//
// Exit status 0 when every call returned, every known answer was right, both
// sides were reached and the kernel answers after.
#include "kai.h"

namespace {

uint64_t rng;
uint64_t next() { return kai_rng_next(&rng); }
uint64_t below(uint64_t n) { return next() % n; }

// Where valid-pointer arguments point: never the stack or anything the
// fuzzer itself reads, so a successful read() cannot corrupt its state.
alignas(4096) char scratch[3 * 4096];

enum class Kind : uint8_t { Ptr, Len, Fd, Num, BadPtr, BadStr, Pid, Ticks };

struct Spec {
  uint32_t number;
  Kind args[4];
  uint8_t nargs;
};

// The system calls the fuzzer makes and the kind of each argument.
constexpr Spec kSpecs[] = {
    {KAI_SYS_wait, {Kind::Ptr}, 1},
    {KAI_SYS_pipe, {Kind::BadPtr}, 1},
    {KAI_SYS_read, {Kind::Fd, Kind::Ptr, Kind::Len}, 3},
    {KAI_SYS_kill, {Kind::Pid}, 1},
    {KAI_SYS_exec, {Kind::Ptr, Kind::Ptr}, 2},
    {KAI_SYS_fstat, {Kind::Fd, Kind::Ptr}, 2},
    {KAI_SYS_chdir, {Kind::Ptr}, 1},
    {KAI_SYS_dup, {Kind::Fd}, 1},
    {KAI_SYS_getpid, {}, 0},
    {KAI_SYS_sbrk, {Kind::Num}, 1},
    {KAI_SYS_sleep, {Kind::Ticks}, 1},
    {KAI_SYS_uptime, {}, 0},
    {KAI_SYS_open, {Kind::Ptr, Kind::Num}, 2},
    {KAI_SYS_write, {Kind::Fd, Kind::Ptr, Kind::Len}, 3},
    {KAI_SYS_mknod, {Kind::BadStr, Kind::Num, Kind::Num}, 3},
    {KAI_SYS_unlink, {Kind::Ptr}, 1},
    {KAI_SYS_link, {Kind::Ptr, Kind::Ptr}, 2},
    {KAI_SYS_mkdir, {Kind::Ptr}, 1},
    {KAI_SYS_close, {Kind::Fd}, 1},
    {KAI_SYS_lseek, {Kind::Fd, Kind::Num, Kind::Num}, 3},
    {KAI_SYS_stat, {Kind::Ptr, Kind::Ptr}, 2},
    {KAI_SYS_clock_ns, {}, 0},
    {KAI_SYS_statfs, {Kind::Ptr}, 1},
    {KAI_SYS_meminfo, {Kind::Ptr}, 1},
    {KAI_SYS_mmap, {Kind::Ptr, Kind::Len, Kind::Num, Kind::Num}, 4},   // fd and offset: whatever a4, a5 hold
    {KAI_SYS_munmap, {Kind::Ptr, Kind::Len}, 2},
    {KAI_SYS_madvise, {Kind::Ptr, Kind::Len, Kind::Num}, 3},
    {KAI_SYS_vmstat, {Kind::Ptr}, 1},
    {KAI_SYS_dropcaches, {}, 0},
    {KAI_SYS_msync, {Kind::Ptr, Kind::Len, Kind::Num}, 3},
    {KAI_SYS_ai_submit, {Kind::Ptr}, 1},
    {KAI_SYS_ai_wait, {Kind::Num, Kind::Ptr, Kind::Len, Kind::Ptr}, 4},
    {KAI_SYS_ai_query, {Kind::Num, Kind::Ptr}, 2},
    {KAI_SYS_ai_cancel, {Kind::Num}, 1},
    {KAI_SYS_ai_info, {Kind::Ptr}, 1},
};
constexpr uint32_t kNumSpecs = sizeof(kSpecs) / sizeof(kSpecs[0]);

uint64_t raw_syscall(uint64_t num, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
  register uint64_t r_a0 asm("a0") = a0;
  register uint64_t r_a1 asm("a1") = a1;
  register uint64_t r_a2 asm("a2") = a2;
  register uint64_t r_a3 asm("a3") = a3;
  register uint64_t r_a7 asm("a7") = num;
  asm volatile("ecall" : "+r"(r_a0) : "r"(r_a1), "r"(r_a2), "r"(r_a3), "r"(r_a7) : "memory");
  return r_a0;
}

// A pointer no call can use whole: null, kernel, unmapped, or straddling
// the end of the heap (its first bytes valid, the rest unmapped). A string
// that straddles may still end (a zero byte) before the unmapped part, and
// then it is a valid string: strings get only the wholly bad pointers.
uint64_t bad_pointer(bool string = false) {
  static const uint64_t fixed[] = {
      0, 1, 0x8000, 0x80000000ull, 0x80200000ull, 0x7fffffff000ull, 0x3ffffff000ull,
      0xffffffffffff0000ull, 0x4000000000ull, ~0ull,
  };
  if (!string && below(3) == 0) {
    // The break itself need not be page-aligned; the mapping ends at the
    // next page boundary, so straddle that.
    uint64_t end = (static_cast<uint64_t>(sbrk(0)) + 4095) & ~4095ull;
    return end - 1 - below(7);
  }
  return fixed[below(sizeof(fixed) / sizeof(fixed[0]))];
}

uint64_t pointer() {
  if (below(3) == 0) return bad_pointer();
  if (below(8) == 0) return reinterpret_cast<uint64_t>(scratch) + 1 + below(7);   // misaligned
  // Valid scratch memory: random bytes, or a short path from a tiny alphabet
  // so that the file-system calls get past name lookup sometimes.
  static const char* const paths[] = {"a", "b", "a/b", ".", "..", "fz", "a/../b", "//"};
  char* p = scratch + below(2) * 4096;
  if (below(2) == 0) {
    const char* s = paths[below(sizeof(paths) / sizeof(paths[0]))];
    strcpy(p, s);
  } else {
    for (int i = 0; i < 64; i++) p[i] = static_cast<char>(next());
  }
  if (below(8) == 0) return reinterpret_cast<uint64_t>(scratch) + sizeof(scratch) - 2;   // end of buffer
  return reinterpret_cast<uint64_t>(p);
}

uint64_t value(Kind k) {
  switch (k) {
    case Kind::Ptr: return pointer();
    case Kind::BadPtr: return bad_pointer();
    case Kind::BadStr: return bad_pointer(true);
    case Kind::Len: {
      static const uint64_t lens[] = {0, 1, 7, 64, 4096, 8192, 1ull << 20, 1ull << 40, ~0ull, 0x80000000ull};
      return lens[below(sizeof(lens) / sizeof(lens[0]))];
    }
    case Kind::Fd: {
      uint64_t r = below(10);
      if (r == 0) return ~0ull;            // -1
      if (r == 1) return 1ull << 33;       // huge
      return below(21);
    }
    case Kind::Pid: return below(2) ? 0 : (below(2) ? ~0ull - below(100) : 1000000 + below(1000));
    case Kind::Ticks: return below(4) == 0 ? ~0ull : below(3);   // negative or 0..2
    case Kind::Num:
    default: {
      uint64_t r = below(4);
      if (r == 0) return next();
      if (r == 1) return below(64);
      if (r == 2) return ~0ull - below(64);
      return next() >> (below(64));
    }
  }
}

// The child reports through its exit status (its file descriptors are fuzzed,
// so a pipe could be closed under it): bits 0..19 calls made / 100, bit 20
// some call succeeded, bit 21 some call returned an error, bits 22..29 how
// many known answers were wrong (at most 255).
constexpr int kCallsMask = (1 << 20) - 1, kSawSuccess = 1 << 20, kSawError = 1 << 21, kWrongShift = 22;

bool is_error(uint64_t r) { return int64_t(r) < 0 && int64_t(r) > -4096; }

[[noreturn]] void fuzz_child(uint32_t calls) {
  for (int fd = 0; fd < 3; fd++) close(fd);
  mkdir("/fz");
  chdir("/fz");
  uint32_t made = 0, wrong = 0;
  int seen = 0;
  for (; made < calls; made++) {
    uint64_t num;
    uint64_t a[4] = {0, 0, 0, 0};
    bool unknown = below(20) == 0, bad_pointer_arg = false;
    if (unknown) {
      // An unknown number: far past the table, negative, or just past it.
      uint64_t r = below(3);
      num = r == 0 ? KAI_SYS_COUNT + below(100) : (r == 1 ? ~0ull - below(10) : next());
      for (auto& x : a) x = next();
    } else {
      const Spec& s = kSpecs[below(kNumSpecs)];
      num = s.number;
      for (int i = 0; i < s.nargs; i++) {
        a[i] = value(s.args[i]);
        bad_pointer_arg |= s.args[i] == Kind::BadPtr || s.args[i] == Kind::BadStr;
      }
    }
    uint64_t r = raw_syscall(num, a[0], a[1], a[2], a[3]);
    seen |= is_error(r) ? kSawError : kSawSuccess;
    if (unknown && r != uint64_t(-KAI_ENOSYS)) wrong++;
    if (bad_pointer_arg && !is_error(r)) wrong++;
  }
  exit(static_cast<int>(made / 100) | seen | (static_cast<int>(wrong < 255 ? wrong : 255) << kWrongShift));
}


}  // namespace

int main(int argc, char** argv) {
  uint64_t calls = 10000, seed = 1, limit_s = 300;
  for (int i = 1; i < argc; i++) {
    uint64_t* dst = nullptr;
    if (!strcmp(argv[i], "--calls")) dst = &calls;
    else if (!strcmp(argv[i], "--seed")) dst = &seed;
    else if (!strcmp(argv[i], "--limit-s")) dst = &limit_s;
    if (!dst || i + 1 >= argc) {
      fprintf(2, "sysfuzz: %s: unknown option or missing value\n"
                 "usage: sysfuzz [--calls N] [--seed S] [--limit-s T]\n", argv[i]);
      return 2;
    }
    uint32_t hi = dst == &calls ? 10000000 : dst == &limit_s ? 86400 : 0xffffffffu;
    *dst = number_option("sysfuzz", argv[i], argv[i + 1], dst == &limit_s ? 1 : 0, hi);
    i++;
  }
  calls -= calls % 100;
  rng = kai_rng_seed(seed);
  uint64_t t0 = clock_ns();
  int child = fork();
  if (child < 0) {
    printf("sysfuzz: fork: %s\n", strerror(child));
    return 1;
  }
  if (child == 0) fuzz_child(static_cast<uint32_t>(calls));
  int watchdog = fork();
  if (watchdog == 0) {
    sleep(static_cast<int>(limit_s * 100));
    kill(child);
    exit(0);
  }
  int status = -1, child_status = -1;
  for (int reaped = 0; reaped < 2;) {
    int pid = wait(&status);
    if (pid < 0) break;
    reaped++;
    if (pid == child) {
      child_status = status;
      kill(watchdog);   // it sleeps; it dies when it wakes
    }
  }
  uint64_t ms = (clock_ns() - t0) / 1000000;
  bool exited = child_status >= 0;   // a killed child's status is negative
  uint64_t made = exited ? uint64_t(child_status & kCallsMask) * 100 : 0;
  bool finished = exited && made == calls;
  int wrong = exited ? (child_status >> kWrongShift) & 255 : 0;
  bool both_sides = exited && (child_status & kSawSuccess) && (child_status & kSawError);
  // Does the kernel still answer?
  kai_ai_info info;
  bool answers = getpid() > 0 && ai_info(&info) == 0 && uptime() > 0;
  printf("sysfuzz: %lu calls (seed %lu) in %lu ms: %s; wrong answers: %d; successes and errors: %s; "
         "kernel answers: %s\n",
         made, seed, ms, finished ? "all returned" : "child hung or died (killed)", wrong,
         both_sides ? "both" : "NOT BOTH", answers ? "yes" : "NO");
  return finished && wrong == 0 && both_sides && answers ? 0 : 1;
}
