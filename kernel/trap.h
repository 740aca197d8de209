// Traps, the timer and the PLIC.
#pragma once
#include <stdint.h>
#include "spinlock.h"

// Time is the time CSR, which counts from the machine's start: clock_ns()
// reads it in ns, uptime_ticks() in ticks of 1/TICK_HZ s (TICK_NS).
uint64_t clock_ns();            // monotonic ns from the guest clock (guest_time())
uint64_t uptime_ticks();        // clock_ns() / TICK_NS: what uptime() returns

// A thread that waits for time (sleep(), idle loops) holds timer_lock and
// calls sleep_until_tick() in a loop, comparing the clock with its deadline
// each time it wakes. Every timer interrupt, on any hart, wakes such
// threads (only when there are some: wakeup() visits every process slot).
extern Spinlock timer_lock;
void sleep_until_tick();        // caller holds timer_lock; returns holding it

// Tickless idle (trap.cpp, clock_interrupt): an idle hart other than hart 0
// stops its tick until it has a thread to run again; the scheduler calls
// resume_tick() before it switches to a thread.
void resume_tick();
// The idle hart's check that the sampling profiler has not started meanwhile
// (it samples idle harts, so they tick while it runs): idle.cpp.
void resume_tick_if_sampling();

// The guest clock: the time CSR less the time the disk clock stole
// (drivers/disk_clock.h, virtio_blk.cpp). Without `disk.clock` nothing is
// stolen and it is the time CSR. With it, each disk notification stalls
// until the host has done the requests, and that stall, whose length
// depends on the host, is added to the stolen time: every reading of the
// clock subtracts it and every timer deadline adds it, so the guest sees the
// same clock, and its interrupts land at the same instructions, whatever the
// host did. Clock units (g_boot.timebase_hz per second).
uint64_t guest_time();
uint64_t stolen_time();
// The driver's stall: `units` more to hide. Interrupts off; re-arms this
// hart's timer (its deadline on the time CSR moved by `units`).
void steal_time(uint64_t units);
// Arms this hart's timer at its next tick or the disk clock's next due
// request, whichever comes first (interrupts off).
void rearm_timer();

void trap_inithart();           // stvec, sie, first timer
// The next tick deadline on the time CSR: the next multiple of the tick
// length after now, on every hart (tick_grid.h says why).
uint64_t next_tick_deadline();
[[noreturn]] void usertrapret();

void plic_init();
void plic_inithart();
