// The kernel-resident AI service, its whole face to the rest of the kernel:
// start() at boot, process_exited() from exit(), and the system calls.
// Inside: models loaded once at boot (models.cpp), a bounded table of
// request slots with an arrival queue (requests.cpp), and worker kernel
// threads that run iterations: one batched forward pass over the weights
// for all their running requests at a time (worker.cpp).
// See docs/ai-service.md for the request life cycle and the locking rules.
#pragma once
#include <stdint.h>
#include "../syscall.h"
#include <kai/ai_abi.h>
#include "limits.h"

namespace ai {

// Called once by the first process after the root file system is mounted:
// reads the service's options from the kernel command line (ai.workers,
// ai.max_batch, ai.budget, ai.policy, ...), starts the loader thread
// (models under /AI/) and the worker threads.
void start();

// Worker threads actually started (ai_info reports it).
int n_workers();

// Called by exit() for every user process: its queued requests are
// cancelled, running ones discarded, uncollected results freed.
void process_exited(int pid);

}  // namespace ai

SyscallResult sys_ai_submit();
SyscallResult sys_ai_wait();
SyscallResult sys_ai_query();
SyscallResult sys_ai_cancel();
SyscallResult sys_ai_info();
SyscallResult sys_ai_control();
