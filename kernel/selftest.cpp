// A quick boot-time check that kernel threads run on every hart, can sleep,
// survive preemption with their floating-point registers intact, and that
// contiguous allocation works. Prints one line: "kai: selftest ok ...".
#include "selftest.h"
#include "cpu.h"
#include "kalloc.h"
#include "printf.h"
#include "proc.h"
#include "spinlock.h"
#include "trap.h"

namespace {

constexpr int WORKERS = 4;
Spinlock st_lock{"selftest"};
int finished = 0, failures = 0;
bool reported = false;
uint64_t harts_seen = 0;

// Enough FP work to be preempted several times; the result is exact in double.
void fp_worker(void* arg) {
  auto seed = reinterpret_cast<uint64_t>(arg);
  double sum = 0;
  volatile double step = static_cast<double>(seed);
  for (int i = 1; i <= 1000000; i++) sum += step;
  {
    SpinlockGuard guard(timer_lock);   // sleep until the next tick: another thread runs meanwhile
    uint64_t t0 = uptime_ticks();
    while (uptime_ticks() == t0) sleep_until_tick();
  }
  for (int i = 1; i <= 1000000; i++) sum += step;
  SpinlockGuard guard(st_lock);
  if (sum != 2000000.0 * static_cast<double>(seed)) failures++;
  push_interrupts_off();
  harts_seen |= 1ull << cpu_index();
  pop_interrupts_off();
  finished++;
  wakeup(&finished);
}

void supervisor(void*) {
  void* big = kalloc_contiguous(8ull << 20);
  bool contiguous_ok = big != nullptr;
  if (big) kfree_contiguous(big, 8ull << 20);
  for (int i = 0; i < WORKERS; i++) {
    if (kthread_create("fptest", fp_worker, reinterpret_cast<void*>(i + 1)).is_error()) {
      SpinlockGuard guard(st_lock);
      failures++;
      finished++;
    }
  }
  SpinlockGuard guard(st_lock);
  while (finished < WORKERS) sleep(&finished, st_lock);
  int seen = __builtin_popcountll(harts_seen);
  if (failures == 0 && contiguous_ok)
    kprintf("kai: selftest ok (%d kthreads on %d hart%s, FP state preserved)\n", WORKERS, seen,
            seen == 1 ? "" : "s");
  else
    kprintf("kai: selftest FAILED (%d FP mismatches, contiguous alloc %s)\n", failures,
            contiguous_ok ? "ok" : "failed");
  reported = true;
  wakeup(&reported);
}

}  // namespace

void selftest_start() {
  if (kthread_create("selftest", supervisor, nullptr).is_error()) {
    kprintf("kai: selftest: cannot create a kernel thread\n");
    SpinlockGuard guard(st_lock);
    reported = true;
  }
}

void selftest_wait() {
  SpinlockGuard guard(st_lock);
  while (!reported) sleep(&reported, st_lock);
}
