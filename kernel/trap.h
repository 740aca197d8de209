// Traps, the timer and the PLIC.
#pragma once
#include <stdint.h>
#include "spinlock.h"

// Time is the time CSR, which counts from the machine's start: clock_ns()
// reads it in ns, uptime_ticks() in ticks of 1/TICK_HZ s (TICK_NS).
uint64_t clock_ns();            // monotonic ns from the time CSR
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

void trap_inithart();           // stvec, sie, first timer
// The next tick deadline on the time CSR: the next multiple of the tick
// length after now, on every hart (tick_grid.h says why).
uint64_t next_tick_deadline();
[[noreturn]] void usertrapret();

void plic_init();
void plic_inithart();
