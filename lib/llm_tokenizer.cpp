// TOK.BIN loading, encoding and decoding (see llm_tokenizer.h for the map).
//
// Invariants load_tokenizer() establishes, which everything below relies on
// without checking again:
//   - every section lies inside the file; offsets are non-decreasing and end
//     at the blob's size; no token is longer than kMaxTokenBytes;
//   - every id stored anywhere (bos, eos, sorted, byte_ids, merges, added) is
//     < vocab_size or, where allowed, kNoToken;
//   - `sorted` is strictly increasing in (bytes, id), so binary search finds
//     the lowest id with given bytes (tools/tokenizer.py's lookup keeps the
//     first one too); `merges` strictly increasing in (left, right), and
//     bytes(merged) == bytes(left) + bytes(right);
//   - a kTokenByte token is spelled exactly "<0xXX>";
//   - class ranges are ordered, disjoint, within Unicode.
#include "llm_tokenizer.h"

namespace llm {

namespace {

constexpr uint32_t kHeaderWords = kTokHeaderBytes / 4;

Error tok_error(ErrorCode c, const char* what) {
  return Error::make(c).str("TOK.BIN: ").str(what);
}

uint32_t word(const uint8_t* p, size_t i) { return load_u32(p + 4 * i); }

int compare_bytes(const uint8_t* a, uint32_t na, const uint8_t* b, uint32_t nb) {
  uint32_t n = na < nb ? na : nb;
  for (uint32_t i = 0; i < n; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return na == nb ? 0 : (na < nb ? -1 : 1);
}

// Compares the concatenation a1+a2 with b, without building it.
int compare_concat(const uint8_t* a1, uint32_t n1, const uint8_t* a2, uint32_t n2, const uint8_t* b,
                   uint32_t nb) {
  uint32_t n = n1 + n2;
  for (uint32_t i = 0; i < n && i < nb; i++) {
    uint8_t c = i < n1 ? a1[i] : a2[i - n1];
    if (c != b[i]) return c < b[i] ? -1 : 1;
  }
  return n == nb ? 0 : (n < nb ? -1 : 1);
}

// The lowest id whose bytes are a1+a2 (a2 may be empty), or kNoToken.
uint32_t lookup(const Tokenizer& t, const uint8_t* a1, uint32_t n1, const uint8_t* a2, uint32_t n2) {
  uint32_t lo = 0, hi = t.vocab_size;   // first index whose bytes >= key
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    TokenBytes b = token_bytes(t, word(t.sorted, mid));
    if (compare_concat(a1, n1, a2, n2, b.data, b.size) > 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo == t.vocab_size) return kNoToken;
  uint32_t id = word(t.sorted, lo);
  TokenBytes b = token_bytes(t, id);
  return compare_concat(a1, n1, a2, n2, b.data, b.size) == 0 ? id : kNoToken;
}

// The merge of the pair (left, right): its rank and result, or false.
bool find_merge(const Tokenizer& t, uint32_t left, uint32_t right, uint32_t* rank, uint32_t* merged) {
  uint32_t lo = 0, hi = t.n_merges;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const uint8_t* m = t.merges + 16 * size_t(mid);
    uint32_t l = load_u32(m), r = load_u32(m + 4);
    if (l == left && r == right) {
      *rank = load_u32(m + 8);
      *merged = load_u32(m + 12);
      return true;
    }
    if (l < left || (l == left && r < right)) lo = mid + 1;
    else hi = mid;
  }
  return false;
}

// One UTF-8 character at text[pos..end): its code point and length. A byte
// that does not start a well-formed character is taken alone (code point
// 0xFFFFFFFF, class Other): Python strings cannot hold one, so this only
// decides what the guest does with bad input, never an agreement question.
uint32_t next_char(const uint8_t* s, size_t pos, size_t end, uint32_t* len) {
  uint8_t b = s[pos];
  *len = 1;
  if (b < 0x80) return b;
  uint32_t n = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 0;
  if (n == 0 || b > 0xF4 || pos + n > end) return 0xFFFFFFFFu;
  uint32_t cp = b & (0xFF >> (n + 1));
  for (uint32_t i = 1; i < n; i++) {
    uint8_t c = s[pos + i];
    if ((c & 0xC0) != 0x80) return 0xFFFFFFFFu;
    cp = cp << 6 | (c & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0xFFFFFFFFu;
  *len = n;
  return cp;
}

CharClass class_at(const Tokenizer& t, const uint8_t* s, size_t pos, size_t end, uint32_t* len) {
  return char_class(t, next_char(s, pos, end, len));
}

// Where the GPT-2 split rule's piece starting at `pos` ends, in [pos, end):
//   's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
// tried in that order, as a regex engine does.
size_t gpt2_piece_end(const Tokenizer& t, const uint8_t* s, size_t pos, size_t end) {
  if (s[pos] == '\'' && pos + 1 < end) {
    uint8_t c = s[pos + 1];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return pos + 2;
    if (pos + 2 < end) {
      uint8_t d = s[pos + 2];
      if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return pos + 3;
    }
  }
  uint32_t len;
  CharClass first = class_at(t, s, pos, end, &len);
  // " ?X+" for the three non-space classes: an optional ASCII space, then a run.
  size_t run = pos;
  CharClass want = first;
  if (s[pos] == ' ' && pos + 1 < end) {
    uint32_t l2;
    CharClass next = class_at(t, s, pos + 1, end, &l2);
    if (next != CharClass::Space) {
      want = next;
      run = pos + 1;
    }
  }
  auto same = [&](CharClass c) {
    if (want == CharClass::Letter || want == CharClass::Number) return c == want;
    return c != CharClass::Space && c != CharClass::Letter && c != CharClass::Number;
  };
  if (want != CharClass::Space) {
    size_t p = run;
    while (p < end) {
      CharClass c = class_at(t, s, p, end, &len);
      if (!same(c)) break;
      p += len;
    }
    return p;
  }
  // Whitespace: the whole run if it reaches the end of the text; otherwise
  // all but its last character (left to lead the next word, " ?\p{L}+"),
  // unless that would leave nothing (then the run of one, by "\s+").
  size_t p = pos, last = pos;
  while (p < end) {
    CharClass c = class_at(t, s, p, end, &len);
    if (c != CharClass::Space) break;
    last = p;
    p += len;
  }
  if (p == end || last == pos) return p;
  return last;
}

// Output accumulator for encode.
struct IdOut {
  uint32_t* ids;
  uint32_t cap;
  uint32_t n = 0;
};

Error no_room(uint32_t cap) {
  return Error::make(ErrorCode::NoMemory).str("encode: more than ").num(cap).str(" tokens (output buffer full)");
}

Error no_token_for_byte(uint8_t b) {
  static const char hex[] = "0123456789ABCDEF";
  char msg[48];
  TextBuf(msg, sizeof msg).str("no token for byte 0x").chr(hex[b >> 4]).chr(hex[b & 15]);
  return tok_error(ErrorCode::BadValue, msg);
}

// Removes element i+1 after out[i] became the merge of out[i], out[i+1].
void close_gap(uint32_t* ids, uint32_t& n, uint32_t i) {
  for (uint32_t k = i + 1; k + 1 < n; k++) ids[k] = ids[k + 1];
  n--;
}

// Byte-level BPE of one piece s[b, e): bytes become tokens, then the pair of
// lowest rank is merged (leftmost on ties) until no pair has a merge.
ErrorOr<void, Error> bpe_piece(const Tokenizer& t, const uint8_t* s, size_t b, size_t e, IdOut& o) {
  if (t.flags & kTokIgnoreMerges) {
    uint32_t whole = e - b <= kMaxTokenBytes ? lookup(t, s + b, uint32_t(e - b), nullptr, 0) : kNoToken;
    if (whole != kNoToken) {
      if (o.n == o.cap) return no_room(o.cap);
      o.ids[o.n++] = whole;
      return {};
    }
  }
  if (e - b > o.cap - o.n) return no_room(o.cap);
  uint32_t* w = o.ids + o.n;
  uint32_t n = 0;
  for (size_t p = b; p < e; p++) {
    uint32_t id = load_u32(t.byte_ids + 4 * s[p]);
    if (id == kNoToken) return no_token_for_byte(s[p]);
    w[n++] = id;
  }
  while (n > 1) {
    uint32_t best_rank = kNoToken, best_i = 0, best_id = 0;
    for (uint32_t i = 0; i + 1 < n; i++) {
      uint32_t rank, merged;
      if (find_merge(t, w[i], w[i + 1], &rank, &merged) && rank < best_rank) {
        best_rank = rank;
        best_i = i;
        best_id = merged;
      }
    }
    if (best_rank == kNoToken) break;
    w[best_i] = best_id;
    close_gap(w, n, best_i);
  }
  o.n += n;
  return {};
}

// One pre-tokenized segment s[b, e) (no special tokens inside): digits one
// by one if the tokenizer says so, the split rule on what lies between.
ErrorOr<void, Error> encode_segment(const Tokenizer& t, const uint8_t* s, size_t b, size_t e, IdOut& o) {
  size_t p = b;
  while (p < e) {
    size_t q = p;   // [p, q): no digit inside when digits are split
    uint32_t len = 1;
    if (t.flags & kTokDigitsSplit) {
      while (q < e && class_at(t, s, q, e, &len) != CharClass::Number) q += len;
    } else {
      q = e;
    }
    size_t piece = p;
    while (piece < q) {
      size_t end = t.split == SplitRule::Gpt2 ? gpt2_piece_end(t, s, piece, q) : q;
      TRY(bpe_piece(t, s, piece, end, o));
      piece = end;
    }
    if (q < e) {   // the digit itself
      TRY(bpe_piece(t, s, q, q + len, o));
      q += len;
    }
    p = q;
  }
  return {};
}

// The longest special (added) token starting at s[pos], or kNoToken.
uint32_t added_at(const Tokenizer& t, const uint8_t* s, size_t pos, size_t end, uint32_t* len) {
  uint32_t best = kNoToken, best_len = 0;
  for (uint32_t i = 0; i < t.n_added; i++) {
    uint32_t id = word(t.added, i);
    TokenBytes tb = token_bytes(t, id);
    if (tb.size <= best_len || tb.size > end - pos) continue;
    if (compare_bytes(s + pos, tb.size, tb.data, tb.size) == 0) {
      best = id;
      best_len = tb.size;
    }
  }
  *len = best_len;
  return best;
}

Result<uint32_t> encode_byte_bpe(const Tokenizer& t, const uint8_t* s, size_t len, IdOut& o) {
  size_t seg = 0;
  for (size_t p = 0; p < len;) {
    uint32_t alen = 0;
    uint32_t id = t.n_added ? added_at(t, s, p, len, &alen) : kNoToken;
    if (id == kNoToken) {
      p++;
      continue;
    }
    TRY(encode_segment(t, s, seg, p, o));
    if (o.n == o.cap) return no_room(o.cap);
    o.ids[o.n++] = id;
    p += alen;
    seg = p;
  }
  TRY(encode_segment(t, s, seg, len, o));
  return o.n;
}

// llama2.c: characters (or their bytes) first, then the adjacent pair whose
// concatenation is the highest-scoring token, leftmost on ties, until none.
Result<uint32_t> encode_scores(const Tokenizer& t, const uint8_t* s, size_t len, IdOut& o) {
  uint32_t* w = o.ids + o.n;
  uint32_t room = o.cap - o.n, n = 0;
  if (len && (t.flags & kTokDummyPrefix)) {
    if (!room) return no_room(o.cap);
    w[n++] = lookup(t, reinterpret_cast<const uint8_t*>(" "), 1, nullptr, 0);
  }
  for (size_t p = 0; p < len;) {
    uint32_t clen;
    next_char(s, p, len, &clen);
    uint32_t id = lookup(t, s + p, clen, nullptr, 0);
    if (id != kNoToken) {
      if (n == room) return no_room(o.cap);
      w[n++] = id;
    } else {
      for (uint32_t k = 0; k < clen; k++) {
        uint32_t bid = load_u32(t.byte_ids + 4 * s[p + k]);
        if (bid == kNoToken) return no_token_for_byte(s[p + k]);
        if (n == room) return no_room(o.cap);
        w[n++] = bid;
      }
    }
    p += clen;
  }
  while (n > 1) {
    uint32_t best_i = 0, best_id = kNoToken;
    float best = 0;
    for (uint32_t i = 0; i + 1 < n; i++) {
      TokenBytes a = token_bytes(t, w[i]), b = token_bytes(t, w[i + 1]);
      uint32_t id = lookup(t, a.data, a.size, b.data, b.size);
      if (id == kNoToken) continue;
      float sc = load_f32(t.scores + 4 * size_t(id));
      if (best_id == kNoToken || sc > best) {
        best = sc;
        best_i = i;
        best_id = id;
      }
    }
    if (best_id == kNoToken) break;
    w[best_i] = best_id;
    close_gap(w, n, best_i);
  }
  o.n += n;
  return o.n;
}


// ---------------------------------------------------------------- loading

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
  if (split > 1) return field_error(ErrorCode::BadField, "split_rule", split, "unknown (0 none, 1 gpt2)");
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

TokenBytes token_bytes(const Tokenizer& t, uint32_t id) {
  uint32_t a = word(t.offsets, id), b = word(t.offsets, id + 1);
  return {t.blob + a, b - a};
}

uint32_t eos_ids(const Tokenizer& t, uint32_t* out, uint32_t cap) {
  for (uint32_t i = 0; i < t.n_eos && i < cap; i++) out[i] = t.eos[i];
  return t.n_eos;
}

bool is_eos(const Tokenizer& t, uint32_t id) {
  for (uint32_t i = 0; i < t.n_eos; i++)
    if (t.eos[i] == id) return true;
  return false;
}

bool adds_bos(const Tokenizer& t) { return (t.flags & kTokAddBos) && t.bos_id != kNoToken; }

CharClass char_class(const Tokenizer& t, uint32_t cp) {
  uint32_t lo = 0, hi = t.n_ranges;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const uint8_t* r = t.ranges + 12 * size_t(mid);
    if (cp < load_u32(r)) hi = mid;
    else if (cp > load_u32(r + 4)) lo = mid + 1;
    else return CharClass(load_u32(r + 8));
  }
  return CharClass::Other;
}

Result<Tokenizer> load_tokenizer(const uint8_t* data, size_t size) {
  Tokenizer t;
  TRY(check_header(data, size, t));
  TRY(check_tokens(t));
  TRY(check_tables(t));
  return t;
}

Result<uint32_t> encode(const Tokenizer& t, const char* text, size_t len, uint32_t* out, uint32_t cap) {
  IdOut o{out, cap};
  const uint8_t* s = reinterpret_cast<const uint8_t*>(text);
  if (t.kind == TokenizerKind::Scores) return encode_scores(t, s, len, o);
  return encode_byte_bpe(t, s, len, o);
}

Result<uint32_t> encode_prompt(const Tokenizer& t, const char* text, size_t len, uint32_t* out,
                               uint32_t cap) {
  if (!adds_bos(t)) return encode(t, text, len, out, cap);
  if (cap == 0) return no_room(cap);
  out[0] = t.bos_id;
  uint32_t n = TRY(encode(t, text, len, out + 1, cap - 1));
  return n + 1;
}

// ---------------------------------------------------------------- decoding

bool Decoder::emit(const uint8_t* p, size_t k, char* out, size_t cap, size_t& n) {
  if (n + k > cap) return false;
  for (size_t i = 0; i < k; i++) out[n++] = char(p[i]);
  return true;
}

// Feeds one byte through the UTF-8 assembler (Unicode's "maximal subpart"
// replacement, as CPython does).
bool Decoder::put(uint8_t b, char* out, size_t cap, size_t& n) {
  static constexpr uint8_t kReplacement[3] = {0xEF, 0xBF, 0xBD};
  if (n_pending_) {
    uint8_t lo = 0x80, hi = 0xBF;
    if (n_pending_ == 1) {
      uint8_t lead = pending_[0];
      if (lead == 0xE0) lo = 0xA0;
      else if (lead == 0xED) hi = 0x9F;
      else if (lead == 0xF0) lo = 0x90;
      else if (lead == 0xF4) hi = 0x8F;
    }
    if (b >= lo && b <= hi) {
      pending_[n_pending_++] = b;
      if (n_pending_ == need_) {
        n_pending_ = 0;
        return emit(pending_, need_, out, cap, n);
      }
      return true;
    }
    n_pending_ = 0;   // ill-formed: one U+FFFD, then b starts afresh
    if (!emit(kReplacement, 3, out, cap, n)) return false;
  }
  if (b < 0x80) return emit(&b, 1, out, cap, n);
  need_ = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
  if (!need_) return emit(kReplacement, 3, out, cap, n);
  pending_[n_pending_++] = b;
  return true;
}

Result<size_t> Decoder::push(uint32_t id, char* out, size_t cap) {
  const Tokenizer& t = *t_;
  if (id >= t.vocab_size)
    return Error::make(ErrorCode::TokenOutOfRange).str("decode: token ").num(id).str(" >= vocab_size ").num(t.vocab_size);
  uint8_t f = t.token_flags[id];
  if (f & kTokenSkip) {
    if (id == t.bos_id) at_start_ = true;
    return size_t(0);
  }
  if ((f & kTokenSpecial) && opt_.skip_special) return size_t(0);
  TokenBytes tb = token_bytes(t, id);
  uint8_t byte;
  if (f & kTokenByte) {   // "<0xXX>", checked at load
    auto hex = [](uint8_t c) { return uint8_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10); };
    byte = uint8_t(hex(tb.data[3]) << 4 | hex(tb.data[4]));
    tb = {&byte, 1};
  }
  uint32_t from = 0;
  if (at_start_ && (t.flags & kTokDummyPrefix) && tb.size && tb.data[0] == ' ') from = 1;
  at_start_ = false;
  size_t n = 0;
  for (uint32_t i = from; i < tb.size; i++)
    if (!put(tb.data[i], out, cap, n))
      return Error::make(ErrorCode::NoMemory).str("decode: output buffer of ").num(cap).str(" bytes is full");
  return n;
}

Result<size_t> Decoder::finish(char* out, size_t cap) {
  static constexpr uint8_t kReplacement[3] = {0xEF, 0xBF, 0xBD};
  size_t n = 0;
  if (n_pending_) {
    if (!emit(kReplacement, 3, out, cap, n))
      return Error::make(ErrorCode::NoMemory).str("decode: output buffer of ").num(cap).str(" bytes is full");
    n_pending_ = 0;
  }
  return n;
}

Result<size_t> decode(const Tokenizer& t, const uint32_t* ids, size_t n, char* out, size_t cap,
                      DecodeOptions opt) {
  Decoder d(t, opt);
  size_t used = 0;
  for (size_t i = 0; i < n; i++) used += TRY(d.push(ids[i], out + used, cap - used));
  used += TRY(d.finish(out + used, cap - used));
  return used;
}

}  // namespace llm
