# swtch(Context* from, Context* to): save this thread's callee-saved integer
# registers and its whole FP state (f0-f31, fcsr) into *from, load *to, and
# return into the other thread. Offsets follow struct Context in cpu.h.

  .section .text
  .globl swtch
swtch:
  sd    ra, 0(a0)
  sd    sp, 8(a0)
  .irp i, 0,1,2,3,4,5,6,7,8,9,10,11
  sd    s\i, 16+8*\i(a0)
  .endr
  .irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  fsd   f\i, 112+8*\i(a0)
  .endr
  frcsr t0
  sd    t0, 368(a0)

  ld    ra, 0(a1)
  ld    sp, 8(a1)
  .irp i, 0,1,2,3,4,5,6,7,8,9,10,11
  ld    s\i, 16+8*\i(a1)
  .endr
  .irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
  fld   f\i, 112+8*\i(a1)
  .endr
  ld    t0, 368(a1)
  fscsr t0
  ret
