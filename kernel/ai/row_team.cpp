// Row teams: see row_team.h. Locking: lock_ protects generation_, fn_,
// arg_ and pending_; helpers sleep on &generation_, the worker on &pending_.
#include "row_team.h"
#include "trace.h"
#include "../printf.h"
#include "../proc.h"

namespace ai {

namespace {

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
  worker_ = worker;
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
    {
      SpinlockGuard guard(lock_);
      while (generation_ == seen) sleep(&generation_, lock_);
      seen = generation_;
      fn = fn_;
      arg = arg_;
    }
    trace::emit(KAI_TRACE_PART_BEGIN, 0, worker_, part);
    fn(arg, part);   // computes with interrupts on: preemptible like any thread
    trace::emit(KAI_TRACE_PART_END, 0, worker_, part);
    SpinlockGuard guard(lock_);
    if (--pending_ == 0) wakeup(&pending_);
  }
}

void RowTeam::run(void (*fn)(void* arg, uint32_t part), void* arg) {
  if (parts_ <= 1) {
    trace::emit(KAI_TRACE_PART_BEGIN, 0, worker_, 0);
    fn(arg, 0);
    trace::emit(KAI_TRACE_PART_END, 0, worker_, 0);
    return;
  }
  {
    SpinlockGuard guard(lock_);
    fn_ = fn;
    arg_ = arg;
    pending_ = parts_ - 1;
    generation_++;
    wakeup(&generation_);
  }
  trace::emit(KAI_TRACE_PART_BEGIN, 0, worker_, 0);
  fn(arg, 0);
  trace::emit(KAI_TRACE_PART_END, 0, worker_, 0);
  SpinlockGuard guard(lock_);
  while (pending_ > 0) sleep(&pending_, lock_);
}

}  // namespace ai
