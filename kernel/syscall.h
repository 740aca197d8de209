// System-call plumbing shared by every sys_* implementation.
#pragma once
#include <stdint.h>
#include "error.h"

// A system call returns a value (>= 0) or an error; the dispatcher turns
// errors into -errno in a0.
using SyscallResult = ErrorOr<uint64_t>;

// The n-th system-call argument (a0..a5) of the current process.
uint64_t arg_raw(int n);
inline int64_t arg_int(int n) { return static_cast<int64_t>(arg_raw(n)); }
// Copies the n-th argument as a NUL-terminated user string into buf.
// Errno::Fault for a bad pointer, Errno::NameTooLong if longer than max-1.
ErrorOr<uint64_t> arg_str(int n, char* buf, uint64_t max);

// File-system system calls (kernel/fs/sysfile.cpp).
SyscallResult sys_pipe();  SyscallResult sys_read();  SyscallResult sys_fstat();
SyscallResult sys_chdir(); SyscallResult sys_dup();   SyscallResult sys_open();
SyscallResult sys_write(); SyscallResult sys_mknod(); SyscallResult sys_unlink();
SyscallResult sys_link();  SyscallResult sys_mkdir(); SyscallResult sys_close();
SyscallResult sys_lseek(); SyscallResult sys_stat();  SyscallResult sys_statfs();

// Process system calls (kernel/sysproc.cpp).
SyscallResult sys_fork();   SyscallResult sys_exit();     SyscallResult sys_wait();
SyscallResult sys_kill();   SyscallResult sys_exec();     SyscallResult sys_getpid();
SyscallResult sys_sbrk();   SyscallResult sys_sleep();    SyscallResult sys_uptime();
SyscallResult sys_clock_ns(); SyscallResult sys_halt();   SyscallResult sys_setfg();

// AI-service system calls (kernel/ai/sys_ai.cpp).
SyscallResult sys_ai_submit(); SyscallResult sys_ai_wait(); SyscallResult sys_ai_query();
SyscallResult sys_ai_cancel(); SyscallResult sys_ai_info();
SyscallResult sys_ai_control();
