// Token masks from a DFA and a vocabulary (grammar_mask.h has the rule).
//
// In this file: the tokenizer's view (vocab_from_tokenizer), the cache
// (TokenMasks: a slot per cached state, round-robin eviction), the walk
// with shared prefixes (TokenMasks::compute), grammar_advance, apply_mask.
#include "grammar_mask.h"
#include "llm_util.h"

namespace llm {
namespace {

// Every byte value once, so a SentencePiece byte token's one byte has an address.
struct AllBytes {
  uint8_t b[256];
  constexpr AllBytes() : b() {
    for (int i = 0; i < 256; i++) b[i] = uint8_t(i);
  }
};
constexpr AllBytes kAllBytes;

uint8_t hex_digit(uint8_t c) { return uint8_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10); }

TokenUse tokenizer_use(const void* ctx, uint32_t id, TokenBytes* bytes) {
  const Tokenizer& t = *static_cast<const Tokenizer*>(ctx);
  if (is_eos(t, id)) return TokenUse::Eos;
  // A token adds the bytes the decoder prints: its text for a special token
  // such as <|im_start|>, one byte for "<0xXX>". One that prints nothing
  // (llama2.c's <s>) is never allowed: a model can repeat it without end
  // (stories260K did, under a JSON schema) and the automaton never moves.
  uint8_t f = t.token_flags[id];
  if (f & kTokenSkip) return TokenUse::Never;
  TokenBytes tb = token_bytes(t, id);
  if (f & kTokenByte) {   // "<0xXX>", checked when TOK.BIN was loaded
    tb = {&kAllBytes.b[hex_digit(tb.data[3]) << 4 | hex_digit(tb.data[4])], 1};
  }
  if (tb.size == 0) return TokenUse::Never;
  *bytes = tb;
  return TokenUse::Text;
}

uint32_t tokenizer_order(const void* ctx, uint32_t i) {
  const Tokenizer& t = *static_cast<const Tokenizer*>(ctx);
  return load_u32(t.sorted + 4 * size_t(i));
}

}  // namespace

VocabView vocab_from_tokenizer(const Tokenizer& t, uint32_t model_vocab) {
  VocabView v;
  v.n_logits = model_vocab;
  v.n_real = t.vocab_size < model_vocab ? t.vocab_size : model_vocab;
  v.ctx = &t;
  v.use = tokenizer_use;
  // The sorted order lists every tokenizer id; with a model smaller than
  // its tokenizer, index order (which stops at n_real) is the simple answer.
  v.order = t.vocab_size <= model_vocab ? tokenizer_order : nullptr;
  return v;
}

size_t TokenMasks::bytes_needed(const Dfa& dfa, const VocabView& v, uint32_t slots) {
  if (slots > dfa.n_states) slots = dfa.n_states;
  return size_t(dfa.n_states) * 2 + size_t(slots) * (2 + 4) + size_t(slots) * mask_words(v.n_logits) * 4 + 16;
}

bool TokenMasks::init(const Dfa& dfa, const VocabView& v, void* memory, size_t bytes, uint32_t slots) {
  if (slots > dfa.n_states) slots = dfa.n_states;
  if (slots == 0 || bytes < bytes_needed(dfa, v, slots)) return false;
  dfa_ = &dfa;
  v_ = v;
  words_ = mask_words(v.n_logits);
  slots_ = slots;
  next_victim_ = 0;
  hits = misses = steps = 0;
  Arena a(memory, bytes);
  bits_ = a.take<uint32_t>(size_t(slots) * words_);
  count_ = a.take<uint32_t>(slots);
  slot_of_state_ = a.take<uint16_t>(dfa.n_states);
  state_of_slot_ = a.take<uint16_t>(slots);
  if (!bits_ || !count_ || !slot_of_state_ || !state_of_slot_) return false;
  for (uint32_t s = 0; s < dfa.n_states; s++) slot_of_state_[s] = kNoSlot;
  for (uint32_t i = 0; i < slots; i++) state_of_slot_[i] = kDeadState;
  return true;
}

uint32_t TokenMasks::slot_for(uint16_t state) {
  uint16_t slot = slot_of_state_[state];
  if (slot != kNoSlot) {
    hits++;
    return slot;
  }
  misses++;
  slot = uint16_t(next_victim_);
  next_victim_ = (next_victim_ + 1) % slots_;
  if (state_of_slot_[slot] != kDeadState) slot_of_state_[state_of_slot_[slot]] = kNoSlot;
  state_of_slot_[slot] = state;
  slot_of_state_[state] = slot;
  count_[slot] = compute(state, bits_ + size_t(slot) * words_);
  return slot;
}

const uint32_t* TokenMasks::mask(uint16_t state) { return bits_ + size_t(slot_for(state)) * words_; }
uint32_t TokenMasks::allowed(uint16_t state) { return count_[slot_for(state)]; }

uint32_t TokenMasks::compute(uint16_t state, uint32_t* out) {
  for (uint32_t i = 0; i < words_; i++) out[i] = 0;
  const Dfa& d = *dfa_;
  bool accepting = d.accepting(state);
  // at[k]: the state after the first k bytes of `prev` (the last token
  // walked), valid for k <= prev_depth. A token sharing j leading bytes
  // with prev starts its walk at at[j] instead of at `state`.
  uint16_t at[kMaxTokenBytes + 1];
  at[0] = state;
  const uint8_t* prev = nullptr;
  uint32_t prev_depth = 0;
  uint32_t count = 0;
  uint64_t n_steps = 0;
  for (uint32_t i = 0; i < v_.n_real; i++) {
    uint32_t id = v_.order ? v_.order(v_.ctx, i) : i;
    TokenBytes tb{nullptr, 0};
    TokenUse use = v_.use(v_.ctx, id, &tb);
    bool ok = false;
    if (use == TokenUse::Eos) {
      ok = accepting;
    } else if (use == TokenUse::Text && tb.size <= kMaxTokenBytes) {
      uint32_t j = 0;
      while (j < prev_depth && j < tb.size && tb.data[j] == prev[j]) j++;
      uint16_t s = at[j];
      if (s != kDeadState) {
        // Walk on from the shared prefix, remembering each state for the next token.
        while (j < tb.size && s != kDeadState) {
          s = d.step(s, tb.data[j++]);
          at[j] = s;
          n_steps++;
        }
        prev = tb.data;
        prev_depth = j;
        ok = s != kDeadState;
      }
    }
    if (ok) {
      out[id >> 5] |= 1u << (id & 31);
      count++;
    }
  }
  steps += n_steps;
  return count;
}

uint16_t grammar_advance(const Dfa& dfa, const VocabView& v, uint16_t state, uint32_t id) {
  if (state == kDeadState || id >= v.n_real) return kDeadState;
  TokenBytes tb{nullptr, 0};
  switch (v.use(v.ctx, id, &tb)) {
    case TokenUse::Eos: return dfa.accepting(state) ? state : kDeadState;
    case TokenUse::Never: return kDeadState;
    case TokenUse::Text: break;
  }
  return dfa.walk(state, tb.data, tb.size);
}

void apply_mask(float* logits, uint32_t n, const uint32_t* mask) {
  const float minus_inf = __builtin_bit_cast(float, 0xff800000u);
  for (uint32_t i = 0; i < n; i++)
    if (!mask_allows(mask, i)) logits[i] = minus_inf;
}

}  // namespace llm
