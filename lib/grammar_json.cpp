// JSON schema -> regex (grammar_json.h says which schemas).
//
// In this file: a small JSON parser into an array of nodes (JsonReader),
// the regex writer (RegexOut), integer ranges as regexes (int_range), and
// the schema walk (SchemaCompiler).
#include "grammar_json.h"
#include "grammar_regex.h"   // kMaxRepeat: the largest count a schema may ask for

namespace llm {
namespace {

constexpr uint32_t kNone = 0xFFFFFFFFu;
constexpr uint32_t kMaxJsonNesting = 32;   // of the schema text itself

Error schema_error(const char* reason, size_t at) {
  return Error::make(ErrorCode::BadValue).str("json-schema: ").str(reason).str(" at ").num(at);
}

enum class JKind : uint8_t { Object, Array, String, Number, True, False, Null };

// One JSON value of the schema text. String spans exclude the quotes.
struct JNode {
  JKind kind;
  uint32_t at, len;           // the value's text
  uint32_t key_at, key_len;   // its key, when it is an object member
  uint32_t first, next;       // children (Object, Array), sibling
};

class JsonReader {
 public:
  JsonReader(const char* s, size_t n, JNode* nodes) : s_(s), n_(n), nodes_(nodes) {}

  Result<uint32_t> parse() {
    uint32_t root = TRY(value(0));
    space();
    if (pos_ != n_) return schema_error("text after the schema", pos_);
    return root;
  }

 private:
  void space() {
    while (pos_ < n_ && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) pos_++;
  }
  Result<uint32_t> node(JKind k, size_t at) {
    if (n_nodes_ == kMaxSchemaNodes) return schema_error("too many values (more than 2048)", at);
    nodes_[n_nodes_] = JNode{k, uint32_t(at), 0, 0, 0, kNone, kNone};
    return n_nodes_++;
  }
  bool word(const char* w) {
    size_t i = 0;
    while (w[i] && pos_ + i < n_ && s_[pos_ + i] == w[i]) i++;
    if (w[i]) return false;
    pos_ += i;
    return true;
  }
  // A string's body (after the opening quote); pos_ ends after the closing quote.
  Result<uint32_t> string_body(uint32_t* len) {
    size_t start = pos_;
    while (pos_ < n_ && s_[pos_] != '"') {
      uint8_t c = uint8_t(s_[pos_]);
      if (c < 0x20) return schema_error("control character in a string", pos_);
      if (c == '\\') {
        pos_++;
        if (pos_ >= n_) break;
        char e = s_[pos_];
        if (e == 'u') return schema_error("\\u escapes are not supported", pos_ - 1);
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't')
          return schema_error("bad escape in a string", pos_ - 1);
      }
      pos_++;
    }
    if (pos_ >= n_) return schema_error("unterminated string", start - 1);
    *len = uint32_t(pos_ - start);
    pos_++;
    return uint32_t(start);
  }
  Result<uint32_t> value(uint32_t depth) {
    space();
    if (pos_ >= n_) return schema_error("expected a value", pos_);
    size_t at = pos_;
    char c = s_[pos_];
    if (c == '{' || c == '[') {
      if (depth >= kMaxJsonNesting) return schema_error("nested too deeply", at);
      bool object = c == '{';
      uint32_t id = TRY(node(object ? JKind::Object : JKind::Array, at));
      pos_++;
      space();
      uint32_t last = kNone;
      if (pos_ < n_ && s_[pos_] == (object ? '}' : ']')) {
        pos_++;
      } else {
        for (;;) {
          uint32_t key_at = 0, key_len = 0;
          if (object) {
            space();
            if (pos_ >= n_ || s_[pos_] != '"') return schema_error("expected a key", pos_);
            pos_++;
            key_at = TRY(string_body(&key_len));
            space();
            if (pos_ >= n_ || s_[pos_] != ':') return schema_error("expected ':'", pos_);
            pos_++;
          }
          uint32_t child = TRY(value(depth + 1));
          nodes_[child].key_at = key_at;
          nodes_[child].key_len = key_len;
          if (last == kNone) nodes_[id].first = child;
          else nodes_[last].next = child;
          last = child;
          space();
          if (pos_ < n_ && s_[pos_] == ',') {
            pos_++;
            continue;
          }
          if (pos_ < n_ && s_[pos_] == (object ? '}' : ']')) {
            pos_++;
            break;
          }
          return schema_error(object ? "expected ',' or '}'" : "expected ',' or ']'", pos_);
        }
      }
      nodes_[id].len = uint32_t(pos_ - at);
      return id;
    }
    if (c == '"') {
      pos_++;
      uint32_t len;
      uint32_t start = TRY(string_body(&len));
      uint32_t id = TRY(node(JKind::String, start));
      nodes_[id].len = len;
      return id;
    }
    if (word("true")) return node(JKind::True, at);
    if (word("false")) return node(JKind::False, at);
    if (word("null")) return node(JKind::Null, at);
    if (c == '-' || (c >= '0' && c <= '9')) {
      // JSON's number grammar: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?
      if (s_[pos_] == '-') pos_++;
      auto digits = [&] {
        size_t from = pos_;
        while (pos_ < n_ && s_[pos_] >= '0' && s_[pos_] <= '9') pos_++;
        return pos_ - from;
      };
      size_t int_start = pos_;
      size_t nd = digits();
      if (nd == 0 || (nd > 1 && s_[int_start] == '0')) return schema_error("bad number", at);
      if (pos_ < n_ && s_[pos_] == '.') {
        pos_++;
        if (digits() == 0) return schema_error("bad number", at);
      }
      if (pos_ < n_ && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
        pos_++;
        if (pos_ < n_ && (s_[pos_] == '+' || s_[pos_] == '-')) pos_++;
        if (digits() == 0) return schema_error("bad number", at);
      }
      uint32_t id = TRY(node(JKind::Number, at));
      nodes_[id].len = uint32_t(pos_ - at);
      return id;
    }
    return schema_error("expected a value", at);
  }

