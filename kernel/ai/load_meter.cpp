// The load meter: see load_meter.h.
#include "load_meter.h"
#include "requests.h"

namespace ai {

static LoadMeter meter;

void sample_load(uint64_t now) {
  if (!lock.holding()) panic("ai: sample_load without ai::lock");
  uint64_t queued = queued_count();
  uint64_t in_system = queued + running_count();
  // A clock that did not advance (two samples at one instant) adds nothing.
  // The first sample only starts the clock: before it, nothing was watched.
  if (now > meter.t_last) {
    if (meter.t_last != 0) {
      uint64_t dt = now - meter.t_last;
      meter.queued_ns += queued * dt;
      meter.in_system_ns += in_system * dt;
    }
    meter.t_last = now;
  }
  meter.samples++;
}

void sample_load_on_tick() {
  SpinlockGuard guard(lock);
  sample_load(clock_ns());
}

LoadMeter load_meter() {
  if (!lock.holding()) panic("ai: load_meter without ai::lock");
  return meter;
}

void load_meter_reset() { meter = LoadMeter{}; }

}  // namespace ai
