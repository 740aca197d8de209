// Row teams: see row_team.h. Locking: lock_ protects generation_, fn_,
// arg_ and pending_; helpers sleep on &generation_, the worker on &pending_.
// Before sleeping, each side spins on its counter for at most kSpinNs,
// reading it with atomic loads outside the lock; it then takes the lock and
// checks again, so the spin is only a faster path to the same answer.
#include "row_team.h"
#include "../printf.h"
#include "../proc.h"
#include "../trap.h"

namespace ai {

namespace {

// Spins while still_waiting() holds, for at most kSpinNs.
template <typename Pred>
void spin_briefly(Pred still_waiting) {
  uint64_t deadline = clock_ns() + kSpinNs;
  while (still_waiting() && clock_ns() < deadline) {
  }
}

// A helper thread's argument: its team and part number, packed in one
// static table (kernel threads take one pointer).
struct HelperArg {
  RowTeam* team;
  uint32_t part;
};
constexpr uint32_t kMaxHelpers = 4 * kMaxTeamParts;
HelperArg helper_args[kMaxHelpers];
uint32_t n_helper_args;   // only start() (at boot, one thread) touches it

}  // namespace

uint32_t RowTeam::start(uint32_t worker, uint32_t parts) {
  if (parts > kMaxTeamParts) parts = kMaxTeamParts;
  uint32_t started = 1;   // part 0 is the worker itself
  for (uint32_t k = 1; k < parts && n_helper_args < kMaxHelpers; k++) {
    HelperArg* a = &helper_args[n_helper_args++];
    a->team = this;
    a->part = k;
    char name[16];
    ksnprintf(name, sizeof name, "ai-rows%u.%u", worker, k);
    if (kthread_create(name, helper_main, a).is_error()) {
      kprintf("ai: cannot start %s; worker %u uses %u harts\n", name, worker, started);
      break;
    }
    started++;
  }
  SpinlockGuard guard(lock_);
  parts_ = started;
  return started;
}

void RowTeam::helper_main(void* p) {
  auto* a = static_cast<HelperArg*>(p);
  a->team->helper_loop(a->part);
}

void RowTeam::helper_loop(uint32_t part) {
  uint64_t seen = 0;
  for (;;) {
    void (*fn)(void*, uint32_t);
    void* arg;
    // The next job often comes at once: the next matrix product of the pass.
    spin_briefly([&] { return __atomic_load_n(&generation_, __ATOMIC_ACQUIRE) == seen; });
    {
      SpinlockGuard guard(lock_);
      while (generation_ == seen) sleep(&generation_, lock_);
      seen = generation_;
      fn = fn_;
      arg = arg_;
    }
    fn(arg, part);   // computes with interrupts on: preemptible like any thread
    SpinlockGuard guard(lock_);
    __atomic_store_n(&pending_, pending_ - 1, __ATOMIC_RELEASE);   // the worker may be spinning
    if (pending_ == 0) wakeup(&pending_);
  }
}

void RowTeam::run(void (*fn)(void* arg, uint32_t part), void* arg) {
  if (parts_ <= 1) {
    fn(arg, 0);
    return;
  }
  {
    SpinlockGuard guard(lock_);
    fn_ = fn;
    arg_ = arg;
    pending_ = parts_ - 1;
    __atomic_store_n(&generation_, generation_ + 1, __ATOMIC_RELEASE);   // helpers may be spinning
    wakeup(&generation_);
  }
  fn(arg, 0);
  // The parts are even, so the helpers finish about now.
  spin_briefly([&] { return __atomic_load_n(&pending_, __ATOMIC_ACQUIRE) != 0; });
  SpinlockGuard guard(lock_);
  while (pending_ > 0) sleep(&pending_, lock_);
}

}  // namespace ai
