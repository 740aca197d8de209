// The kernel-resident AI service, its whole face to the rest of the kernel:
// start() at boot, process_exited() from exit(), and the system calls.
// Inside: models loaded once at boot (models.cpp), a bounded table of
// request slots with an arrival queue (requests.cpp), and worker kernel
// threads that run iterations: one batched forward pass over the weights
// for all their running requests at a time (worker.cpp).
// See docs/ai-service.md for the request life cycle and the locking rules.
//
// Layers of kernel/ai, each file including only those below it:
//   service.cpp, sys_ai.cpp      the face to the kernel: boot options, system calls, timer hooks
//   worker.cpp, loader.cpp       the threads: iteration loop (runs a plan), model loader
//   scheduler.{h,cpp}            every decision of an iteration (Plan, commit: N scheduled, k accepted)
//   proposer.{h,cpp}             proposed tokens for the positions after a request's newest
//   policy.{h,cpp}, sharing.{h,cpp}, fair_share.{h,cpp}   which queued request next; domains, priorities
//   requests.{h,cpp}             slots, arrival queue, one function per state change
//   kv_cache.{h,cpp}             KV block pools, block tables (grow, shrink), prefix cache
//   row_team; team_width, width_control, width_survey   harts sharing one pass; how many
//   models.h, engine.{h,cpp}     the model registry; the bridge to the runtime (lib/)
//   trace, load_meter            what the engine did, and how loaded it was
//   limits.h, platform.h, ai_error.h   limits, the kernel services used, the error type
// The core kernel includes only this file (trap.cpp: the timer hooks below).
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

// ---- the core kernel's timer work that belongs to the service (trap.cpp) --
// Hart 0's timer tick: the load meter's sample (load_meter.h).
void on_timer_tick();
// The sampling profiler (trace.h, `aitrace start samples`) is recording:
// every hart then keeps ticking, and each tick calls profiler_sample().
bool profiler_running();
// One sample: this hart was at pc (return address ra) in `mode`
// (KAI_TRACE_MODE_*), running process `pid` (0: idle).
void profiler_sample(uint64_t pc, uint64_t ra, uint32_t mode, uint32_t pid);

}  // namespace ai

SyscallResult sys_ai_submit();
SyscallResult sys_ai_wait();
SyscallResult sys_ai_query();
SyscallResult sys_ai_cancel();
SyscallResult sys_ai_info();
SyscallResult sys_ai_control();
