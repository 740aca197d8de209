// The AI service's counters, all in one struct: what ai_info reports and
// aistat prints. Each is only ever increased (a host test resets them
// between cases), under ai::lock, by the code that makes the event happen.
// A leaf header, so every layer of kernel/ai can count without including
// a layer above it.
#pragma once
#include <stdint.h>

namespace ai {

struct Counters {
  // Requests (requests.cpp, sys_ai.cpp).
  uint64_t submitted, completed, failed, cancelled;
  uint64_t rejected;         // ai_submit refused for the quota, or a full table with KAI_AI_NONBLOCK
  // Iterations (scheduler.cpp: commit()).
  uint64_t iterations;       // batched forward passes run by all workers
  uint64_t batch_requests;   // sum over iterations of the requests in each
  uint64_t batch_tokens;     // sum over iterations of the positions in each
  uint64_t drafted;          // proposed tokens computed (they count in batch_tokens)
  uint64_t accepted;         // ... of which the model's own choice agreed (kept)
  uint64_t rolled_back;      // positions computed and then given back (drafts not kept, recomputations)
  // The KV cache (kv_cache.cpp, requests.cpp).
  uint64_t prefix_hit_requests;   // admissions that reused a cached prefix
  uint64_t prefix_hit_tokens;     // prompt tokens they did not compute
  uint64_t preemptions;           // running requests whose blocks were taken back (all causes)
  uint64_t priority_preemptions;  // of those, for a more urgent request (scheduler.cpp)
  // Constrained decoding (requests.cpp: submit()).
  uint64_t grammars;              // grammars that came with submitted requests
  uint64_t grammar_peak_bytes;    // the most the live requests' grammar regions held at once (a high-water mark)
};
extern Counters counters;

}  // namespace ai
