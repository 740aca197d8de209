// Text <-> token ids with a bundle's TOK.BIN (docs/model-format.md, written
// by tools/tokbin.py). Freestanding like the rest of lib/: no heap, no libc;
// the caller owns the TOK.BIN bytes and every output buffer. The same code
// runs in the kernel, in user programs (user/lib/kai_text.h) and on the host
// (build/host/toktool), and agrees with tools/tokenizer.py token for token.
//
// In this file:
//   Tokenizer        a validated view of TOK.BIN (pointers into the caller's bytes)
//   load_tokenizer   checks every field before anything is read through it
//   eos_ids/is_eos   the end-of-sequence ids for stop conditions
//   encode           text -> ids (no BOS); encode_prompt adds BOS when the model wants it
//   decode           ids -> UTF-8 bytes; Decoder does the same one token at a time
//
// Two kinds of tokenizer share the file:
//   ByteBpe  Hugging Face byte-level BPE (SmolLM2): special tokens split out
//            first, then digits one by one, then GPT-2's split rule; each piece
//            starts as one token per byte and the pair of lowest merge rank is
//            merged until no pair has a rank.
//   Scores   llama2.c (stories260K): a dummy leading space, one token per
//            character (or <0xXX> byte tokens), then the pair whose
//            concatenation is the highest-scoring token is merged, repeatedly.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "llm_error.h"

namespace llm {

// ---- TOK.BIN layout constants (the single definition is tools/tokbin.py)
inline constexpr uint32_t kTokMagic = 0x4E4B4F54;   // "TOKN"
inline constexpr uint32_t kTokVersion = 1;
inline constexpr uint32_t kTokHeaderBytes = 128;   // 32 u32 words
inline constexpr uint32_t kNoToken = 0xFFFFFFFFu;   // "no such id" in the file
inline constexpr uint32_t kMaxEos = 8;
inline constexpr uint32_t kMaxTokVocab = 1u << 20;
inline constexpr uint32_t kMaxTokenBytes = 256;     // longest token

enum class TokenizerKind : uint32_t { ByteBpe = 1, Scores = 2 };
// The pre-tokenizer's split rule (regexes spelled out in llm_tokenizer.cpp).
enum class SplitRule : uint32_t { None = 0, Gpt2 = 1, Qwen2 = 2, Qwen35 = 3 };

// Header flags: the tokenizer's conventions.
inline constexpr uint32_t kTokAddBos = 1u << 0;         // prompts start with bos_id
inline constexpr uint32_t kTokDummyPrefix = 1u << 1;    // leading " " token; decode drops it
inline constexpr uint32_t kTokDigitsSplit = 1u << 2;    // each \p{N} is its own piece
inline constexpr uint32_t kTokByteFallback = 1u << 3;   // unknown characters -> <0xXX>
inline constexpr uint32_t kTokIgnoreMerges = 1u << 4;   // whole piece in vocab -> one token
inline constexpr uint32_t kTokNfc = 1u << 5;            // model expects NFC text (not applied)
inline constexpr uint32_t kTokAllFlags = 0x3F;

// Per-token flags (one byte per token).
inline constexpr uint8_t kTokenSkip = 1u << 0;      // decodes to nothing (llama2.c <s>, </s>)
inline constexpr uint8_t kTokenByte = 1u << 1;      // "<0xXX>": decodes to byte XX
inline constexpr uint8_t kTokenSpecial = 1u << 2;   // special added token (e.g. <|im_end|>)

// Character classes of the pre-tokenizer (code-point ranges in the file).
enum class CharClass : uint32_t { Other = 0, Letter = 1, Number = 2, Space = 3, Mark = 4 };

// A loaded tokenizer: header fields plus pointers to each section inside the
// caller's TOK.BIN bytes, which must outlive it. Sections are read with
// byte-wise little-endian loads, so the bytes need no alignment.
struct Tokenizer {
  TokenizerKind kind = TokenizerKind::ByteBpe;
  uint32_t flags = 0;
  SplitRule split = SplitRule::None;
  uint32_t vocab_size = 0;
  uint32_t bos_id = kNoToken;          // kNoToken: the model has none
  uint32_t n_eos = 0;                  // 0: generation stops only at the length limit
  uint32_t eos[kMaxEos] = {};
  uint32_t n_merges = 0, n_added = 0, n_ranges = 0;
  uint32_t max_token_len = 0;
  const uint8_t* offsets = nullptr;    // u32[vocab_size + 1]: token i is blob[off[i], off[i+1])
  const uint8_t* token_flags = nullptr;  // u8[vocab_size]
  const uint8_t* scores = nullptr;     // f32[vocab_size] (Scores kind only)
  const uint8_t* sorted = nullptr;     // u32[vocab_size]: ids ordered by (bytes, id)
  const uint8_t* byte_ids = nullptr;   // u32[256]: the token of each single byte, or kNoToken
  const uint8_t* merges = nullptr;     // {left, right, rank, merged} u32 x4, ordered by (left, right)
  const uint8_t* added = nullptr;      // u32[n_added]: tokens matched literally before splitting
  const uint8_t* ranges = nullptr;     // {lo, hi, class} u32 x3, ordered, disjoint
  const uint8_t* blob = nullptr;       // the tokens' bytes
};

// Validates TOK.BIN (errors name the field: "TOK.BIN: merges[7] right=99999
// out of range (vocab 512)") and fills `out`. `data` must stay alive.
Result<Tokenizer> load_tokenizer(const uint8_t* data, size_t size);

// ---- conventions
struct TokenBytes {
  const uint8_t* data;
  uint32_t size;
};
TokenBytes token_bytes(const Tokenizer& t, uint32_t id);   // id < vocab_size
// The end-of-sequence ids: copies up to `cap` of them into `out` and returns
// how many the tokenizer has (0 for none: the course bundles have no TOK.BIN
// at all, so callers treat "no tokenizer" as "no EOS").
uint32_t eos_ids(const Tokenizer& t, uint32_t* out, uint32_t cap);
// The same from TOK.BIN's first 128 bytes alone, for a reader that wants the
// stop ids without loading the vocabulary (the kernel's model probe): checks
// magic, version, vocab_size, n_eos and each eos id < vocab_size, nothing
// else. `size` may be the whole file or just the header.
Result<uint32_t> eos_ids_from_header(const uint8_t* data, size_t size, uint32_t* out, uint32_t cap);
bool is_eos(const Tokenizer& t, uint32_t id);
bool adds_bos(const Tokenizer& t);   // true: encode_prompt starts with t.bos_id
CharClass char_class(const Tokenizer& t, uint32_t code_point);

// ---- encoding
// encode: the ids of `text` (UTF-8, `len` bytes) into out[0..cap), no BOS;
// returns the count. Errors: NoMemory when cap is too small, BadValue when
// a character has no token (no byte fallback / a byte the vocabulary lacks).
Result<uint32_t> encode(const Tokenizer& t, const char* text, size_t len, uint32_t* out, uint32_t cap);
// encode_prompt: the same, preceded by bos_id when the tokenizer says prompts
// carry one (llama2.c models); this is what a model should be fed.
Result<uint32_t> encode_prompt(const Tokenizer& t, const char* text, size_t len, uint32_t* out,
                               uint32_t cap);

// ---- decoding
// Output is UTF-8 with every ill-formed byte sequence replaced by U+FFFD, as
// Python's bytes.decode("utf-8", errors="replace") does (one U+FFFD per
// maximal ill-formed subpart).
struct DecodeOptions {
  bool skip_special = false;   // drop special added tokens (<|im_end|>) instead of printing them
};

// Decoder: one token at a time, for streaming. A character whose UTF-8 bytes
// are split across tokens (emoji, CJK in byte-level BPE) is held back until it
// is complete, so every push() emits only whole characters; finish() flushes
// an incomplete tail as U+FFFD. push(a)+push(b)+finish() == decode({a, b}).
class Decoder {
 public:
  // Worst case bytes of one push() or finish(): every byte of the longest
  // token plus 3 pending ones turned into a 3-byte U+FFFD.
  static constexpr size_t kMaxPushBytes = 3 * (kMaxTokenBytes + 4);

