// What the request table, the scheduler and the KV block manager need from
// the kernel, and nothing more: a lock, a clock, wakeup() on a channel,
// panic(), the mem* functions and contiguous memory. In the kernel these are
// the kernel's own; built for the host (-DKAI_AI_HOST, the unit tests in
// tests/host) the same names come from tests/host/ai_host_platform.h: a lock
// that only remembers whether it is held, a clock the test sets, malloc.
// So the scheduling code that the kernel runs is the code the tests check.
#pragma once
#ifdef KAI_AI_HOST
#include "ai_host_platform.h"
#else
#include "../spinlock.h"
#include "../proc.h"     // wakeup
#include "../trap.h"     // clock_ns
#include "../printf.h"   // panic, kprintf
#include "../string.h"   // memcpy, memset, memcmp
#include "../kalloc.h"   // kalloc_contiguous, kfree_contiguous
#endif
