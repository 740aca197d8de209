// Compile-time limits of the AI service, gathered in one leaf header (as
// kernel/param.h does for the core) so every file of kernel/ai can use them
// without including a file above it. Boot options (ai.max_batch, ai.budget,
// ...) choose values up to these limits; see service.cpp.
#pragma once
#include <stdint.h>
#include <kai/ai_abi.h>

namespace ai {

constexpr int kQueueCapacity = 32;     // request slots (queued + running + uncollected)
constexpr int kMaxWorkers = 4;         // worker threads (ai.workers)
constexpr uint32_t kMaxTeamParts = 8;  // threads in a worker's row team (the ai.harts limit; row_team.h)
constexpr uint32_t kMaxOutput = KAI_AI_MAX_OUTPUT;  // generated tokens per request (the ABI's limit)

// Iteration-level batching (docs/ai-service.md, "Iterations"):
// ai.max_batch=N requests run together in one worker (1 = one at a time, the
// service before batching); ai.budget=T tokens go through the model per
// iteration (one decode token per running request, the rest prefill chunks).
constexpr uint32_t kMaxBatch = 16;
constexpr uint32_t kDefaultMaxBatch = 8;
constexpr uint32_t kMaxBudget = 256;
constexpr uint32_t kDefaultBudget = 32;

// The iteration seam (docs/ai-service.md, "N scheduled, k accepted"): a
// generating request may be scheduled its newest token plus up to
// kMaxDrafts proposed ones (ai.drafts). A sampled position's logits are kept
// until its token is drawn, vocab_size floats each, so a pass takes at most
// kMaxSampledPositions of them (the drafts of sampled requests stop there).
constexpr uint32_t kMaxDrafts = 8;
constexpr uint32_t kMaxSampledPositions = 24;

// Slots one process may hold (ai.max_per_process), and the aging bound
// (ai.aging_ms): see requests.h and scheduler.h.
constexpr uint32_t kDefaultMaxPerProcess = 8;
constexpr uint32_t kDefaultAgingMs = 20000;

// The paged KV cache (kv_cache.h).
constexpr uint32_t kMaxKvBlocks = 1024;         // block-table entries per request
constexpr uint32_t kDefaultKvMb = 96;           // per model: SmolLM2 shape, ~130 blocks
constexpr uint32_t kDefaultKvBlock = 16;        // positions per block

// Constrained decoding (request_grammar.h). A grammar is compiled in the
// submitting system call, one at a time (a sleep lock), so the compiler's
// working memory exists at most once: kGrammarScratchBytes of scratch plus
// kGrammarTableBytes for the DFA while it is built, both given back when
// ai_submit returns. What a request keeps is its DFA (exactly the bytes it
// needs, at most kGrammarTableBytes) and a cache of token masks of at most
// kGrammarMaskBytes: 170 masks of the SmolLM2 vocabulary (6 KiB each), 33
// of Qwen3.5's (31 KiB each); a state whose mask was evicted is computed
// again on its next visit. So 32 constrained requests hold at most 64 MiB.
constexpr uint32_t kMaxGrammarBytes = KAI_AI_MAX_GRAMMAR_BYTES;   // the text a submit may bring
constexpr uint64_t kGrammarScratchBytes = uint64_t(4) << 20;     // = llm::kGrammarScratchBytes
constexpr uint64_t kGrammarTableBytes = uint64_t(1) << 20;       // = llm::kMaxDfaBytes
constexpr uint64_t kGrammarMaskBytes = uint64_t(1) << 20;

}  // namespace ai