  const char* s_;
  size_t n_;
  size_t pos_ = 0;
  JNode* nodes_;
  uint32_t n_nodes_ = 0;
};

// The regex being written; `full` once it would pass cap.
struct RegexOut {
  char* p;
  size_t cap, n = 0;
  bool full = false;
  void chr(char c) {
    if (n < cap) p[n++] = c;
    else full = true;
  }
  void str(const char* s) {
    while (*s) chr(*s++);
  }
  void num(uint64_t v) {
    char t[24];
    int k = 0;
    do t[k++] = char('0' + v % 10), v /= 10;
    while (v);
    while (k) chr(t[--k]);
  }
  // Text matched literally: regex metacharacters escaped.
  void literal(const char* s, size_t len) {
    for (size_t i = 0; i < len; i++) {
      char c = s[i];
      for (const char* m = "\\.^$|?*+()[]{}"; *m; m++)
        if (c == *m) {
          chr('\\');
          break;
        }
      chr(c);
    }
  }
};

// ---- integers in a range, as a regex over decimal digits

uint32_t n_digits(uint64_t v) {
  uint32_t d = 1;
  while (v >= 10) v /= 10, d++;
  return d;
}
uint64_t pow10(uint32_t k) {
  uint64_t p = 1;
  while (k--) p *= 10;
  return p;
}

// lo..hi, both with `len` digits (as strings lo[], hi[]; lo <= hi).
void same_length_range(RegexOut& o, const char* lo, const char* hi, uint32_t len) {
  if (len == 0) return;
  auto digit_range = [&](char a, char b) {
    if (a == b) {
      o.chr(a);
      return;
    }
    o.chr('[');
    o.chr(a);
    o.chr('-');
    o.chr(b);
    o.chr(']');
  };
  auto any_digits = [&](uint32_t k) {
    if (k == 0) return;
    o.str("[0-9]");
    if (k > 1) o.chr('{'), o.num(k), o.chr('}');
  };
  if (lo[0] == hi[0]) {
    o.chr(lo[0]);
    same_length_range(o, lo + 1, hi + 1, len - 1);
    return;
  }
  bool lo_zeros = true, hi_nines = true;
  for (uint32_t i = 1; i < len; i++) lo_zeros &= lo[i] == '0', hi_nines &= hi[i] == '9';
  char nines[20], zeros[20];
  for (uint32_t i = 0; i < 20; i++) nines[i] = '9', zeros[i] = '0';
  o.chr('(');
  bool first = true;
  char mid_lo = lo_zeros ? lo[0] : char(lo[0] + 1);
  char mid_hi = hi_nines ? hi[0] : char(hi[0] - 1);
  if (!lo_zeros) {   // lo[0] followed by at least lo's tail
    o.chr(lo[0]);
    same_length_range(o, lo + 1, nines, len - 1);
    first = false;
  }
  if (mid_lo <= mid_hi) {   // any tail
    if (!first) o.chr('|');
    digit_range(mid_lo, mid_hi);
    any_digits(len - 1);
    first = false;
  }
  if (!hi_nines) {   // hi[0] followed by at most hi's tail
    if (!first) o.chr('|');
    o.chr(hi[0]);
    same_length_range(o, zeros, hi + 1, len - 1);
  }
  o.chr(')');
}

// Non-negative integers a..b (b = UINT64_MAX: no upper bound), written as
// JSON writes them (no leading zeros).
void nonneg_range(RegexOut& o, uint64_t a, uint64_t b) {
  bool unbounded = b == UINT64_MAX;
  uint32_t la = n_digits(a), lb = unbounded ? la : n_digits(b);
  o.chr('(');
  for (uint32_t len = la; len <= lb; len++) {
    uint64_t lo = len == la ? a : pow10(len - 1);
    uint64_t hi = (len == lb && !unbounded) ? b : pow10(len) - 1;
    char ls[21], hs[21];
    for (uint32_t i = 0; i < len; i++) {
      ls[len - 1 - i] = char('0' + lo / pow10(i) % 10);
      hs[len - 1 - i] = char('0' + hi / pow10(i) % 10);
    }
    if (len != la) o.chr('|');
    same_length_range(o, ls, hs, len);
  }
  if (unbounded) {   // every longer number
    o.str("|[1-9][0-9]{");
    o.num(la);
    o.str(",}");
  }
  o.chr(')');
}

constexpr int64_t kIntLimit = 999999999999999999;   // 18 digits: |bounds| above are refused

void int_range(RegexOut& o, bool has_lo, int64_t lo, bool has_hi, int64_t hi) {
  bool negatives = !has_lo || lo < 0, nonnegatives = !has_hi || hi >= 0;
  o.chr('(');
  if (negatives) {
    // -m for m in [max(1, -hi), -lo]
    uint64_t m_lo = has_hi && hi < 0 ? uint64_t(-hi) : 1;
    uint64_t m_hi = has_lo ? uint64_t(-lo) : UINT64_MAX;
    o.chr('-');
    nonneg_range(o, m_lo, m_hi);
  }
  if (negatives && nonnegatives) o.chr('|');
  if (nonnegatives) nonneg_range(o, has_lo && lo > 0 ? uint64_t(lo) : 0, has_hi ? uint64_t(hi) : UINT64_MAX);
  o.chr(')');
}

// ---- decimal numbers between whole-number bounds
//
// A bounded `number` is written without an exponent: -?I(.F)? with I as JSON
// writes it. Its value lies in [I, I+1) (or the mirror image below zero), so
// a bound B splits the texts by I alone, except at I = B itself, where the
// fraction decides: "B", "B.0", "B.00" are exactly B; "B.05" is above it. Both
// "the fraction is all zeros" and "it has a digit above zero" are regular, so
// whole-number bounds (inclusive or exclusive) stay exact. A bound like 2.5
// would need the same split one digit further for every fraction digit of the
// bound; it is refused (SchemaCompiler::number_bound).

// One end of an interval; `open` for exclusiveMinimum/exclusiveMaximum.
struct Bound {
  bool present = false;
  int64_t v = 0;
  bool open = false;
};

// Texts I(.F)? (no sign) whose value m lies between a and b: a.v <= m (a.v < m
// when a.open), m <= b.v (m < b.v when b.open; no b: unbounded). a.v >= 0 and
// the interval is not empty.
void magnitude_range(RegexOut& o, Bound a, Bound b) {
  bool first = true;
  auto alt = [&] {
    if (!first) o.chr('|');
    first = false;
  };
  uint64_t lo = uint64_t(a.v);
  o.chr('(');
  if (a.open && (!b.present || uint64_t(b.v) > lo)) {   // I = a and a fraction above zero
    alt();
    o.num(lo);
    o.str("\\.[0-9]*[1-9][0-9]*");
  }
  uint64_t first_any = a.open ? lo + 1 : lo;   // integer parts with any fraction
  if (!b.present) {
    alt();
    nonneg_range(o, first_any, UINT64_MAX);
    o.str("(\\.[0-9]+)?");
  } else if (uint64_t(b.v) >= 1 && first_any <= uint64_t(b.v) - 1) {
    alt();
    nonneg_range(o, first_any, uint64_t(b.v) - 1);
    o.str("(\\.[0-9]+)?");
  }
  if (b.present && !b.open) {   // I = b and a fraction of zeros only
    alt();
    o.num(uint64_t(b.v));
    o.str("(\\.0+)?");
  }
  o.chr(')');
}

// Numbers v with lo <= v <= hi (each end inclusive, exclusive or absent; the
// interval is not empty). Negative texts have a value below zero ("-0" and
// "-0.0" are not produced), so their magnitude lies in (0, ...].
void number_range(RegexOut& o, Bound lo, Bound hi) {
  bool nonnegatives = !hi.present || hi.v > 0 || (hi.v == 0 && !hi.open);
  bool negatives = !lo.present || lo.v < 0;
  o.chr('(');
  if (negatives) {
    Bound m_lo = hi.present && hi.v < 0 ? Bound{true, -hi.v, hi.open} : Bound{true, 0, true};
    Bound m_hi = lo.present ? Bound{true, -lo.v, lo.open} : Bound{};
    o.chr('-');
    magnitude_range(o, m_lo, m_hi);
  }
  if (negatives && nonnegatives) o.chr('|');
  if (nonnegatives) {
    Bound m_lo = lo.present && lo.v >= 0 ? lo : Bound{true, 0, false};
    magnitude_range(o, m_lo, hi);
  }
  o.chr(')');
}

// ---- the schema walk

class SchemaCompiler {
 public:
  SchemaCompiler(const char* s, const JNode* nodes, RegexOut& o) : s_(s), nodes_(nodes), o_(o) {}

