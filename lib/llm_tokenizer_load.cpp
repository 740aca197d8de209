// TOK.BIN validation (see llm_tokenizer.h): every field is checked before
// anything is read through it, and the invariants listed at the top of
// llm_tokenizer.cpp are established here, once, so encoding and decoding
// never check them again. Messages name the field: "TOK.BIN: merges[7] id
// out of range".
#include "llm_tokenizer.h"

namespace llm {

namespace {

constexpr uint32_t kHeaderWords = kTokHeaderBytes / 4;

uint32_t word(const uint8_t* p, size_t i) { return load_u32(p + 4 * i); }

int compare_bytes(const uint8_t* a, uint32_t na, const uint8_t* b, uint32_t nb) {
  return detail::compare_concat(a, na, nullptr, 0, b, nb);
}
using detail::compare_concat;

Error field_error(ErrorCode c, const char* field, uint64_t value, const char* why) {
  return Error::make(c).str("TOK.BIN: ").str(field).str("=").num(value).str(" ").str(why);
}
Error entry_error(const char* section, uint64_t index, const char* why) {
  return Error::make(ErrorCode::BadValue).str("TOK.BIN: ").str(section).str("[").num(index).str("] ").str(why);
}

bool is_hex(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); }

// Header fields, then sizes: nothing is read through a section pointer
// before the file is known to be exactly as long as the header implies.
ErrorOr<void, Error> check_header(const uint8_t* d, size_t size, Tokenizer& t) {
  if (size < kTokHeaderBytes)
    return Error::make(ErrorCode::BadSize).str("TOK.BIN: size ").num(size).str(" bytes, smaller than the 128-byte header");
  if (word(d, 0) != kTokMagic) return field_error(ErrorCode::BadMagic, "magic", word(d, 0), "is not 0x4E4B4F54 (\"TOKN\")");
  if (word(d, 1) != kTokVersion) return field_error(ErrorCode::BadVersion, "version", word(d, 1), "unknown (expected 1)");
  uint32_t kind = word(d, 2);
  if (kind != 1 && kind != 2) return field_error(ErrorCode::BadVersion, "kind", kind, "unknown (1 byte-level BPE, 2 scores)");
  t.kind = TokenizerKind(kind);
  t.flags = word(d, 3);
  if (t.flags & ~kTokAllFlags) return field_error(ErrorCode::BadField, "flags", t.flags, "has unknown bits");
  uint32_t split = word(d, 4);
  if (split > 3) return field_error(ErrorCode::BadField, "split_rule", split, "unknown (0 none, 1 gpt2, 2 qwen2, 3 qwen3.5)");
  if (t.kind == TokenizerKind::Scores && split != 0)
    return field_error(ErrorCode::BadField, "split_rule", split, "must be 0 for a scores tokenizer");
  t.split = SplitRule(split);
  t.vocab_size = word(d, 5);
  if (t.vocab_size == 0 || t.vocab_size > kMaxTokVocab)
    return field_error(ErrorCode::BadField, "vocab_size", t.vocab_size, "must be 1..1048576");
  t.bos_id = word(d, 6);
  if (t.bos_id != kNoToken && t.bos_id >= t.vocab_size)
    return field_error(ErrorCode::BadField, "bos_id", t.bos_id, "out of range");
  t.n_eos = word(d, 7);
  if (t.n_eos > kMaxEos) return field_error(ErrorCode::BadField, "n_eos", t.n_eos, "more than 8");
  for (uint32_t i = 0; i < t.n_eos; i++) {
    t.eos[i] = word(d, 8 + i);
    if (t.eos[i] >= t.vocab_size) return entry_error("eos", i, "out of range");
  }
  t.n_merges = word(d, 16);
  t.n_added = word(d, 17);
  t.n_ranges = word(d, 18);
  uint32_t blob_size = word(d, 19);
  t.max_token_len = word(d, 20);
  if (t.kind == TokenizerKind::Scores && t.n_merges)
    return field_error(ErrorCode::BadField, "n_merges", t.n_merges, "must be 0 for a scores tokenizer");
  if (t.n_merges > (1u << 22)) return field_error(ErrorCode::BadField, "n_merges", t.n_merges, "more than 4194304");
  if (t.n_added > 1024) return field_error(ErrorCode::BadField, "n_added", t.n_added, "more than 1024");
  if (t.n_ranges > 65536) return field_error(ErrorCode::BadField, "n_class_ranges", t.n_ranges, "more than 65536");
  if (t.max_token_len > kMaxTokenBytes)
    return field_error(ErrorCode::BadField, "max_token_len", t.max_token_len, "more than 256");
  for (uint32_t i = 21; i < kHeaderWords; i++)
    if (word(d, i)) return entry_error("header", i, "reserved word is not 0");
  uint64_t v = t.vocab_size;
  uint64_t at = kTokHeaderBytes;
  auto section = [&](uint64_t bytes) {
    const uint8_t* p = d + (at <= size ? at : 0);
    at += (bytes + 3) & ~uint64_t(3);
    return p;
  };
  t.offsets = section(4 * (v + 1));
  t.token_flags = section(v);
  t.scores = t.kind == TokenizerKind::Scores ? section(4 * v) : nullptr;
  t.sorted = section(4 * v);
  t.byte_ids = section(4 * 256);
  t.merges = section(16 * uint64_t(t.n_merges));
  t.added = section(4 * uint64_t(t.n_added));
  t.ranges = section(12 * uint64_t(t.n_ranges));
  t.blob = section(blob_size);
  if (at != size)
    return Error::make(ErrorCode::BadSize).str("TOK.BIN: size ").num(size).str(" bytes, expected ").num(at);
  if (word(t.offsets, 0) != 0) return entry_error("offsets", 0, "is not 0");
  if (word(t.offsets, v) != blob_size) return entry_error("offsets", v, "differs from token_bytes_size");
  return {};
}

ErrorOr<void, Error> check_tokens(const Tokenizer& t) {
  for (uint32_t i = 0; i < t.vocab_size; i++) {
    uint32_t a = word(t.offsets, i), b = word(t.offsets, i + 1);
    if (b < a) return entry_error("offsets", i + 1, "decreases");
    if (b - a > t.max_token_len) return entry_error("offsets", i, "token longer than max_token_len");
    uint8_t f = t.token_flags[i];
    if (f & ~(kTokenSkip | kTokenByte | kTokenSpecial)) return entry_error("token_flags", i, "has unknown bits");
    if (f & kTokenByte) {
      const uint8_t* p = t.blob + a;
      if (b - a != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || !is_hex(p[3]) || !is_hex(p[4]) || p[5] != '>')
        return entry_error("token_flags", i, "byte token is not spelled <0xXX>");
    }
    if (t.scores && !is_finite(load_f32(t.scores + 4 * size_t(i)))) return entry_error("scores", i, "is not finite");
  }
  for (uint32_t i = 0; i < t.vocab_size; i++) {
    uint32_t id = word(t.sorted, i);
    if (id >= t.vocab_size) return entry_error("sorted_ids", i, "out of range");
    if (i) {   // strictly increasing in (bytes, id): a permutation, ready for binary search
      uint32_t prev = word(t.sorted, i - 1);
      TokenBytes x = token_bytes(t, prev), y = token_bytes(t, id);
      int c = compare_bytes(x.data, x.size, y.data, y.size);
      if (c > 0 || (c == 0 && prev >= id)) return entry_error("sorted_ids", i, "out of order");
    }
  }
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t id = word(t.byte_ids, b);
    if (id == kNoToken) continue;
    if (id >= t.vocab_size) return entry_error("byte_ids", b, "out of range");
    TokenBytes tb = token_bytes(t, id);
    bool ok = t.kind == TokenizerKind::ByteBpe ? tb.size == 1 && tb.data[0] == b
                                               : (t.token_flags[id] & kTokenByte) != 0;
    if (!ok) return entry_error("byte_ids", b, "names a token that is not that byte");
  }
  return {};
}

