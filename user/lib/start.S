# Entry point of every user program.
# exec() leaves argc in a0 and argv (a pointer into the user stack) in a1,
# and sp just below the argument strings. We clear the frame pointer and
# return address so that debuggers and backtraces stop here, keep sp
# 16-byte aligned as the RISC-V psABI requires, and hand over to C++.
# kai_crt_main runs the global constructors, calls main and never returns.

  .section .text._start, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  andi sp, sp, -16
  li   fp, 0
  li   ra, 0
  call kai_crt_main
1:                      # not reached: exit() does not return
  j    1b
  .size _start, . - _start
