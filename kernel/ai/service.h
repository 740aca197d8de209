// The kernel-resident AI service: models loaded once at boot, a bounded table
// of request slots with a FIFO queue, and worker kernel threads.
// See docs/ai-service.md for the request life cycle and the locking rules.
#pragma once
#include <stdint.h>
#include "../syscall.h"

#ifndef KAI_AI_WORKERS
#define KAI_AI_WORKERS 1   // build-time default: make AI_WORKERS=N
#endif

namespace ai {

constexpr int kQueueCapacity = 32;     // request slots (queued + running + uncollected)
constexpr int kMaxWorkers = 4;
constexpr uint32_t kMaxOutput = 4096;  // generated tokens per request

// Called once by the first process after the root file system is mounted:
// starts the loader thread (models under /AI/) and the worker threads.
void start(int n_workers);

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
