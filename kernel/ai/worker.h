// The worker threads of the AI service (the iteration loop, worker.cpp).
#pragma once
#include <stdint.h>
#include "../error.h"

namespace ai {

// Starts worker `id` (0 .. kMaxWorkers-1) as the kernel thread ai-worker<id>.
ErrorOr<void> start_worker(uint32_t id);

}  // namespace ai
