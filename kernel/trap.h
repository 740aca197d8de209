// Traps, the timer and the PLIC.
#pragma once
#include <stdint.h>
#include "spinlock.h"

extern Spinlock ticks_lock;
extern uint64_t ticks;          // 10 ms timer ticks since boot (hart 0's count)

void trap_inithart();           // stvec, sie, first timer
[[noreturn]] void usertrapret();
uint64_t clock_ns();            // monotonic ns from the time CSR

void plic_init();
void plic_inithart();
