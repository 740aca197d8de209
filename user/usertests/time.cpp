// usertests: the clock and sleep.
#include "harness.h"

using namespace ut;

namespace {

// ---------------------------------------------------------------- time

bool t_clock() {
  uint64_t prev = clock_ns();
  EXPECT(prev > 0, "clock_ns returned 0");
  for (int i = 0; i < 2000; ++i) {
    uint64_t t = clock_ns();
    EXPECT(t >= prev, "clock_ns went backwards: %lu then %lu", (unsigned long)prev, (unsigned long)t);
    prev = t;
  }
  return true;
}

bool t_sleep() {
  // sleep(n) waits for a deadline n * 10 ms on the clock, and uptime() is the
  // same clock in 10 ms ticks. The uptime readings lie between the clock
  // readings, so uptime moves by at least the 20 ticks slept and by at most
  // one tick more than the clock did, however late the timer interrupts are.
  uint64_t t0 = clock_ns();
  long u0 = uptime();
  EXPECT(sleep(20) == 0, "sleep(20) failed");
  long du = uptime() - u0;
  uint64_t dt = clock_ns() - t0;
  EXPECT(dt >= 200000000ULL, "sleep(20) lasted only %lu us", (unsigned long)(dt / 1000));
  EXPECT(dt < 5000000000ULL, "sleep(20) lasted %lu ms", (unsigned long)(dt / 1000000));
  EXPECT(du >= 20 && (uint64_t)du <= dt / 10000000 + 1,
         "uptime advanced %ld ticks during sleep(20), which lasted %lu us", du, (unsigned long)(dt / 1000));
  EXPECT(sleep(0) == 0, "sleep(0)");
  return true;
}

bool t_sleep_many() {
  // Sleepers in parallel wake up at about the same time.
  uint64_t t0 = clock_ns();
  int pids[8];
  for (int i = 0; i < 8; ++i) {
    pids[i] = fork();
    if (pids[i] == 0) { sleep(30); exit(0); }
  }
  for (int i = 0; i < 8; ++i) EXPECT(reap(pids[i]) == 0, "sleeper failed");
  uint64_t dt = clock_ns() - t0;
  EXPECT(dt < 5000000000ULL, "8 parallel sleep(30) took %lu ms", (unsigned long)(dt / 1000000));
  return true;
}

bool t_tick_grid() {
  // Timer ticks fall on one grid: every deadline is a multiple of the 10 ms
  // tick on the clock, whenever the tick before it was handled (kernel/trap.cpp,
  // next_tick_deadline()). A sleeper wakes in a tick's handler, so it wakes
  // just after a multiple of 10 ms. Armed one tick after the handled tick,
  // ticks drift by each tick's handling and sit at an arbitrary phase.
  // The smallest phase of 20 wake-ups, so a host that delays a few of them
  // (real time under load) cannot fail it.
  constexpr uint64_t kTickNs = 10000000, kSlackNs = 3000000;
  uint64_t best = kTickNs;
  for (int i = 0; i < 20; ++i) {
    EXPECT(sleep(1) == 0, "sleep(1) failed");
    uint64_t phase = clock_ns() % kTickNs;
    if (phase < best) best = phase;
  }
  EXPECT(best < kSlackNs, "20 wake-ups from sleep(1) came at least %lu us after a multiple of 10 ms",
         (unsigned long)(best / 1000));
  return true;
}

const Test kTests[] = {
    {"clock", t_clock},
    {"tick_grid", t_tick_grid},
    {"sleep", t_sleep},
    {"sleep_many", t_sleep_many},
};
}  // namespace

const TestGroup ut::time_tests = UT_GROUP(kTests);
