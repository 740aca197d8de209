// Build-time check that every system call in KAI_SYSCALL_LIST
// (<kai/syscall_numbers.h>) has a C prototype in kai_sys.h: taking the
// address of an undeclared name does not compile. The stubs themselves are
// generated from the same list (syscall.S), so list, stubs and prototypes
// cannot drift apart. This file produces no code.
#include "kai_sys.h"

#define KAI_SYSCALL_DECLARED(number, name) \
  static_assert(&::name != nullptr, "kai_sys.h lacks a prototype for system call " #name);
KAI_SYSCALL_LIST(KAI_SYSCALL_DECLARED)
#undef KAI_SYSCALL_DECLARED
