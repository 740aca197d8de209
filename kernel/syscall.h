// System-call plumbing shared by every sys_* implementation.
#pragma once
#include <stdint.h>
#include <kai/syscall_numbers.h>
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

// One handler per entry of KAI_SYSCALL_LIST (<kai/syscall_numbers.h>),
// declared from the list: sys_fork, sys_read, ... Where they live:
//   file system (read, open, link, pipe, ...)   kernel/fs/sysfile.cpp
//   processes, time, console (fork, exec, ...)  kernel/sysproc.cpp
//   the AI service (ai_*)                      kernel/ai/sys_ai.cpp
#define KAI_SYSCALL_DECLARE_(number, name) SyscallResult sys_##name();
KAI_SYSCALL_LIST(KAI_SYSCALL_DECLARE_)
#undef KAI_SYSCALL_DECLARE_
