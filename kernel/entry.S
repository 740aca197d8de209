# Kernel entry. OpenSBI jumps to _start on the boot hart (any hart id) with
# a0 = hart id, a1 = device tree; other harts arrive at _secondary_start when
# the boot hart asks SBI HSM to start them.
# Each cpu index i runs on boot_stacks[i] until it switches to a process.
#
# OpenSBI 1.1 (QEMU 7.2) has a race in hart_start: the new hart can see its
# state change before its start address is written and jump to the *default*
# address, _start, with the device tree in a1. So _start lets exactly one
# hart through (the first, claiming boot_claimed in .data, which is not zeroed)
# and sends any later arrival to the secondary path. Secondary cpu indices
# come from an atomic counter, not from the (possibly stale) opaque argument.

#define BOOT_STACK_SIZE 16384
#define NCPU 8

  .section .text.entry, "ax", @progbits
  .globl _start
_start:
  la    t0, boot_claimed
  li    t1, 1
  amoswap.w.aqrl t1, t1, (t0)
  bnez  t1, _secondary_start   # not the first hart here: see above
  # Floating point on before any C++ runs: the compiler may use FP registers.
  li    t0, (1 << 13)          # sstatus.FS = Initial
  csrs  sstatus, t0
  csrw  fcsr, zero
  la    t0, __bss_start
  la    t1, __bss_end
1:
  bgeu  t0, t1, 2f
  sd    zero, 0(t0)
  addi  t0, t0, 8
  j     1b
2:
  la    sp, boot_stacks
  li    t0, BOOT_STACK_SIZE
  add   sp, sp, t0             # top of cpu 0's stack
  li    tp, 0                  # cpu index 0 = the boot hart
  call  kmain
3:
  wfi
  j     3b

  .globl _secondary_start
_secondary_start:
  li    t0, (1 << 13)
  csrs  sstatus, t0
  csrw  fcsr, zero
  la    t0, next_cpu_index
  li    t1, 1
  amoadd.w.aqrl a1, t1, (t0)   # a1 = this hart's cpu index
  li    t0, NCPU
  bgeu  a1, t0, 4f             # more harts than NCPU: park this one
  mv    tp, a1
  la    sp, boot_stacks
  li    t0, BOOT_STACK_SIZE
  addi  t1, a1, 1
  mul   t0, t0, t1
  add   sp, sp, t0
  call  kmain_secondary
4:
  wfi
  j     4b

  .section .data
  .balign 8
  .globl boot_claimed, next_cpu_index
boot_claimed:
  .word 0
next_cpu_index:
  .word 1

  .section .bss
  .balign 16
  .globl boot_stacks
boot_stacks:
  .space BOOT_STACK_SIZE * NCPU
