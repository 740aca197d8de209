// The AI service's view of the inference runtime: load a bundle directory
// into kernel memory, check requests, keep per-request sessions and run
// batched forward passes. Keeping this interface small means the queue and
// scheduling logic never touch lib/'s classes directly.
#pragma once
#include <stdint.h>
#include <stddef.h>
#include "../error.h"
#include "ai_error.h"
#include "llm_config.h"
#include "llm_sample.h"
#include "llm_session.h"
#include "llm_batch.h"

namespace ai {

struct EngineModel;   // a loaded, immutable model (runtime Model + its memory)

struct ModelSummary {
  char family[16];
  uint32_t dim, n_layers, vocab_size, runtime_seq_len;
  uint64_t n_params;
  uint64_t bytes;       // kernel memory holding the weights
  uint64_t pinned_pages;   // of which the bundle's page-cache pages (adopted at load, never evicted)
  llm::Config config;   // the parsed CFG.BIN: requests are checked against it
  uint32_t eos[4];      // end-of-sequence ids (from TOK.BIN when the bundle has one)
  uint32_t n_eos;
};

// Reads only CFG.BIN (and LTY.BIN): enough to validate requests against the
// model (vocabulary, runtime_seq_len) before its weights are in memory.
// Errno::NoEnt: there is no CFG.BIN (the directory is not a bundle).
ErrorOr<void, Error> engine_probe(const char* dir, ModelSummary* summary);

// Reads and validates the bundle in `dir` ("/AI/SMOL"). An error names the
// file and field.
ErrorOr<EngineModel*, Error> engine_load(const char* dir, ModelSummary* summary);

// One request's runtime state while it runs (the runtime's Session: KV
// cache, DeltaNet states, scratch) and its memory. Each worker owns
// kMaxBatch of them and reuses them from request to request: allocating and
// zeroing ~12 MiB (SMOL shape) for every request cost milliseconds of each
// TTFT, and the first-fit search made that cost depend on fragmentation.
struct EngineSession;
EngineSession* engine_session(uint32_t worker, uint32_t index);

// Makes `s` a fresh session of `model` (position 0, states zeroed), growing
// its memory if this model needs more. With a pool, its KV cache is paged
// (kv_cache.h) and its own memory holds no KV rows. Errno::NoMem if memory
// is short.
// With `checkpoint`, the session has room to keep its recurrent state
// (llm::Session::keep_checkpoint) for a rollback.
ErrorOr<void, Error> engine_session_begin(EngineSession* s, EngineModel* model, bool int8_activations,
                                          const llm::KvPool* pool, bool checkpoint = false);
// A cached prefix: the session continues at position pos (0: nothing to do).
ErrorOr<void, Error> engine_session_resume(EngineSession* s, uint32_t pos);
// The same for a session whose snapshot at pos was just copied in from a
// recurrent-state checkpoint (kv_checkpoint.h; any model).
ErrorOr<void, Error> engine_session_restored(EngineSession* s, uint32_t pos);
// Rollback (the iteration seam): keep the session's recurrent state before
// a pass whose positions may be rejected, and move the session back to
// position pos after it (llm::Session::keep_checkpoint / rewind).
ErrorOr<void, Error> engine_session_checkpoint(EngineSession* s);
ErrorOr<void, Error> engine_session_rewind(EngineSession* s, uint32_t pos);
// The session's block table for the next pass (paged sessions only).
void engine_session_map(EngineSession* s, const llm::KvPool* pool, const uint32_t* table, uint32_t n);
// The runtime's Session inside s: what a batch item (llm::BatchItem) names.
llm::Session* engine_runtime_session(EngineSession* s);

// Gives worker `worker` a row team of `harts` parts (row_team.h): its
// batched passes split every matrix product's rows over that many harts.
// Returns the parts actually started.
uint32_t engine_start_team(uint32_t worker, uint32_t harts);
uint32_t engine_team_parts(uint32_t worker);
// The limit in force or asked for (RowTeam::limit(): at most that many of
// the parts take part; `aictl harts H`).
uint32_t engine_team_limit(uint32_t worker);
// Limits the teams of workers 0..workers-1 to `harts` threads each, from
// their next pass. False (nothing changed) unless 1 <= harts <= every
// team's parts.
bool engine_limit_teams(uint32_t harts, uint32_t workers);
// How many of them currently take part (RowTeam::width()).
uint32_t engine_team_width(uint32_t worker);
// The worker's row team times every width once (RowTeam::survey).
void engine_survey_team(uint32_t worker);

// Runs items[0..n) through `model` in one pass over its weights (tokens of
// one session consecutive and in order; all sessions begun with the same
// model and activation kind), writing each wanted next token into
// items[i].next. Each item's effect is exactly that of running it alone:
// the tokens are the same whatever the batch.
ErrorOr<void, Error> engine_forward(uint32_t worker, EngineModel* model, bool int8_activations,
                                    llm::BatchItem* items, uint32_t n);

// The worker's room for one pass's sampled positions: `rows` rows of
// vocab_size logits, one after the other (the pass writes each Sample
// item's row: BatchItem::logits), and the sampler's index scratch.
// Allocated on first use and kept (SmolLM2 shape: 192 KiB a row).
struct LogitsRoom {
  float* rows;
  uint32_t* order;   // [vocab_size]
};
ErrorOr<LogitsRoom, Error> engine_logits_room(uint32_t worker, EngineModel* model, uint32_t rows);

// Request checks with the runtime's own rules (llm::check_request), mapped
// to one errno per cause (include/kai/ai_abi.h lists them).
ErrorOr<void, Error> engine_check_request(const ModelSummary& model, const uint32_t* prompt,
                                          uint32_t prompt_len, uint32_t n_predict);

}  // namespace ai
