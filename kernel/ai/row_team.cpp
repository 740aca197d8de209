// Row teams: see row_team.h. Locking: lock_ protects generation_, fn_ and
// arg_; helpers sleep on &generation_, the worker on &done_ (both with
// lock_). Each side notes under lock_ that it sleeps (sleeping_helpers_,
// worker_sleeping_), and the other calls wakeup() only then: wakeup()
// visits every slot of the process table, taking each one's lock (some
// 20 us under QEMU), and a product is handed off hundreds of times per
// token, usually to a thread that is still spinning. Parts are claimed
// with a compare-and-swap on next_ and counted with an atomic add on done_,
// without the lock. Before sleeping, each side
// spins on its counter for at most kSpinNs; it then takes the lock and
// checks again, so the spin is only a faster path to the same answer.
#include "row_team.h"
#include "trace.h"
#include "../printf.h"
#include "../proc.h"
#include "../trap.h"
#include "llm_batch.h"

namespace ai {

static_assert(kMaxChunks == llm::kMaxParts, "the runtime splits a product into at most kMaxParts");

namespace {

// Spins while still_waiting() holds, for at most kSpinNs.
template <typename Pred>
void spin_briefly(Pred still_waiting) {
  uint64_t deadline = clock_ns() + kSpinNs;
  while (still_waiting() && clock_ns() < deadline) {
  }
}

constexpr uint64_t tag(uint64_t generation) { return generation << 32; }

// A helper thread's argument: its team, in one static table (kernel
// threads take one pointer).
struct HelperArg {
  RowTeam* team;
  uint32_t index;   // 1.. (the worker is 0)
};
constexpr uint32_t kMaxHelpers = 4 * kMaxTeamParts;
HelperArg helper_args[kMaxHelpers];
uint32_t n_helper_args;   // only start() (at boot, one thread) touches it

}  // namespace

uint32_t RowTeam::start(uint32_t worker, uint32_t parts) {
  if (parts > kMaxTeamParts) parts = kMaxTeamParts;
  uint32_t started = 1;   // the worker itself
  for (uint32_t k = 1; k < parts && n_helper_args < kMaxHelpers; k++) {
    HelperArg* a = &helper_args[n_helper_args++];
    a->team = this;
    a->index = k;
    char name[16];
    ksnprintf(name, sizeof name, "ai-rows%u.%u", worker, k);
    if (kthread_create(name, helper_main, a).is_error()) {
      kprintf("ai: cannot start %s; worker %u uses %u harts\n", name, worker, started);
      break;
    }
    started++;
  }
  SpinlockGuard guard(lock_);
  threads_ = started;
  width_policy_.start(started, worker);
  width_ = width_policy_.width();
  worker_ = worker;
  uint32_t chunks = started == 1 ? 1 : started * kChunksPerHart;
  chunks_ = chunks < kMaxChunks ? chunks : kMaxChunks;
  return started;
}

void RowTeam::helper_main(void* p) {
  auto* a = static_cast<HelperArg*>(p);
  a->team->helper_loop(a->index);
}

void RowTeam::run_parts(uint64_t generation, void (*fn)(void*, uint32_t), void* arg) {
  for (;;) {
    uint64_t next = __atomic_load_n(&next_, __ATOMIC_ACQUIRE);
    if ((next >> 32) != (generation & 0xffffffffu) || (next & 0xffffffffu) >= chunks_) return;
    if (!__atomic_compare_exchange_n(&next_, &next, next + 1, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      continue;   // another thread took this part: try the next
    uint32_t part = static_cast<uint32_t>(next & 0xffffffffu);
    trace::emit(KAI_TRACE_PART_BEGIN, 0, worker_, part);
    fn(arg, part);   // preemptible like any thread
    trace::emit(KAI_TRACE_PART_END, 0, worker_, part);
    if (__atomic_add_fetch(&done_, 1, __ATOMIC_ACQ_REL) == chunks_) {
      SpinlockGuard guard(lock_);   // the worker checks done_ under lock_ before it sleeps
      if (worker_sleeping_) wakeup(&done_);
    }
  }
}

void RowTeam::helper_loop(uint32_t index) {
  uint64_t seen = 0;
  for (;;) {
    // Outside the team's width: sleep (no spinning) until it grows.
    if (index >= width()) {
      SpinlockGuard guard(lock_);
      while (index >= width_) sleep(&width_, lock_);
      seen = generation_;   // jobs posted meanwhile are done or taken
    }
    // The next job often comes at once: the next matrix product of the pass.
    spin_briefly([&] { return __atomic_load_n(&generation_, __ATOMIC_ACQUIRE) == seen; });
    void (*fn)(void*, uint32_t);
    void* arg;
    {
      SpinlockGuard guard(lock_);
      while (generation_ == seen && index < width_) {
        sleeping_helpers_++;
        sleep(&generation_, lock_);
        sleeping_helpers_--;
      }
      if (index >= width_) continue;
      seen = generation_;
      fn = fn_;
      arg = arg_;
    }
    run_parts(seen, fn, arg);   // nothing left if the others were quicker
  }
}

void RowTeam::run(void (*fn)(void* arg, uint32_t part), void* arg, uint64_t macs) {
  if (threads_ <= 1) {
    trace::emit(KAI_TRACE_PART_BEGIN, 0, worker_, 0);
    fn(arg, 0);
    trace::emit(KAI_TRACE_PART_END, 0, worker_, 0);
    return;
  }
  uint64_t posted = clock_ns();
  run_job(fn, arg);
  width_policy_.product_done(clock_ns() - posted, macs);
  follow_width();
}

void RowTeam::run_job(void (*fn)(void* arg, uint32_t part), void* arg) {
  uint64_t generation;
  {
    SpinlockGuard guard(lock_);
    fn_ = fn;
    arg_ = arg;
    generation = (generation_ + 1) & 0xffffffffu;   // it lives in 32 bits of next_
    __atomic_store_n(&done_, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&next_, tag(generation), __ATOMIC_RELEASE);
    __atomic_store_n(&generation_, generation, __ATOMIC_RELEASE);   // helpers may be spinning
    if (sleeping_helpers_) wakeup(&generation_);   // the others are spinning and see it
  }
  run_parts(generation, fn, arg);
  // The parts left are running on other harts and end about now.
  spin_briefly([&] { return __atomic_load_n(&done_, __ATOMIC_ACQUIRE) < chunks_; });
  {
    SpinlockGuard guard(lock_);
    while (__atomic_load_n(&done_, __ATOMIC_ACQUIRE) < chunks_) {
      worker_sleeping_ = true;
      sleep(&done_, lock_);
      worker_sleeping_ = false;
    }
  }
}

// ---- what the team asks its TeamWidth (team_width.h) ----------------------------

void RowTeam::survey() {
  width_policy_.survey(*this);
  follow_width();   // the width of the limit in force (a limit of 1: 1)
}

uint32_t RowTeam::begin_forward() {
  if (width_policy_.begin_pass()) follow_width();
  return width_policy_.limit_in_force() <= 1 ? 1 : chunks_;
}

void RowTeam::end_of_forward() {
  if (width_policy_.end_pass()) follow_width();
}

void RowTeam::follow_width() {
  uint32_t next = width_policy_.width();
  if (next != width()) set_width(next);
}

void RowTeam::set_width(uint32_t width) {
  SpinlockGuard guard(lock_);
  __atomic_store_n(&width_, width, __ATOMIC_RELEASE);
  wakeup(&width_);   // a helper back inside the width starts claiming
}

}  // namespace ai
