// The kernel services that kernel/ai's scheduling code needs (see
// kernel/ai/platform.h), for the host unit tests: a lock that remembers
// whether it is held (the code checks holding() before every state change),
// a clock the test sets, wakeup() that only counts, panic() that throws so
// a broken rule fails the test case that broke it, and malloc for memory.
#pragma once
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdexcept>
#include <string>

namespace ai_host {
inline uint64_t now_ns = 1;      // clock_ns(): the simulated clock (never 0: 0 means "not yet")
inline uint64_t wakeups = 0;     // wakeup() calls so far
}  // namespace ai_host

class Spinlock {
 public:
  constexpr explicit Spinlock(const char* name) : name_(name) {}
  Spinlock(const Spinlock&) = delete;
  Spinlock& operator=(const Spinlock&) = delete;
  void acquire() {
    if (held_) throw std::logic_error(std::string("acquire of held lock ") + name_);
    held_ = true;
  }
  void release() {
    if (!held_) throw std::logic_error(std::string("release of free lock ") + name_);
    held_ = false;
  }
  bool holding() const { return held_; }
  const char* name() const { return name_; }

 private:
  bool held_ = false;
  const char* name_;
};

class SpinlockGuard {
 public:
  explicit SpinlockGuard(Spinlock& lock) : lock_(lock) { lock_.acquire(); }
  ~SpinlockGuard() { lock_.release(); }
  SpinlockGuard(const SpinlockGuard&) = delete;
  SpinlockGuard& operator=(const SpinlockGuard&) = delete;

 private:
  Spinlock& lock_;
};

inline uint64_t clock_ns() { return ai_host::now_ns; }
inline void wakeup(const void*) { ai_host::wakeups++; }

[[noreturn]] inline void panic(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void panic(const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "panic: %s\n", buf);   // Catch's fast-compile mode does not print exception text
  throw std::logic_error(buf);
}

// The console: quiet in the tests.
inline void kprintf(const char*, ...) {}

inline void* kalloc_contiguous(uint64_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }
inline void kfree_contiguous(void* region, uint64_t) { free(region); }
