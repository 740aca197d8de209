// Constrained decoding: the one entry point a runner needs.
//
//   compile_grammar  regex or JSON-schema text -> a minimal DFA
//   Constraint       one request's walk: mask the logits, advance by the
//                    chosen token, say whether the output is a match
//
// The pieces: grammar_regex.h (pattern -> NFA), grammar_json.h (schema ->
// pattern), grammar_dfa.h (NFA -> DFA), grammar_mask.h (DFA + vocabulary ->
// allowed ids). docs/constrained-decoding.md explains them with an example.
//
// How a runner uses it, per generated token:
//   1. the logits of the position (never the fused argmax: a greedy request
//      needs the argmax over the allowed ids only);
//   2. Constraint::mask_logits: disallowed ids -> -infinity (an error when
//      no id is allowed: the vocabulary cannot spell what the grammar needs);
//   3. the sampler as usual (repetition penalty, temperature, top-k/p,
//      min-p, draw; greedy takes the argmax): a -infinity logit has
//      probability 0, so it is never drawn;
//   4. Constraint::advance(token); Constraint::complete() ends the request
//      when nothing may follow (finish reason "grammar").
// The state is a function of the output tokens alone, so a request that is
// preempted, resumed or re-prefilled recomputes it with replay().
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "grammar_dfa.h"
#include "grammar_json.h"
#include "grammar_mask.h"

namespace llm {

enum class GrammarKind : uint8_t { None = 0, Regex = 1, JsonSchema = 2 };
// The longest grammar text accepted (a schema; a regex has kMaxPatternBytes).
constexpr uint32_t kMaxGrammarBytes = kMaxSchemaBytes;
// Memory for one compiled DFA: the table of the largest one allowed
// (kMaxDfaStates rows of up to 256 classes would be 2 MiB; real grammars
// use a few dozen classes) is refused beyond this.
constexpr size_t kMaxDfaBytes = size_t(1) << 20;

// Compiles `text` (len bytes). `scratch` must hold kGrammarScratchBytes
// (given back on return); the DFA's tables come from `out`.
Result<Dfa> compile_grammar(GrammarKind kind, const char* text, size_t len, Arena& scratch, Arena& out);

class Constraint {
 public:
  Constraint() = default;
  Constraint(const Dfa& dfa, const VocabView& vocab, TokenMasks& masks)
      : dfa_(&dfa), vocab_(&vocab), masks_(&masks) {}

  bool active() const { return dfa_ != nullptr; }
  // Sets logits[i] = -infinity for every id the state does not allow
  // (n = the model's vocabulary). Error when none is allowed.
  Result<uint32_t> mask_logits(float* logits, uint32_t n);
  // The token was chosen (it was allowed, so the state stays alive).
  void advance(uint32_t token) { state_ = grammar_advance(*dfa_, *vocab_, state_, token); }
  // Back to the start, then every output token again.
  void replay(const uint32_t* output, uint32_t n);

  bool matched() const { return state_ != kDeadState && dfa_->accepting(state_); }
  bool complete() const { return state_ != kDeadState && dfa_->complete(state_); }
  bool dead() const { return state_ == kDeadState; }
  uint16_t state() const { return state_; }

 private:
  const Dfa* dfa_ = nullptr;
  const VocabView* vocab_ = nullptr;
  TokenMasks* masks_ = nullptr;
  uint16_t state_ = 0;
};

}  // namespace llm