  explicit Decoder(const Tokenizer& t, DecodeOptions opt = {}) : t_(&t), opt_(opt) {}
  // Appends the text of token `id` to out[0..cap); returns the bytes written.
  Result<size_t> push(uint32_t id, char* out, size_t cap);
  Result<size_t> finish(char* out, size_t cap);
  // true until the first token that produces text: the dummy prefix's space
  // is dropped there. A caller that decodes only a continuation (not the
  // prompt) sets it false so a generated " the" keeps its space.
  void set_at_start(bool v) { at_start_ = v; }

 private:
  bool put(uint8_t b, char* out, size_t cap, size_t& n);
  bool emit(const uint8_t* p, size_t k, char* out, size_t cap, size_t& n);
  const Tokenizer* t_;
  DecodeOptions opt_;
  bool at_start_ = true;
  uint8_t pending_[4] = {};
  uint8_t n_pending_ = 0;
  uint8_t need_ = 0;
};

// decode: the text of ids[0..n) into out[0..cap) (not NUL-terminated);
// returns the byte count. NoMemory when cap is too small.
Result<size_t> decode(const Tokenizer& t, const uint32_t* ids, size_t n, char* out, size_t cap,
                      DecodeOptions opt = {});

namespace detail {
// Compares the concatenation a1+a2 with b as unsigned bytes (<0, 0, >0),
// without building it: the merge step asks "is left+right a token?".
inline int compare_concat(const uint8_t* a1, uint32_t n1, const uint8_t* a2, uint32_t n2, const uint8_t* b,
                          uint32_t nb) {
  uint32_t n = n1 + n2;
  for (uint32_t i = 0; i < n && i < nb; i++) {
    uint8_t c = i < n1 ? a1[i] : a2[i - n1];
    if (c != b[i]) return c < b[i] ? -1 : 1;
  }
  return n == nb ? 0 : (n < nb ? -1 : 1);
}
}  // namespace detail

}  // namespace llm
