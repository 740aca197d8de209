// Spinlocks: short critical sections, interrupts off on this hart while held.
#pragma once
#include <stdint.h>

struct Cpu;

class Spinlock {
 public:
  constexpr explicit Spinlock(const char* name) : name_(name) {}
  Spinlock(const Spinlock&) = delete;
  Spinlock& operator=(const Spinlock&) = delete;

  void acquire();
  void release();
  bool holding() const;   // held by this hart?
  const char* name() const { return name_; }

 private:
  volatile uint32_t locked_ = 0;
  const char* name_;
  Cpu* cpu_ = nullptr;     // the hart holding it, for holding() and debugging
};

// RAII: holds the lock for the lifetime of the guard.
class SpinlockGuard {
 public:
  explicit SpinlockGuard(Spinlock& lock) : lock_(lock) { lock_.acquire(); }
  ~SpinlockGuard() { lock_.release(); }
  SpinlockGuard(const SpinlockGuard&) = delete;
  SpinlockGuard& operator=(const SpinlockGuard&) = delete;

 private:
  Spinlock& lock_;
};

// Interrupt-disable nesting used by Spinlock (matched pairs).
void push_interrupts_off();
void pop_interrupts_off();

// "a, b, c": the spinlocks this hart holds, for diagnostics.
const char* held_locks_description(char* buf, unsigned long size);
