# Traps taken while in the kernel (interrupts, or a kernel bug). Saves every
# register the C++ handler might clobber - the integer caller-saved set and,
# because kernel code may use floating point anywhere, all FP registers and
# fcsr - on the current kernel stack, then calls kerneltrap().
# tp is not restored: after a yield() inside kerneltrap() the thread may
# resume on another hart, and tp must keep naming the hart it is on now.

#define FRAME (8 * 32 + 8 * 32 + 16)

  .section .text
  .globl kernelvec
  .balign 4
kernelvec:
  addi  sp, sp, -FRAME
  .irp i, 1,3,5,6,7,10,11,12,13,14,15,16,17,28,29,30,31
  sd    x\i, 8*\i(sp)
  .endr
  .irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  fsd   f\i, 256+8*\i(sp)
  .endr
  frcsr t0
  sd    t0, 512(sp)

  mv    a0, sp        # kerneltrap(frame): the saved registers, x_i at frame[i]
  call  kerneltrap

  ld    t0, 512(sp)
  fscsr t0
  .irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  fld   f\i, 256+8*\i(sp)
  .endr
  .irp i, 1,3,5,6,7,10,11,12,13,14,15,16,17,28,29,30,31
  ld    x\i, 8*\i(sp)
  .endr
  addi  sp, sp, FRAME
  sret
