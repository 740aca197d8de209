// Traps, the timer and the PLIC.
#pragma once
#include <stdint.h>
#include "spinlock.h"

// Time is the time CSR, which counts from the machine's start: clock_ns()
// reads it in ns, uptime_ticks() in ticks of 1/TICK_HZ s (TICK_NS).
uint64_t clock_ns();            // monotonic ns from the time CSR
uint64_t uptime_ticks();        // clock_ns() / TICK_NS: what uptime() returns

// Every timer interrupt, on any hart, does wakeup(&timer_tick) under
// timer_lock. A thread that waits for time (sleep(), idle loops) sleeps on
// &timer_tick and compares the clock with its deadline each time it wakes.
extern Spinlock timer_lock;
extern char timer_tick;         // only its address is used: the sleep channel

void trap_inithart();           // stvec, sie, first timer
[[noreturn]] void usertrapret();

void plic_init();
void plic_inithart();
