// Idle harts and how work reaches them: a hart with nothing to run sleeps in
// `wfi`, and whoever makes a thread runnable wakes one such hart at once with
// an inter-processor interrupt (IPI) instead of leaving the thread to wait
// for that hart's next timer tick (up to a whole tick, 10 ms). See idle.cpp
// and docs/kernel.md, "How an idle hart is woken".
#pragma once
#include <stdint.h>

// Reads the fault injection `sched.idle_delay_ms` (idle.cpp) from the
// command line; once, on the boot hart, before the other harts start.
void idle_init();

// The scheduler's idle step, called with nothing to run: returns after an
// interrupt has arrived (an IPI, the timer or a device), with interrupts off.
// `anything_runnable` is asked once more after the hart has said it is idle,
// so a thread made runnable in between is never missed.
void idle_wait(bool (*anything_runnable)());

// Wakes up to `threads` idle harts (one per newly runnable thread). Called by
// wakeup() and by the other places in proc.cpp that make a thread Runnable
// (fork, kthread_create, kill); cheap when no hart is idle.
void wake_idle_harts(uint32_t threads);
