# System-call stubs: one small function per entry of KAI_SYSCALL_LIST in
# <kai/syscall_numbers.h>, generated from the list by the preprocessor.
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

# The list expands to one line; ';' separates the statements on it.
#define KAI_SYSCALL_STUB(number, name) SYSCALL name, number;
KAI_SYSCALL_LIST(KAI_SYSCALL_STUB)
