// A console budget for one kind of kernel message, shared by the whole
// system: at most `lines` lines in each period of `period_ns`.
//
// Some kernel messages are caused by user programs (an unknown system-call
// number, for one). Printing each of them would let any program flood the
// console and slow every hart that prints, since the console is one slow
// device behind one lock. A limit per process is not enough: fork makes a
// new process for every line. So the budget is global: a line over budget
// is counted instead of printed, and the next line that is printed first
// says how many were left out, so the count is never lost (Linux's
// printk_ratelimit works the same way).
#pragma once
#include <stdint.h>
#include "spinlock.h"

class LogBudget {
 public:
  constexpr LogBudget(const char* name, uint32_t lines, uint64_t period_ns)
      : lock_(name), lines_(lines), period_ns_(period_ns) {}

  // Whether a line may be printed at time now_ns. When true, *left_out is
  // how many lines were not printed since the last one that was: print that
  // count first when it is not 0.
  bool take(uint64_t now_ns, uint64_t* left_out) {
    SpinlockGuard guard(lock_);
    // A new period starts at the first line after the old one has ended.
    if (used_ == 0 || now_ns - period_start_ >= period_ns_) {
      period_start_ = now_ns;
      used_ = 0;
    }
    if (used_ == lines_) {
      left_out_++;
      return false;
    }
    used_++;
    *left_out = left_out_;
    left_out_ = 0;
    return true;
  }

 private:
  Spinlock lock_;              // guards the three fields below
  const uint32_t lines_;
  const uint64_t period_ns_;
  uint64_t period_start_ = 0;  // when the current period began
  uint32_t used_ = 0;          // lines printed in it, 0..lines_
  uint64_t left_out_ = 0;      // lines not printed since the last printed one
};
