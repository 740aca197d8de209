// Encoding and decoding with a loaded TOK.BIN (see llm_tokenizer.h for the
// map): binary searches in the file, the pre-tokenizer's split rules, the two
// merge loops, and the streaming UTF-8 decoder.
//
// Invariants load_tokenizer() (llm_tokenizer_load.cpp) establishes, which
// everything below relies on without checking again:
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

Error tok_error(ErrorCode c, const char* what) {
  return Error::make(c).str("TOK.BIN: ").str(what);
}

uint32_t word(const uint8_t* p, size_t i) { return load_u32(p + 4 * i); }

int compare_bytes(const uint8_t* a, uint32_t na, const uint8_t* b, uint32_t nb) {
  return detail::compare_concat(a, na, nullptr, 0, b, nb);
}
using detail::compare_concat;

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

// A piece starting with whitespace at s[pos]. With newlines_first (Qwen's
// "\s*[\r\n]+"): up to and including the run's last \r or \n, if it has one.
// Otherwise the whole run if it reaches the end of the text, else all but its
// last character (left to lead the next word: " ?\p{L}+"), unless that would
// leave nothing (then the run of one, by "\s+").
size_t space_piece_end(const Tokenizer& t, const uint8_t* s, size_t pos, size_t end, bool newlines_first) {
  uint32_t len;
  size_t p = pos, last = pos, after_newline = pos;
  while (p < end) {
    CharClass c = class_at(t, s, p, end, &len);
    if (c != CharClass::Space) break;
    if (s[p] == '\r' || s[p] == '\n') after_newline = p + 1;
    last = p;
    p += len;
  }
  if (newlines_first && after_newline > pos) return after_newline;
  if (p == end || last == pos) return p;
  return last;
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
  return space_piece_end(t, s, pos, end, false);
}

// Qwen's split rules (Qwen2; the Qwen3.5 style also counts \p{M} as letters):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} |
//   ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
size_t qwen_piece_end(const Tokenizer& t, const uint8_t* s, size_t pos, size_t end, bool marks) {
  if (s[pos] == '\'' && pos + 1 < end) {
    // case-insensitive, as Python's re: ASCII letters, and U+017F (long s) for s
    uint8_t c = s[pos + 1] | 0x20;
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return pos + 2;
    if (pos + 2 < end) {
      uint8_t d = s[pos + 2] | 0x20;
      if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return pos + 3;
      if (s[pos + 1] == 0xC5 && s[pos + 2] == 0xBF) return pos + 3;
    }
  }
  auto letter = [&](CharClass c) { return c == CharClass::Letter || (marks && c == CharClass::Mark); };
  auto other = [&](CharClass c) { return c != CharClass::Space && c != CharClass::Number && !letter(c); };
  uint32_t len0, len;
  CharClass c0 = class_at(t, s, pos, end, &len0);
  constexpr size_t kNone = ~size_t(0);
  size_t letters = kNone;   // where a run of letters starts, if rule 2 applies
  if (letter(c0)) {
    letters = pos;
  } else if (c0 != CharClass::Number && s[pos] != '\r' && s[pos] != '\n' && pos + len0 < end &&
             letter(class_at(t, s, pos + len0, end, &len))) {
    letters = pos + len0;
  }
  if (letters != kNone) {
    size_t p = letters;
    while (p < end && letter(class_at(t, s, p, end, &len))) p += len;
    return p;
  }
  if (c0 == CharClass::Number) return pos + len0;
  size_t start = pos;
  if (s[pos] == ' ' && pos + 1 < end && other(class_at(t, s, pos + 1, end, &len))) start = pos + 1;
  if (other(class_at(t, s, start, end, &len))) {
    size_t p = start;
    while (p < end && other(class_at(t, s, p, end, &len))) p += len;
    while (p < end && (s[p] == '\r' || s[p] == '\n')) p++;
    return p;
  }
  return space_piece_end(t, s, pos, end, true);
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

// Both encoders start from one token per byte (or character) and merge; the
// result may need far fewer slots than the start (" available": 10 bytes, 1
// token). They merge in place in the output when it has room for the start,
// else in this much scratch, copying out only the result: so a caller may
// size its buffer for the tokens it wants (a stop text of at most 8 tokens),
// not for the text's bytes.
constexpr uint32_t kMergeScratch = 64;

// Where a merge of at most `need` starting tokens runs, and its room
// (*limit): in place (o.ids + o.n) when the output has room for them, else
// in scratch when they fit there, else in place all the same (the caller
// stops at *limit: the text may start with fewer tokens than `need`).
uint32_t* merge_room(IdOut& o, size_t need, uint32_t* scratch, uint32_t* limit) {
  uint32_t room = o.cap - o.n;
  if (need > room && need <= kMergeScratch) {
    *limit = kMergeScratch;
    return scratch;
  }
  *limit = room;
  return o.ids + o.n;
}

// Appends the merged w[0..n) to the output (a no-op copy when in place).
ErrorOr<void, Error> emit_merged(IdOut& o, const uint32_t* w, uint32_t n) {
  if (w != o.ids + o.n) {
    if (n > o.cap - o.n) return no_room(o.cap);
    for (uint32_t k = 0; k < n; k++) o.ids[o.n + k] = w[k];
  }
  o.n += n;
  return {};
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
  uint32_t scratch[kMergeScratch], limit;
  uint32_t* w = merge_room(o, e - b, scratch, &limit);
  if (e - b > limit) return no_room(o.cap);   // one starting token per byte
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
  return emit_merged(o, w, n);
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
      size_t end = t.split == SplitRule::Gpt2     ? gpt2_piece_end(t, s, piece, q)
                   : t.split == SplitRule::Qwen2  ? qwen_piece_end(t, s, piece, q, false)
                   : t.split == SplitRule::Qwen35 ? qwen_piece_end(t, s, piece, q, true)
                                                  : q;
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
// Every round looks up every pair again, O(n^2 log vocab) as in llama2.c: a
// prompt of 1000 characters takes about 0.8 s in QEMU, 200 about 0.1 s.
Result<uint32_t> encode_scores(const Tokenizer& t, const uint8_t* s, size_t len, IdOut& o) {
  // At most one token per byte, plus the dummy prefix.
  uint32_t scratch[kMergeScratch], room;
  uint32_t* w = merge_room(o, len + 1, scratch, &room);
  uint32_t n = 0;
  if (len && (t.flags & kTokDummyPrefix)) {
    if (!room) return no_room(o.cap);
    uint32_t space = lookup(t, reinterpret_cast<const uint8_t*>(" "), 1, nullptr, 0);
    if (space == kNoToken) return tok_error(ErrorCode::BadValue, "flag dummy_prefix set but no \" \" token");
    w[n++] = space;
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
  TRY(emit_merged(o, w, n));
  return o.n;
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
