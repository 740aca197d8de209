// System call numbers: the one list shared by the kernel's dispatch table and
// the user-space stubs. A user program puts the number in a7, the arguments in
// a0..a5, executes `ecall`, and finds the result in a0 (negative = -errno).
#pragma once

#define KAI_SYS_fork      1
#define KAI_SYS_exit      2
#define KAI_SYS_wait      3
#define KAI_SYS_pipe      4
#define KAI_SYS_read      5
#define KAI_SYS_kill      6
#define KAI_SYS_exec      7
#define KAI_SYS_fstat     8
#define KAI_SYS_chdir     9
#define KAI_SYS_dup      10
#define KAI_SYS_getpid   11
#define KAI_SYS_sbrk     12
#define KAI_SYS_sleep    13   // sleep(ticks): one tick = 10 ms
#define KAI_SYS_uptime   14   // ticks since boot
#define KAI_SYS_open     15
#define KAI_SYS_write    16
#define KAI_SYS_mknod    17
#define KAI_SYS_unlink   18
#define KAI_SYS_link     19
#define KAI_SYS_mkdir    20
#define KAI_SYS_close    21
#define KAI_SYS_lseek    22
#define KAI_SYS_stat     23
#define KAI_SYS_clock_ns 24   // monotonic nanoseconds from the `time` CSR
#define KAI_SYS_halt     25   // power the machine off through SBI
#define KAI_SYS_setfg    26   // setfg(pid): the process ^C on the console kills
#define KAI_SYS_statfs   27   // statfs(struct kai_statfs*)
#define KAI_SYS_ai_submit 28
#define KAI_SYS_ai_wait   29
#define KAI_SYS_ai_query  30
#define KAI_SYS_ai_cancel 31
#define KAI_SYS_ai_info   32
#define KAI_SYS_ai_control 33   // ai_control(cmd, arg): e.g. the scheduling policy
#define KAI_SYS_COUNT    34
