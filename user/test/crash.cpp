// crash [null|write|ill|jump]: a program that faults on purpose, to show that
// the kernel kills a faulting process and the shell carries on.
//   null   read through a null pointer (the default)
//   write  store through a null pointer
//   ill    execute an illegal instruction
//   jump   jump to an unmapped address
#include "kai.h"

int main(int argc, char** argv) {
  const char* how = argc > 1 ? argv[1] : "null";
  bool known = false;
  for (const char* h : {"null", "write", "ill", "jump"}) known |= strcmp(how, h) == 0;
  if (!known || argc > 2) {
    fprintf(2, "crash: unexpected argument '%s'\nusage: crash [null|write|ill|jump]\n", argv[known ? 2 : 1]);
    return 2;
  }
  printf("crash: %s, pid %d\n", how, getpid());
  if (strcmp(how, "write") == 0) {
    *reinterpret_cast<volatile int*>(0) = 42;
  } else if (strcmp(how, "ill") == 0) {
    asm volatile(".word 0");   // all-zero bits are defined to be illegal
  } else if (strcmp(how, "jump") == 0) {
    reinterpret_cast<void (*)()>(0x8)();
  } else {
    volatile int* p = nullptr;
    printf("read %d\n", *p);
  }
  printf("crash: still alive, the kernel did not stop me\n");
  return 1;
}