  Result<bool> schema(uint32_t id, uint32_t depth) {
    const JNode& n = nodes_[id];
    if (n.kind != JKind::Object) return schema_error("a schema must be an object", where(n));
    Keys k;
    for (uint32_t c = n.first; c != kNone; c = nodes_[c].next) TRY(key(c, k));
    if (k.enum_ != kNone || k.const_ != kNone) {
      if (k.enum_ != kNone && nodes_[k.enum_].kind != JKind::Array) return schema_error("enum must be an array", where(nodes_[k.enum_]));
      o_.chr('(');
      if (k.const_ != kNone) {
        TRY(literal_value(k.const_));
      } else {
        if (nodes_[k.enum_].first == kNone) return schema_error("enum is empty", where(nodes_[k.enum_]));
        for (uint32_t c = nodes_[k.enum_].first; c != kNone; c = nodes_[c].next) {
          if (c != nodes_[k.enum_].first) o_.chr('|');
          TRY(literal_value(c));
        }
      }
      o_.chr(')');
      return true;
    }
    if (k.any_of != kNone) {
      const JNode& a = nodes_[k.any_of];
      if (a.kind != JKind::Array || a.first == kNone) return schema_error("anyOf must be a non-empty array", where(a));
      o_.chr('(');
      for (uint32_t c = a.first; c != kNone; c = nodes_[c].next) {
        if (c != a.first) o_.chr('|');
        TRY(schema(c, depth));
      }
      o_.chr(')');
      return true;
    }
    if (k.type == kNone) return schema_error("a schema needs \"type\", \"enum\", \"const\" or \"anyOf\"", where(n));
    const JNode& t = nodes_[k.type];
    if (t.kind == JKind::String) return typed(t, k, depth);
    if (t.kind != JKind::Array || t.first == kNone) return schema_error("type must be a name or a list of names", where(t));
    o_.chr('(');
    for (uint32_t c = t.first; c != kNone; c = nodes_[c].next) {
      if (nodes_[c].kind != JKind::String) return schema_error("type must be a name or a list of names", where(nodes_[c]));
      if (c != t.first) o_.chr('|');
      TRY(typed(nodes_[c], k, depth));
    }
    o_.chr(')');
    return true;
  }

