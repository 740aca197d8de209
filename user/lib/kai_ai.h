// Conveniences over the AI system calls (declared in kai_sys.h).
#pragma once
#include <stdint.h>
#include "kai_sys.h"

extern "C" {
// Submit and wait in one call. Returns the number of generated tokens
// (copied to out) or -errno; res (may be null) gets the result record.
long ai_call(const char* model, const uint32_t* prompt, uint32_t prompt_len, uint32_t n_predict,
             uint32_t* out, uint32_t capacity, struct kai_ai_result* res);

// Waits (polling ai_info once per 100 ms, at most timeout_s seconds) until
// the named model (or, with name == "" , the first model) is ready; copies
// its name into name_out (KAI_AI_MODEL_NAME_MAX bytes) and its info into
// *mi. Returns 0, or -KAI_ENOENT / -KAI_ENODEV / -KAI_EAGAIN (timeout).
int ai_wait_model_ready(const char* name, int timeout_s, char* name_out, struct kai_ai_model_info* mi);

// Latency breakdown of a finished request, in microseconds.
struct ai_latency {
  uint64_t queue_us;    // start - submit
  uint64_t prefill_us;  // first token - start (prompt processing + first token)
  uint64_t ttft_us;     // first token - submit
  uint64_t tpot_us;     // (finish - first) / (generated - 1), 0 if one token
  uint64_t total_us;    // finish - submit
};
struct ai_latency ai_latency_of(const struct kai_ai_result* res);
const char* ai_state_name(int32_t state);
}
