// One constrained request's grammar in the kernel (docs/constrained-decoding.md,
// "The warm path"): the compiled DFA, the vocabulary it is masked against
// and the cache of token masks, in one contiguous region that the request
// owns from ai_submit until it finishes.
//
// Who calls what:
//   ai_submit      grammar_build (compiles; an error names the position)
//   the worker     grammar_mask before the sampler draws a constrained row
//   commit         grammar_advance after a token is published; stop_reason
//                  asks grammar_complete / grammar_matched
//   finish, exit   grammar_free
//
// The DFA state is a function of the output tokens alone. `walked` counts
// the output tokens the state has seen; grammar_mask walks the tokens it has
// not (or starts again if the output got shorter), so the state is right
// whatever happened between passes (a preemption, a re-prefill).
//
// Built for the host unit tests too (platform.h gives malloc there).
#pragma once
#include <stdint.h>
#include "ai_error.h"
#include "grammar.h"

namespace ai {

struct RequestGrammar {
  llm::Dfa dfa;                // its tables inside the region below
  llm::VocabView vocab;        // the model's tokenizer (kept for the model's life)
  llm::TokenMasks masks;
  llm::Constraint constraint;  // the state after output[0 .. walked)
  uint32_t walked;
  uint64_t region_bytes;       // this object, the DFA's tables and the masks: one region
  uint64_t dfa_bytes;          // of which the DFA's tables (as the compiler laid them out)
  uint64_t mask_bytes;         // ... and the mask cache (TokenMasks::bytes_needed)
};

// Compiles `text` (len bytes) for `vocab` into a new RequestGrammar.
// scratch: llm::kGrammarScratchBytes, table: llm::kMaxDfaBytes of working
// memory (the caller's, given back after). Errors: Invalid with the
// compiler's message ("regex: unbalanced ( at 1"), NoMem.
ErrorOr<RequestGrammar*, Error> grammar_build(llm::GrammarKind kind, const char* text, uint32_t len,
                                              const llm::VocabView& vocab, void* scratch, void* table);
void grammar_free(RequestGrammar* g);

// The state after output[0..n): walks what it has not seen.
void grammar_sync(RequestGrammar* g, const uint32_t* output, uint32_t n);
// Sets logits[i] = -infinity for every id the grammar does not allow after
// output[0..n) (vocab = the model's vocabulary). Error when none is allowed.
ErrorOr<void, Error> grammar_mask(RequestGrammar* g, const uint32_t* output, uint32_t n, float* logits,
                                  uint32_t vocab);
// The output is a match (EOS or the end would be accepted) / a match after
// which nothing may follow. After grammar_sync.
bool grammar_matched(const RequestGrammar* g);
bool grammar_complete(const RequestGrammar* g);

}  // namespace ai
