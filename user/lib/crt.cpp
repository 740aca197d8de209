// C++ runtime support: program start-up, global constructors, operator new,
// and the few ABI hooks g++ may reference from freestanding code.
#include <new>
#include "kai.h"

extern "C" {
using InitFn = void (*)();
extern InitFn __init_array_start[] __attribute__((weak));
extern InitFn __init_array_end[] __attribute__((weak));

int main(int argc, char** argv);

// Called by _start (start.S) with the registers exec() set up.
[[noreturn]] void kai_crt_main(int argc, char** argv) {
  // Global objects with constructors work; their destructors never run
  // (programs end with exit(), which does not unwind anything).
  for (InitFn* f = __init_array_start; f < __init_array_end; ++f) (*f)();
  exit(main(argc, argv));
}

// Destructors of globals would be registered here; we never run them.
void* __dso_handle = nullptr;
int __cxa_atexit(void (*)(void*), void*, void*) { return 0; }

void __cxa_pure_virtual() {
  fputs("pure virtual function called\n", 2);
  abort();
}

[[noreturn]] void abort() {
  fprintf(2, "abort() in pid %d\n", getpid());
  exit(134);
}
}  // extern "C"

// operator new must not return null for the plain forms; with exceptions
// disabled the honest alternative is to stop the program with a message.
static void* must_alloc(size_t n) {
  void* p = malloc(n);
  if (p == nullptr) {
    fprintf(2, "out of memory (operator new, %lu bytes)\n", (unsigned long)n);
    exit(137);
  }
  return p;
}
static void* must_alloc_aligned(size_t n, std::align_val_t a) {
  void* p = aligned_alloc(static_cast<size_t>(a), n);
  if (p == nullptr) {
    fprintf(2, "out of memory (operator new, %lu bytes)\n", (unsigned long)n);
    exit(137);
  }
  return p;
}

void* operator new(size_t n) { return must_alloc(n); }
void* operator new[](size_t n) { return must_alloc(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return malloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return malloc(n); }
void* operator new(size_t n, std::align_val_t a) { return must_alloc_aligned(n, a); }
void* operator new[](size_t n, std::align_val_t a) { return must_alloc_aligned(n, a); }
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { free(p); }