 private:
  // Where an error points: a value's first byte (a string's opening quote).
  size_t where(const JNode& n) const { return n.kind == JKind::String ? n.at - 1 : n.at; }

  struct Keys {
    uint32_t type = kNone, properties = kNone, required = kNone, items = kNone, enum_ = kNone, const_ = kNone,
             any_of = kNone;
    uint32_t min_length = kNone, max_length = kNone, minimum = kNone, maximum = kNone, ex_minimum = kNone,
             ex_maximum = kNone, min_items = kNone, max_items = kNone;
  };

  bool is(const JNode& n, const char* w) const {   // a string (or key) span equals w
    return span_is(n.at, n.len, w);
  }
  bool span_is(uint32_t at, uint32_t len, const char* w) const {
    uint32_t i = 0;
    for (; i < len && w[i]; i++)
      if (s_[at + i] != w[i]) return false;
    return i == len && w[i] == 0;
  }

  Result<bool> key(uint32_t c, Keys& k) {
    const JNode& n = nodes_[c];
    struct Known {
      const char* name;
      uint32_t Keys::*field;
    } known[] = {{"type", &Keys::type},           {"properties", &Keys::properties},
                 {"required", &Keys::required},   {"items", &Keys::items},
                 {"enum", &Keys::enum_},          {"const", &Keys::const_},
                 {"anyOf", &Keys::any_of},        {"minLength", &Keys::min_length},
                 {"maxLength", &Keys::max_length}, {"minimum", &Keys::minimum},
                 {"maximum", &Keys::maximum},     {"exclusiveMinimum", &Keys::ex_minimum},
                 {"exclusiveMaximum", &Keys::ex_maximum}, {"minItems", &Keys::min_items},
                 {"maxItems", &Keys::max_items}};
    for (const Known& kn : known)
      if (span_is(n.key_at, n.key_len, kn.name)) {
        k.*kn.field = c;
        return true;
      }
    const char* ignored[] = {"title", "description", "default", "examples", "$schema", "$id", "additionalProperties"};
    for (const char* w : ignored)
      if (span_is(n.key_at, n.key_len, w)) return true;
    return schema_error("unsupported keyword", n.key_at - 1);
  }

