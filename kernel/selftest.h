#pragma once
// Boot self-test of kernel threads, sleeping, preemption and FP state.
void selftest_start();
