#include "sleeplock.h"
#include "proc.h"

void Sleeplock::acquire() {
  SpinlockGuard guard(guard_);
  while (locked_) sleep(this, guard_);
  locked_ = true;
  Process* p = current_process();
  pid_ = p ? p->pid : 0;
}

void Sleeplock::release() {
  SpinlockGuard guard(guard_);
  locked_ = false;
  pid_ = 0;
  wakeup(this);
}

bool Sleeplock::holding() {
  SpinlockGuard guard(guard_);
  Process* p = current_process();
  return locked_ && pid_ == (p ? p->pid : 0);
}
