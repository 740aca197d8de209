// Sleep locks, built on a spinlock and sleep/wakeup. The spinlock guard_
// protects only the two fields below, for a few instructions at a time; the
// sleep lock itself may be held for as long as a disk request takes, with
// interrupts on and the holder free to sleep.
#include "sleeplock.h"
#include "proc.h"

void Sleeplock::acquire() {
  SpinlockGuard guard(guard_);
  // A loop, not an if: wakeup() wakes every waiter, and another one may
  // have taken the lock between our wakeup and our turn to run. sleep()
  // gives guard_ up while asleep and holds it again when it returns, so the
  // test of locked_ and the sleep cannot miss a release in between.
  while (locked_) {
    waiters_++;
    sleep(this, guard_);
    waiters_--;
  }
  locked_ = true;
  Process* p = current_process();
  pid_ = p ? p->pid : 0;
}

void Sleeplock::release() {
  SpinlockGuard guard(guard_);
  locked_ = false;
  pid_ = 0;
  // Under guard_: a waiter counts itself and goes to sleep while holding it
  // (sleep() lets go of guard_ only once the thread is asleep), so a waiter
  // between its test and its sleep is counted here and cannot miss the wakeup.
  if (waiters_) wakeup(this);
}

bool Sleeplock::holding() {
  SpinlockGuard guard(guard_);
  Process* p = current_process();
  return locked_ && pid_ == (p ? p->pid : 0);
}
