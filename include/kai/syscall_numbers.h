// The system calls of kai: the ONE list, X(number, name), from which
//   - the numbers KAI_SYS_<name> below,
//   - the kernel's dispatch table and sys_<name> declarations (kernel/syscall.*),
//   - the user-space stubs (user/lib/syscall.S)
// are all generated, and against which user/lib/syscall_check.cpp checks at
// build time that kai_sys.h declares a C function for every entry. Adding a
// system call is one line here plus its sys_<name> and its prototype.
//
// A user program puts the number in a7, the arguments in a0..a5, executes
// `ecall`, and finds the result in a0 (negative = -errno). Numbers are ABI:
// never renumber, only append.
#pragma once

#define KAI_SYSCALL_LIST(X)                                                   \
  X(1, fork)                                                                  \
  X(2, exit)                                                                  \
  X(3, wait)                                                                  \
  X(4, pipe)                                                                  \
  X(5, read)                                                                  \
  X(6, kill)                                                                  \
  X(7, exec)                                                                  \
  X(8, fstat)                                                                 \
  X(9, chdir)                                                                 \
  X(10, dup)                                                                  \
  X(11, getpid)                                                               \
  X(12, sbrk)                                                                 \
  X(13, sleep)      /* sleep(ticks): one tick = 10 ms */                      \
  X(14, uptime)     /* ticks since boot */                                    \
  X(15, open)                                                                 \
  X(16, write)                                                                \
  X(17, mknod)                                                                \
  X(18, unlink)                                                               \
  X(19, link)                                                                 \
  X(20, mkdir)                                                                \
  X(21, close)                                                                \
  X(22, lseek)                                                                \
  X(23, stat)                                                                 \
  X(24, clock_ns)   /* monotonic nanoseconds from the `time` CSR */           \
  X(25, halt)       /* power the machine off through SBI */                   \
  X(26, setfg)      /* setfg(pid): the process ^C on the console kills */     \
  X(27, statfs)     /* statfs(struct kai_statfs*) */                          \
  X(28, ai_submit)  /* the AI service: see ai_abi.h */                        \
  X(29, ai_wait)                                                              \
  X(30, ai_query)                                                             \
  X(31, ai_cancel)                                                            \
  X(32, ai_info)                                                              \
  X(33, ai_control) /* ai_control(cmd, arg): e.g. the scheduling policy */  \
  X(34, ai_read)    /* streaming: the tokens of a request as they come */   \
  X(35, setsid)     /* a new session led by the caller: returns its id */     \
  X(36, getsid)     /* getsid(pid): the session of pid (0: the caller) */  \
  X(37, meminfo)    /* meminfo(struct kai_meminfo*): free pages, policy */  \
  X(38, mmap)       /* mmap(addr, len, prot, flags, fd, off): kai/mman_abi.h */ \
  X(39, munmap)     /* munmap(addr, len) */                                   \
  X(40, madvise)    /* madvise(addr, len, advice) */                          \
  X(41, vmstat)     /* vmstat(struct kai_vmstat*): this process's faults */ \
  X(42, dropcaches) /* evicts every unmapped page-cache page: pages freed */ \
  X(43, msync)      /* msync(addr, len, flags): shared maps' stores to the file */

#ifndef __ASSEMBLER__
// KAI_SYS_fork = 1, ... and KAI_SYS_COUNT, one more than the highest number
// (the list is dense: kernel/syscall.cpp checks that no number is missing).
enum kai_syscall_number : unsigned {
#define KAI_SYSCALL_ENUM_(number, name) KAI_SYS_##name = number,
  KAI_SYSCALL_LIST(KAI_SYSCALL_ENUM_)
#undef KAI_SYSCALL_ENUM_
#define KAI_SYSCALL_ONE_(number, name) +1
  KAI_SYS_COUNT = 1 KAI_SYSCALL_LIST(KAI_SYSCALL_ONE_)
#undef KAI_SYSCALL_ONE_
};
#endif
