// Token masks: which vocabulary ids keep a grammar's DFA alive.
//
// In this file:
//   VocabView       what the mask needs of a vocabulary: each id's bytes and use
//   vocab_from_tokenizer  the view of a TOK.BIN (byte-level BPE or SentencePiece)
//   TokenMasks      per DFA state, the bitset of allowed ids, computed on first
//                   visit and kept in a bounded cache
//   grammar_advance the DFA state after one generated token
//   apply_mask      sets the logits of disallowed ids to -infinity
//
// The rule for one DFA state s (docs/constrained-decoding.md, "From a
// pattern to a mask"):
//   - a text token is allowed when walking its bytes from s never reaches
//     the dead state, i.e. a match is still possible after it;
//   - an end-of-sequence token is allowed only when s is accepting;
//   - a token adds the bytes the decoder prints (a special token such as
//     <|im_start|> its text); one that prints nothing and is not EOS
//     (llama2.c's <s>) is never allowed: a model may repeat it without end
//     while the automaton stands still. So \C* allows every id of a
//     byte-level BPE vocabulary, and every id but <s> of llama2.c's;
//   - ids at or beyond the tokenizer's vocabulary (a model's padding rows:
//     Qwen3.5 has 248,320 logits for 248,077 tokens) are never allowed.
// A byte token of SentencePiece ("<0x41>") adds its one byte, as the
// decoder prints it; a byte-level BPE token adds its bytes as stored.
//
// The mask of a state depends only on the DFA and the vocabulary, so it is
// computed once and cached: XGrammar and llguidance do the same (with a
// split into always/never/depends-on-the-stack tokens that a DFA does not
// need). The first visit walks every token, sharing the walk of common
// prefixes between neighbours in TOK.BIN's sorted order; a cached visit is
// one lookup.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "grammar_dfa.h"
#include "llm_tokenizer.h"

namespace llm {

enum class TokenUse : uint8_t { Text, Eos, Never };

struct VocabView {
  uint32_t n_logits = 0;   // the model's vocabulary: bits per mask
  uint32_t n_real = 0;     // ids >= n_real are never allowed (n_real <= n_logits)
  const void* ctx = nullptr;
  // How id (< n_real) may be used, and for Text its bytes.
  TokenUse (*use)(const void* ctx, uint32_t id, TokenBytes* bytes) = nullptr;
  // The i-th id (i < n_real) in an order that keeps ids with common leading
  // bytes together, or nullptr for index order (correct, just slower).
  uint32_t (*order)(const void* ctx, uint32_t i) = nullptr;
};

// The view of a loaded tokenizer for a model with `model_vocab` logits.
// `t` must outlive the view.
VocabView vocab_from_tokenizer(const Tokenizer& t, uint32_t model_vocab);

inline uint32_t mask_words(uint32_t n_logits) { return (n_logits + 31) / 32; }
inline bool mask_allows(const uint32_t* mask, uint32_t id) { return (mask[id >> 5] >> (id & 31)) & 1; }

class TokenMasks {
 public:
  // Bytes init() needs for a cache of `slots` masks.
  static size_t bytes_needed(const Dfa& dfa, const VocabView& v, uint32_t slots);
  // slots: masks kept (1 .. dfa.n_states; more are clipped). `dfa` and the
  // vocabulary behind `v` must outlive this object. False when `bytes` is
  // too small.
  bool init(const Dfa& dfa, const VocabView& v, void* memory, size_t bytes, uint32_t slots);

  // The mask of `state` (a live state): n_logits bits, bit i = id i allowed.
  // Valid until the next call (a miss may evict it).
  const uint32_t* mask(uint16_t state);
  // How many ids mask(state) allows (0: no token can continue).
  uint32_t allowed(uint16_t state);

  // Counters for measurements: visits served from the cache, masks
  // computed, and DFA steps those computations took.
  uint64_t hits = 0, misses = 0, steps = 0;

 private:
  uint32_t slot_for(uint16_t state);
  uint32_t compute(uint16_t state, uint32_t* out);

  const Dfa* dfa_ = nullptr;
  VocabView v_;
  uint32_t words_ = 0, slots_ = 0, next_victim_ = 0;
  uint16_t* slot_of_state_ = nullptr;   // [n_states], kNoSlot when not cached
  uint16_t* state_of_slot_ = nullptr;   // [slots], kDeadState when empty
  uint32_t* count_ = nullptr;           // [slots] allowed ids
  uint32_t* bits_ = nullptr;            // [slots * words]
  static constexpr uint16_t kNoSlot = 0xFFFF;
};

// The state after token `id` from `state`: the walk of its bytes (Text),
// `state` itself for EOS (generation ends there), kDeadState for Never or
// for an id the state does not allow.
uint16_t grammar_advance(const Dfa& dfa, const VocabView& v, uint16_t state, uint32_t id);

// logits[i] = -infinity for every id the mask does not allow (i < n).
void apply_mask(float* logits, uint32_t n, const uint32_t* mask);

}  // namespace llm