  // A whole number in [-kIntLimit, kIntLimit] from a Number node.
  Result<int64_t> whole(uint32_t id, const char* what) const {
    const JNode& n = nodes_[id];
    if (n.kind != JKind::Number) return schema_error(what, where(n));
    bool neg = s_[n.at] == '-';
    int64_t v = 0;
    for (uint32_t i = neg ? 1 : 0; i < n.len; i++) {
      char c = s_[n.at + i];
      if (c < '0' || c > '9' || v > kIntLimit / 10) return schema_error(what, where(n));
      v = v * 10 + (c - '0');
    }
    if (v > kIntLimit) return schema_error(what, where(n));
    return neg ? -v : v;
  }
  Result<uint32_t> count(uint32_t id, uint32_t max) const {
    if (id == kNone) return uint32_t(0);
    int64_t v = TRY(whole(id, "expected a whole number"));
    if (v < 0 || v > int64_t(max)) return schema_error("count out of range (0..1000)", where(nodes_[id]));
    return uint32_t(v);
  }

  // One end of a number's interval from its inclusive and exclusive keywords
  // (both given: the tighter one). Bounds must be whole numbers.
  Result<Bound> number_bound(uint32_t inclusive, uint32_t exclusive, const char* inclusive_error,
                             const char* exclusive_error, bool upper) const {
    Bound b;
    if (inclusive != kNone) b = Bound{true, TRY(whole(inclusive, inclusive_error)), false};
    if (exclusive != kNone) {
      int64_t v = TRY(whole(exclusive, exclusive_error));
      if (!b.present || (upper ? v <= b.v : v >= b.v)) b = Bound{true, v, true};
    }
    return b;
  }

