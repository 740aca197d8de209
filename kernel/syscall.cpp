// System-call dispatch: a7 selects the handler, a0..a5 are its arguments,
// and the result (or -errno) goes back in a0.
#include "syscall.h"
#include "printf.h"
#include "process.h"
#include "syscall_dispatch.h"
#include "log_budget.h"
#include "trap.h"

namespace {

// An unknown system-call number is reported once per process, and at most
// kUnknownSyscallLines a second by all processes together (a fork loop makes
// a new process for every call; see log_budget.h).
constexpr uint32_t kUnknownSyscallLines = 5;
constinit LogBudget unknown_syscall_log{"unknown_syscall_log", kUnknownSyscallLines, 1'000'000'000};

using Handler = SyscallResult (*)();

// Generated from the one list: table[KAI_SYS_read] = sys_read, ...
// (g++ accepts array designators only in order from [0], hence the first.)
constexpr Handler table[KAI_SYS_COUNT] = {
    [0] = nullptr,   // 0 is no system call
#define KAI_SYSCALL_ENTRY_(number, name) [number] = sys_##name,
    KAI_SYSCALL_LIST(KAI_SYSCALL_ENTRY_)
#undef KAI_SYSCALL_ENTRY_
};

// The list must be dense (1 .. KAI_SYS_COUNT-1, each once): a gap would be
// a number that silently returns -ENOSYS, a duplicate would overwrite an
// entry. KAI_SYS_COUNT is the number of entries plus one, so "every number
// in range and none twice" means dense.
constexpr unsigned kNumbers[] = {
#define KAI_SYSCALL_NUMBER_(number, name) number,
    KAI_SYSCALL_LIST(KAI_SYSCALL_NUMBER_)
#undef KAI_SYSCALL_NUMBER_
};
constexpr bool numbers_are_dense() {
  bool seen[KAI_SYS_COUNT] = {};
  for (unsigned n : kNumbers) {
    if (n == 0 || n >= KAI_SYS_COUNT || seen[n]) return false;
    seen[n] = true;
  }
  return true;
}
static_assert(numbers_are_dense(), "KAI_SYSCALL_LIST has a gap or a duplicate number");

}  // namespace

uint64_t arg_raw(int n) {
  Process* p = current_process();
  if (!p->trapframe || n < 0 || n > 5) return 0;
  return p->trapframe->x[REG_A0 + n];
}

ErrorOr<uint64_t> arg_str(int n, char* buf, uint64_t max) {
  return copy_string_from_user(buf, arg_ptr<char>(n), max);
}

void syscall_dispatch() {
  Process* p = current_process();
  uint64_t num = p->trapframe->x[REG_A7];
  SyscallResult result = Errno::NoSys;
  if (num < KAI_SYS_COUNT && table[num]) {
    result = table[num]();
  } else if (!p->logged_unknown_syscall) {
    p->logged_unknown_syscall = true;
    uint64_t left_out = 0;
    if (unknown_syscall_log.take(clock_ns(), &left_out)) {
      if (left_out != 0)
        kprintf("kai: %lu unknown-system-call lines left out (at most %u a second)\n", left_out,
                kUnknownSyscallLines);
      kprintf("pid %d (%s): unknown system call %lu (logged once per process)\n", p->pid, p->name,
              num);
    }
  }
  p->trapframe->x[REG_A0] =
      result.is_error() ? static_cast<uint64_t>(-static_cast<int64_t>(result.error()))
                        : result.value();
}
