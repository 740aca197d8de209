# The trampoline page: mapped at the same virtual address (TRAMPOLINE) in the
# kernel's and every user page table, so the code keeps running while satp
# changes. uservec saves all user registers (integer, FP, fcsr) into the
# trapframe (mapped at TRAPFRAME) and enters usertrap() on the kernel stack;
# userret does the reverse. Offsets follow struct Trapframe in process.h.

#define TRAPFRAME ((1 << 38) - 2 * 4096)
#define X(i) (40 + 8 * (i))
#define F(i) (296 + 8 * (i))
#define FCSR 552

  .section trampsec, "ax", @progbits
  .globl trampoline_uservec
  .balign 4
trampoline_uservec:
  csrw  sscratch, a0
  li    a0, TRAPFRAME
  .irp i, 1,2,3,4,5,6,7,8,9,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  sd    x\i, X(\i)(a0)
  .endr
  csrr  t0, sscratch
  sd    t0, X(10)(a0)
  .irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  fsd   f\i, F(\i)(a0)
  .endr
  frcsr t0
  sd    t0, FCSR(a0)

  ld    sp, 8(a0)              # kernel_sp
  ld    tp, 32(a0)             # kernel_cpu
  ld    t0, 16(a0)             # kernel_trap (usertrap)
  ld    t1, 0(a0)              # kernel_satp
  sfence.vma zero, zero
  csrw  satp, t1
  sfence.vma zero, zero
  jr    t0

  # userret(a0 = user satp)
  .globl trampoline_userret
trampoline_userret:
  sfence.vma zero, zero
  csrw  satp, a0
  sfence.vma zero, zero
  li    a0, TRAPFRAME
  ld    t0, FCSR(a0)
  fscsr t0
  .irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  fld   f\i, F(\i)(a0)
  .endr
  .irp i, 1,2,3,4,5,6,7,8,9,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  ld    x\i, X(\i)(a0)
  .endr
  ld    a0, X(10)(a0)
  sret