  Result<bool> literal_value(uint32_t id) {
    const JNode& v = nodes_[id];
    switch (v.kind) {
      case JKind::String:
        o_.chr('"');
        o_.literal(s_ + v.at, v.len);   // the schema's own escapes, which are valid JSON
        o_.chr('"');
        return true;
      case JKind::Number:
        o_.literal(s_ + v.at, v.len);
        return true;
      case JKind::True: o_.str("true"); return true;
      case JKind::False: o_.str("false"); return true;
      case JKind::Null: o_.str("null"); return true;
      default: return schema_error("enum and const values must be strings, numbers, booleans or null", where(v));
    }
  }

  // `len`..`max` repeats of the regex `unit` (max kNone: unbounded).
  void repeat(uint32_t min, uint32_t max) {
    o_.chr('{');
    o_.num(min);
    o_.chr(',');
    if (max != kNone) o_.num(max);
    o_.chr('}');
  }

  Result<bool> typed(const JNode& t, const Keys& k, uint32_t depth) {
    if (is(t, "string")) {
      uint32_t min = TRY(count(k.min_length, kMaxRepeat));
      uint32_t max = k.max_length == kNone ? kNone : TRY(count(k.max_length, kMaxRepeat));
      if (max != kNone && min > max) return schema_error("minLength above maxLength", where(t));
      // One character: anything but " \ and controls, or a short escape.
      o_.str("\"([^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\/bfnrt])");
      repeat(min, max);
      o_.chr('"');
      return true;
    }
    if (is(t, "integer")) {
      bool has_lo = false, has_hi = false;
      int64_t lo = 0, hi = 0;
      if (k.minimum != kNone) has_lo = true, lo = TRY(whole(k.minimum, "minimum must be a whole number"));
      if (k.ex_minimum != kNone) {
        int64_t v = TRY(whole(k.ex_minimum, "exclusiveMinimum must be a whole number")) + 1;
        if (!has_lo || v > lo) lo = v;
        has_lo = true;
      }
      if (k.maximum != kNone) has_hi = true, hi = TRY(whole(k.maximum, "maximum must be a whole number"));
      if (k.ex_maximum != kNone) {
        int64_t v = TRY(whole(k.ex_maximum, "exclusiveMaximum must be a whole number")) - 1;
        if (!has_hi || v < hi) hi = v;
        has_hi = true;
      }
      if (has_lo && has_hi && lo > hi) return schema_error("minimum above maximum", where(t));
      int_range(o_, has_lo, lo, has_hi, hi);
      return true;
    }
    if (is(t, "number")) {
      if (k.minimum == kNone && k.maximum == kNone && k.ex_minimum == kNone && k.ex_maximum == kNone) {
        o_.str("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+\\-]?[0-9]+)?");
        return true;
      }
      // Bounded: whole-number bounds only, and the output is plain decimal
      // (no exponent), so the value's integer part decides almost everything
      // (number_range above).
      Bound lo = TRY(number_bound(k.minimum, k.ex_minimum, "minimum on a number must be a whole number",
                                          "exclusiveMinimum on a number must be a whole number", false));
      Bound hi = TRY(number_bound(k.maximum, k.ex_maximum, "maximum on a number must be a whole number",
                                          "exclusiveMaximum on a number must be a whole number", true));
      if (lo.present && hi.present && (lo.v > hi.v || (lo.v == hi.v && (lo.open || hi.open))))
        return schema_error("minimum above maximum", where(t));
      number_range(o_, lo, hi);
      return true;
    }
    if (is(t, "boolean")) {
      o_.str("(true|false)");
      return true;
    }
    if (is(t, "null")) {
      o_.str("null");
      return true;
    }
    if (is(t, "object")) {
      if (depth + 1 > kMaxSchemaDepth) return schema_error("objects and arrays nested deeper than 4", where(t));
      o_.str("\\{");
      if (k.properties != kNone) {
        const JNode& p = nodes_[k.properties];
        if (p.kind != JKind::Object) return schema_error("properties must be an object", where(p));
        for (uint32_t c = p.first; c != kNone; c = nodes_[c].next) {
          for (uint32_t d = p.first; d != c; d = nodes_[d].next)
            if (nodes_[d].key_len == nodes_[c].key_len && span_eq(nodes_[d].key_at, nodes_[c].key_at, nodes_[c].key_len))
              return schema_error("property listed twice", nodes_[c].key_at - 1);
          if (c != p.first) o_.chr(',');
          o_.chr('"');
          o_.literal(s_ + nodes_[c].key_at, nodes_[c].key_len);
          o_.str("\":");
          TRY(schema(c, depth + 1));
        }
      }
      if (k.required != kNone) {
        const JNode& r = nodes_[k.required];
        if (r.kind != JKind::Array) return schema_error("required must be an array", where(r));
        for (uint32_t c = r.first; c != kNone; c = nodes_[c].next) {
          bool found = false;
          if (nodes_[c].kind == JKind::String && k.properties != kNone)
            for (uint32_t d = nodes_[k.properties].first; d != kNone && !found; d = nodes_[d].next)
              found = nodes_[d].key_len == nodes_[c].len && span_eq(nodes_[d].key_at, nodes_[c].at, nodes_[c].len);
          if (!found) return schema_error("required names a property that is not listed", where(nodes_[c]));
        }
      }
      o_.str("\\}");
      return true;
    }
    if (is(t, "array")) {
      if (depth + 1 > kMaxSchemaDepth) return schema_error("objects and arrays nested deeper than 4", where(t));
      if (k.items == kNone) return schema_error("an array needs \"items\"", where(t));
      uint32_t min = TRY(count(k.min_items, kMaxRepeat));
      uint32_t max = k.max_items == kNone ? kNone : TRY(count(k.max_items, kMaxRepeat));
      if (max != kNone && min > max) return schema_error("minItems above maxItems", where(t));
      o_.str("\\[");
      if (max != 0) {
        if (min == 0) o_.chr('(');
        o_.chr('(');
        TRY(schema(k.items, depth + 1));
        o_.str(")(,(");
        TRY(schema(k.items, depth + 1));
        o_.str("))");
        repeat(min == 0 ? 0 : min - 1, max == kNone ? kNone : max - 1);
        if (min == 0) o_.str(")?");
      }
      o_.str("\\]");
      return true;
    }
    return schema_error("unknown type", where(t));
  }

