// Sleep locks: long critical sections (disk I/O); the waiter sleeps, so they
// may only be taken from process or kernel-thread context, never in a trap.
#pragma once
#include "spinlock.h"

class Sleeplock {
 public:
  constexpr explicit Sleeplock(const char* name) : guard_(name), name_(name) {}
  Sleeplock(const Sleeplock&) = delete;
  Sleeplock& operator=(const Sleeplock&) = delete;

  void acquire();
  void release();
  bool holding();          // held by the current process?

 private:
  Spinlock guard_;         // protects locked_, pid_ and waiters_
  bool locked_ = false;
  int pid_ = 0;            // the holder, for holding() (0: a kernel thread or nobody)
  // Threads asleep in acquire() (counted before they sleep, under guard_).
  // release() calls wakeup() only when it is not 0: wakeup() scans the whole
  // process table, and most releases (a buffer, an inode) have no waiter.
  uint32_t waiters_ = 0;
  const char* name_;
};

class SleeplockGuard {
 public:
  explicit SleeplockGuard(Sleeplock& lock) : lock_(lock) { lock_.acquire(); }
  ~SleeplockGuard() { lock_.release(); }
  SleeplockGuard(const SleeplockGuard&) = delete;
  SleeplockGuard& operator=(const SleeplockGuard&) = delete;

 private:
  Sleeplock& lock_;
};
