// System-call dispatch: a7 selects the handler, a0..a5 are its arguments,
// and the result (or -errno) goes back in a0.
#include "syscall.h"
#include "../include/kai/syscall_numbers.h"
#include "printf.h"
#include "process.h"
#include "syscall_dispatch.h"

namespace {

using Handler = SyscallResult (*)();

constexpr Handler table[KAI_SYS_COUNT] = {
    [0] = nullptr,
    [KAI_SYS_fork] = sys_fork,
    [KAI_SYS_exit] = sys_exit,
    [KAI_SYS_wait] = sys_wait,
    [KAI_SYS_pipe] = sys_pipe,
    [KAI_SYS_read] = sys_read,
    [KAI_SYS_kill] = sys_kill,
    [KAI_SYS_exec] = sys_exec,
    [KAI_SYS_fstat] = sys_fstat,
    [KAI_SYS_chdir] = sys_chdir,
    [KAI_SYS_dup] = sys_dup,
    [KAI_SYS_getpid] = sys_getpid,
    [KAI_SYS_sbrk] = sys_sbrk,
    [KAI_SYS_sleep] = sys_sleep,
    [KAI_SYS_uptime] = sys_uptime,
    [KAI_SYS_open] = sys_open,
    [KAI_SYS_write] = sys_write,
    [KAI_SYS_mknod] = sys_mknod,
    [KAI_SYS_unlink] = sys_unlink,
    [KAI_SYS_link] = sys_link,
    [KAI_SYS_mkdir] = sys_mkdir,
    [KAI_SYS_close] = sys_close,
    [KAI_SYS_lseek] = sys_lseek,
    [KAI_SYS_stat] = sys_stat,
    [KAI_SYS_clock_ns] = sys_clock_ns,
    [KAI_SYS_halt] = sys_halt,
    [KAI_SYS_setfg] = sys_setfg,
    [KAI_SYS_statfs] = sys_statfs,
    [KAI_SYS_ai_submit] = sys_ai_submit,
    [KAI_SYS_ai_wait] = sys_ai_wait,
    [KAI_SYS_ai_query] = sys_ai_query,
    [KAI_SYS_ai_cancel] = sys_ai_cancel,
    [KAI_SYS_ai_info] = sys_ai_info,
    [KAI_SYS_ai_control] = sys_ai_control,
};

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
    kprintf("pid %d (%s): unknown system call %lu (logged once per process)\n", p->pid, p->name,
            num);
  }
  p->trapframe->x[REG_A0] =
      result.is_error() ? static_cast<uint64_t>(-static_cast<int64_t>(result.error()))
                        : result.value();
}

// Placeholders until kernel/ai/ provides the real ones.
__attribute__((weak)) SyscallResult sys_ai_submit() { return Errno::NoSys; }
__attribute__((weak)) SyscallResult sys_ai_wait() { return Errno::NoSys; }
__attribute__((weak)) SyscallResult sys_ai_query() { return Errno::NoSys; }
__attribute__((weak)) SyscallResult sys_ai_cancel() { return Errno::NoSys; }
__attribute__((weak)) SyscallResult sys_ai_info() { return Errno::NoSys; }
__attribute__((weak)) SyscallResult sys_ai_control() { return Errno::NoSys; }
