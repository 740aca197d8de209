// The timer tick's grid (kernel/trap.cpp arms every tick with it).
//
// Invariant: every tick deadline is a multiple of the tick length on the
// clock (the time CSR), so when a tick comes depends only on the clock, never
// on when an earlier tick was handled. One grid for every hart. A tick taken
// late (a stretch with interrupts off, a host that starves QEMU's vCPU
// thread) moves no later tick, and a hart that is a whole tick late skips
// the points it missed instead of taking a burst of catch-up interrupts.
// Why it matters: docs/notebook/2026-12-06-open-loop-ticks.md (re-armed one
// tick after the handled tick, one late tick moved every later one, and exact
// mode stopped repeating) and docs/notebook/2026-12-06-timer-grid.md.
#pragma once
#include <stdint.h>

// The first grid point strictly after `now` (both in clock units).
constexpr uint64_t next_tick_after(uint64_t now, uint64_t tick) { return (now / tick + 1) * tick; }