  bool span_eq(uint32_t a, uint32_t b, uint32_t len) const {
    for (uint32_t i = 0; i < len; i++)
      if (s_[a + i] != s_[b + i]) return false;
    return true;
  }

  const char* s_;
  const JNode* nodes_;
  RegexOut& o_;
};

}  // namespace

Result<size_t> json_schema_to_regex(const char* schema, size_t len, Arena& scratch, char* out, size_t cap) {
  if (len > kMaxSchemaBytes)
    return Error::make(ErrorCode::BadValue).str("json-schema: longer than ").num(kMaxSchemaBytes).str(" bytes");
  size_t mark = scratch.used;
  auto* nodes = scratch.take<JNode>(kMaxSchemaNodes);
  if (!nodes) return Error::make(ErrorCode::NoMemory).str("json-schema: compiler scratch memory too small");
  JsonReader reader(schema, len, nodes);
  auto root = reader.parse();
  if (root.is_error()) {
    scratch.used = mark;
    return root.error();
  }
  RegexOut o{out, cap};
  SchemaCompiler c(schema, nodes, o);
  auto done = c.schema(root.value(), 0);
  scratch.used = mark;
  if (done.is_error()) return done.error();
  if (o.full) return Error::make(ErrorCode::BadValue).str("json-schema: the regex would be longer than ").num(cap).str(" bytes");
  return o.n;
}

}  // namespace llm
