// The load meter: how many requests the AI service held, on average, over
// any stretch of time. The mean number in the system is the L of Little's
// law (L = λW), which tools/bench.py checks against the requests' own
// timestamps in every boot.
//
// Hart 0's timer interrupt samples the count every tick (TICK_HZ times a
// second) and adds count × (time since the previous sample) to a running
// sum of request-nanoseconds. Two readings of the sums (ai_info) then give
// the mean over the time between them: Δin_system_ns / Δtime. Linux keeps
// the same kind of sum per disk ("weighted time spent doing I/Os" in
// /proc/diskstats), which is how iostat reports a disk's mean queue size.
//
// Why the timer and not a process that calls ai_info every 10 ms: the
// interrupt comes whatever the harts are running, at moments unrelated to
// the requests. A process gets a hart only when the scheduler gives it one,
// and the requests use the same harts, so when it looks depends on what it
// looks at. Such a sampler read the mean 5-14% low in measured runs
// (docs/experiments.md, "What each number means": why the load meter
// samples from the timer interrupt). aibench prints both.
#pragma once
#include <stdint.h>

namespace ai {

struct LoadMeter {
  uint64_t samples;        // ticks that sampled
  uint64_t t_last;         // clock_ns() of the newest sample (0: none yet)
  uint64_t queued_ns;      // sum over samples of queued × (t_k − t_{k−1})
  uint64_t in_system_ns;   // the same for queued + running
};

// One sample at time now (lock held). Each sample's count stands for the
// interval since the previous sample, which ends at the sample.
void sample_load(uint64_t now);

// Hart 0's clock interrupt: takes ai::lock and samples at clock_ns(). The
// interrupt cannot find the lock held by its own hart (a spinlock is held
// with interrupts off), and nobody holds it for long: every forward pass
// runs without it.
void sample_load_on_tick();

LoadMeter load_meter();   // lock held

// Forgets every sample. The host tests' simulation calls it when it sets
// its clock back to the start; the kernel's clock never goes back, and the
// kernel never calls it.
void load_meter_reset();

}  // namespace ai
