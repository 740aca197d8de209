# System-call stubs: one small function per number in syscall_numbers.h.
# The arguments are already in a0..a5 (the C calling convention and the
# kernel's agree), so a stub only loads the number into a7 and traps.
# The kernel returns the result in a0: >= 0 for success, -errno on error.
#include <kai/syscall_numbers.h>

.macro SYSCALL name, number
  .section .text.\name, "ax", @progbits
  .globl \name
  .type \name, @function
\name:
  li   a7, \number
  ecall
  ret
  .size \name, . - \name
.endm

SYSCALL fork,      KAI_SYS_fork
SYSCALL exit,      KAI_SYS_exit
SYSCALL wait,      KAI_SYS_wait
SYSCALL pipe,      KAI_SYS_pipe
SYSCALL read,      KAI_SYS_read
SYSCALL kill,      KAI_SYS_kill
SYSCALL exec,      KAI_SYS_exec
SYSCALL fstat,     KAI_SYS_fstat
SYSCALL chdir,     KAI_SYS_chdir
SYSCALL dup,       KAI_SYS_dup
SYSCALL getpid,    KAI_SYS_getpid
SYSCALL sbrk,      KAI_SYS_sbrk
SYSCALL sleep,     KAI_SYS_sleep
SYSCALL uptime,    KAI_SYS_uptime
SYSCALL open,      KAI_SYS_open
SYSCALL write,     KAI_SYS_write
SYSCALL mknod,     KAI_SYS_mknod
SYSCALL unlink,    KAI_SYS_unlink
SYSCALL link,      KAI_SYS_link
SYSCALL mkdir,     KAI_SYS_mkdir
SYSCALL close,     KAI_SYS_close
SYSCALL lseek,     KAI_SYS_lseek
SYSCALL stat,      KAI_SYS_stat
SYSCALL clock_ns,  KAI_SYS_clock_ns
SYSCALL halt,      KAI_SYS_halt
SYSCALL setfg,     KAI_SYS_setfg
SYSCALL statfs,    KAI_SYS_statfs
SYSCALL ai_submit, KAI_SYS_ai_submit
SYSCALL ai_wait,   KAI_SYS_ai_wait
SYSCALL ai_query,  KAI_SYS_ai_query
SYSCALL ai_cancel, KAI_SYS_ai_cancel
SYSCALL ai_info,   KAI_SYS_ai_info
SYSCALL ai_control, KAI_SYS_ai_control
