#pragma once
// Boot self-test of kernel threads, sleeping, preemption and FP state.
void selftest_start();
// Sleeps until the self-test has printed its result (keeps boot output in order).
void selftest_wait();
