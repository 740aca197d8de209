// The AI service's view of the inference runtime: load a bundle directory
// into kernel memory, and generate tokens for one request. Keeping this
// interface small means the queue/slot logic never touches lib/ directly.
#pragma once
#include <stdint.h>
#include <stddef.h>
#include "../error.h"

namespace ai {

struct EngineModel;   // a loaded, immutable model (runtime Model + its memory)

struct ModelSummary {
  char family[16];
  uint32_t dim, n_layers, vocab_size, runtime_seq_len;
  uint64_t n_params;
  uint64_t bytes;       // kernel memory holding the weights
};

// Receives each generated token; returns false to stop early (cancelled).
// keep_going() is asked between two prompt tokens of the prefill, so a
// cancel lands within one token's forward pass even in a long prompt.
class TokenSink {
 public:
  virtual bool on_token(uint32_t token) = 0;
  virtual bool keep_going() = 0;
};

// Reads only CFG.BIN (and LTY.BIN): enough to validate requests against the
// model (vocabulary, runtime_seq_len) before its weights are in memory.
ErrorOr<void> engine_probe(const char* dir, ModelSummary* summary, char* why, size_t why_len);

// Reads and validates the bundle in `dir` ("/AI/SMOL"). On failure, `why`
// gets a one-line reason naming the file and field.
ErrorOr<EngineModel*> engine_load(const char* dir, ModelSummary* summary, char* why, size_t why_len);

// Memory for one request's session (KV cache, states, scratch), owned by a
// worker and reused from request to request: allocating and zeroing ~12 MiB
// (SMOL shape) for every request cost milliseconds of each TTFT, and the
// first-fit search made that cost depend on how fragmented memory was.
struct SessionMemory {
  void* mem = nullptr;
  size_t bytes = 0;
};

// Prefill then greedy decode; tokens go to sink as they are known. Returns
// without error when the sink says stop (the caller knows why). Grows
// `memory` if this model needs more. The request was validated at submit time.
ErrorOr<void> engine_generate(EngineModel* model, const uint32_t* prompt, uint32_t prompt_len,
                              uint32_t n_predict, bool int8_activations, TokenSink& sink,
                              SessionMemory& memory);

}  // namespace ai