ErrorOr<void, Error> check_tables(const Tokenizer& t) {
  for (uint32_t i = 0; i < t.n_merges; i++) {
    const uint8_t* m = t.merges + 16 * size_t(i);
    uint32_t l = load_u32(m), r = load_u32(m + 4), rank = load_u32(m + 8), out = load_u32(m + 12);
    if (l >= t.vocab_size || r >= t.vocab_size || out >= t.vocab_size) return entry_error("merges", i, "id out of range");
    if (rank >= t.n_merges) return entry_error("merges", i, "rank out of range");
    if (i) {
      uint32_t pl = load_u32(m - 16), pr = load_u32(m - 12);
      if (pl > l || (pl == l && pr >= r)) return entry_error("merges", i, "out of order");
    }
    TokenBytes a = token_bytes(t, l), b = token_bytes(t, r), c = token_bytes(t, out);
    if (compare_concat(a.data, a.size, b.data, b.size, c.data, c.size) != 0)
      return entry_error("merges", i, "result is not left + right");
  }
  for (uint32_t i = 0; i < t.n_added; i++) {
    uint32_t id = word(t.added, i);
    if (id >= t.vocab_size) return entry_error("added", i, "out of range");
    if (token_bytes(t, id).size == 0) return entry_error("added", i, "is empty");
  }
  uint32_t prev_hi = 0;
  for (uint32_t i = 0; i < t.n_ranges; i++) {
    const uint8_t* r = t.ranges + 12 * size_t(i);
    uint32_t lo = load_u32(r), hi = load_u32(r + 4), c = load_u32(r + 8);
    if (lo > hi || hi > 0x10FFFF) return entry_error("class_ranges", i, "bounds invalid");
    if (i && lo <= prev_hi) return entry_error("class_ranges", i, "out of order or overlapping");
    if (c < 1 || c > 4) return entry_error("class_ranges", i, "class unknown");
    prev_hi = hi;
  }
  return {};
}
}  // namespace

Result<uint32_t> eos_ids_from_header(const uint8_t* d, size_t size, uint32_t* out, uint32_t cap) {
  if (size < kTokHeaderBytes)
    return Error::make(ErrorCode::BadSize).str("TOK.BIN: size ").num(size).str(" bytes, smaller than the 128-byte header");
  if (word(d, 0) != kTokMagic) return field_error(ErrorCode::BadMagic, "magic", word(d, 0), "is not 0x4E4B4F54 (\"TOKN\")");
  if (word(d, 1) != kTokVersion) return field_error(ErrorCode::BadVersion, "version", word(d, 1), "unknown (expected 1)");
  uint32_t vocab = word(d, 5), n = word(d, 7);
  if (vocab == 0 || vocab > kMaxTokVocab) return field_error(ErrorCode::BadField, "vocab_size", vocab, "must be 1..1048576");
  if (n > kMaxEos) return field_error(ErrorCode::BadField, "n_eos", n, "more than 8");
  for (uint32_t i = 0; i < n; i++) {
    if (word(d, 8 + i) >= vocab) return entry_error("eos", i, "out of range");
    if (i < cap) out[i] = word(d, 8 + i);
  }
  return n;
}

Result<Tokenizer> load_tokenizer(const uint8_t* data, size_t size) {
  Tokenizer t;
  TRY(check_header(data, size, t));
  TRY(check_tokens(t));
  TRY(check_tables(t));
  return t;
}

}  // namespace llm
