// Conveniences over the AI system calls (declared in kai_sys.h).
#pragma once
#include <stdint.h>
#include "kai_sys.h"

extern "C" {
// The one way user programs build a submit request: every field of
// struct kai_ai_submit set, the reserved ones zero (the kernel refuses
// anything else there). A field added to the ABI gets its default here.
struct kai_ai_submit ai_request(const char* model, const uint32_t* prompt, uint32_t prompt_len,
                                uint32_t n_predict, uint32_t flags = 0, uint32_t priority = 0);

// Submit and wait in one call. Returns the number of generated tokens
// (copied to out) or -errno; res (may be null) gets the result record.
long ai_call(const char* model, const uint32_t* prompt, uint32_t prompt_len, uint32_t n_predict,
             uint32_t* out, uint32_t capacity, struct kai_ai_result* res);

// Waits (polling ai_info once per 100 ms, at most timeout_s seconds) until
// the named model (or, with name == "" , the first model) is ready; copies
// its name into name_out (KAI_AI_MODEL_NAME_MAX bytes) and its info into
// *mi. Returns 0, or -KAI_ENOENT / -KAI_ENODEV / -KAI_EAGAIN (timeout).
int ai_wait_model_ready(const char* name, int timeout_s, char* name_out, struct kai_ai_model_info* mi);

// Latency breakdown of a finished request, in nanoseconds. The one place in
// user space where these formulas are written (tools/bench.py has the same
// ones for the host side):
//   queue   = start - submit            time waiting for a worker
//   prefill = first token - start       prompt processing + the first token
//   ttft    = first token - submit      time to first token, queue included
//   tpot    = (finish - first token) / (generated - 1)   time per output
//             token after the first; 0 when only one token was generated
//   total   = finish - submit           end to end
// A timestamp earlier than the one it is measured from counts as 0.
struct ai_latency_ns {
  uint64_t queue, prefill, ttft, tpot, total;
};
struct ai_latency_ns ai_latency_ns_of(const struct kai_ai_result* res);

// The same figures in microseconds (rounded down), for printing.
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
