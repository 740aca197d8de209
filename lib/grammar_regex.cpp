// The regex parser and Thompson's construction (grammar_regex.h says what
// the subset is). Two steps, so a repeat {m,n} can copy its operand:
//   1. Parser: the pattern -> a parse tree in an array (AstNode), children
//      as doubly linked sibling lists (a long concatenation is a list, not
//      a deep tree, so the recursion depth follows the parentheses only);
//   2. Builder: the tree -> NFA states, built backwards: each node is
//      compiled knowing the state that follows it, so no fragment ever has
//      dangling exits to patch.
#include "grammar_regex.h"

namespace llm {
namespace {

enum class AstKind : uint8_t { Empty, Set, Concat, Alt, Repeat };
constexpr uint32_t kNone = 0xFFFFFFFFu;
constexpr uint32_t kInfinite = 0xFFFFFFFFu;

struct AstNode {
  AstKind kind;
  uint16_t set;          // Set: index into Nfa::sets
  uint32_t min, max;     // Repeat: bounds, max kInfinite for * and +
  uint32_t first, last;  // Concat, Alt: children; Repeat: first == last == operand
  uint32_t prev, next;   // siblings under the same parent
};

Error regex_error(const char* reason, size_t at) {
  return Error::make(ErrorCode::BadValue).str("regex: ").str(reason).str(" at ").num(at);
}

// The multi-byte UTF-8 characters as byte-range sequences (Unicode 15,
// table 3-7 "Well-Formed UTF-8 Byte Sequences"), surrogates excluded.
struct Utf8Seq {
  uint8_t n;
  uint8_t lo[4], hi[4];
};
constexpr Utf8Seq kUtf8Multi[] = {
    {2, {0xC2, 0x80}, {0xDF, 0xBF}},
    {3, {0xE0, 0xA0, 0x80}, {0xE0, 0xBF, 0xBF}},
    {3, {0xE1, 0x80, 0x80}, {0xEC, 0xBF, 0xBF}},
    {3, {0xED, 0x80, 0x80}, {0xED, 0x9F, 0xBF}},
    {3, {0xEE, 0x80, 0x80}, {0xEF, 0xBF, 0xBF}},
    {4, {0xF0, 0x90, 0x80, 0x80}, {0xF0, 0xBF, 0xBF, 0xBF}},
    {4, {0xF1, 0x80, 0x80, 0x80}, {0xF3, 0xBF, 0xBF, 0xBF}},
    {4, {0xF4, 0x80, 0x80, 0x80}, {0xF4, 0x8F, 0xBF, 0xBF}},
};

// What an escape stands for: one byte, an ASCII set (\d \w \s), or "any
// character except an ASCII set" (\D \W \S).
struct Escape {
  enum Kind : uint8_t { Byte, Set, NotSet } kind;
  uint8_t byte;
  ByteSet set;
};

class Parser {
 public:
  Parser(const char* p, size_t n, AstNode* nodes, Nfa& nfa)
      : p_(reinterpret_cast<const uint8_t*>(p)), n_(n), nodes_(nodes), nfa_(nfa) {}

  Result<uint32_t> parse() {
    size_t from = 0;
    if (n_ > 0 && p_[0] == '^') pos_ = from = 1;
    // A trailing unescaped $ is the anchor every pattern has anyway.
    if (n_ > from && p_[n_ - 1] == '$' && !escaped(n_ - 1)) n_--;
    uint32_t root = TRY(parse_alt(0));
    if (pos_ < n_) return regex_error("unbalanced )", pos_);
    return root;
  }

 private:
  bool escaped(size_t i) const {
    size_t k = 0;
    while (i > k && p_[i - 1 - k] == '\\') k++;
    return k % 2 == 1;
  }

  Result<uint32_t> node(AstKind kind) {
    if (n_nodes_ == kMaxAstNodes) return regex_error("too large (more than 8192 parse nodes)", pos_);
    AstNode& a = nodes_[n_nodes_];
    a = AstNode{kind, 0, 0, 0, kNone, kNone, kNone, kNone};
    return n_nodes_++;
  }
  void add_child(uint32_t parent, uint32_t child) {
    AstNode& p = nodes_[parent];
    nodes_[child].prev = p.last;
    nodes_[child].next = kNone;
    if (p.last == kNone) p.first = child;
    else nodes_[p.last].next = child;
    p.last = child;
  }
  Result<uint32_t> set_node(const ByteSet& s) {
    uint32_t i = 0;
    while (i < nfa_.n_sets && !nfa_.sets[i].same(s)) i++;
    if (i == nfa_.n_sets) {
      if (i == kMaxByteSets) return regex_error("too many different character sets (more than 256)", pos_);
      nfa_.sets[nfa_.n_sets++] = s;
    }
    uint32_t n = TRY(node(AstKind::Set));
    nodes_[n].set = uint16_t(i);
    return n;
  }
  Result<uint32_t> byte_node(uint8_t b) {
    ByteSet s{};
    s.add(b);
    return set_node(s);
  }
  // One character: an ASCII byte of `ascii`, or any multi-byte UTF-8 character.
  Result<uint32_t> any_char_node(const ByteSet& ascii) {
    uint32_t alt = TRY(node(AstKind::Alt));
    bool any_ascii = false;
    for (int i = 0; i < 4; i++) any_ascii |= ascii.w[i] != 0;
    if (any_ascii) add_child(alt, TRY(set_node(ascii)));
    for (const Utf8Seq& u : kUtf8Multi) {
      uint32_t seq = TRY(node(AstKind::Concat));
      for (int k = 0; k < u.n; k++) {
        ByteSet s{};
        s.add_range(u.lo[k], u.hi[k]);
        add_child(seq, TRY(set_node(s)));
      }
      add_child(alt, seq);
    }
    return alt;
  }

  Result<uint32_t> parse_alt(uint32_t depth) {
    uint32_t alt = TRY(node(AstKind::Alt));
    for (;;) {
      add_child(alt, TRY(parse_concat(depth)));
      if (pos_ < n_ && p_[pos_] == '|') {
        pos_++;
        continue;
      }
      break;
    }
    return alt;
  }

  Result<uint32_t> parse_concat(uint32_t depth) {
    uint32_t cat = TRY(node(AstKind::Concat));
    while (pos_ < n_ && p_[pos_] != '|' && p_[pos_] != ')') add_child(cat, TRY(parse_repeat(depth)));
    return cat;
  }

  static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

  // {m} {m,} {m,n} {,n}; pos_ is at '{'.
  Result<bool> parse_braces(uint32_t* min, uint32_t* max) {
    size_t at = pos_++;
    auto number = [&](uint32_t* v) {
      bool any = false;
      uint64_t x = 0;
      while (pos_ < n_ && is_digit(p_[pos_])) {
        x = x * 10 + uint64_t(p_[pos_++] - '0');
        if (x > kMaxRepeat + 1) x = kMaxRepeat + 1;
        any = true;
      }
      *v = uint32_t(x);
      return any;
    };
    bool has_min = number(min);
    if (!has_min) *min = 0;
    if (pos_ < n_ && p_[pos_] == ',') {
      pos_++;
      if (!number(max)) *max = kInfinite;
      else if (!has_min && *max == 0) return regex_error("bad repeat {,0}", at);
    } else {
      if (!has_min) return regex_error("bad repeat {", at);
      *max = *min;
    }
    if (pos_ >= n_ || p_[pos_] != '}') return regex_error("bad repeat {", at);
    pos_++;
    if (*min > kMaxRepeat || (*max != kInfinite && *max > kMaxRepeat))
      return regex_error("repeat count above 1000", at);
    if (*max != kInfinite && *min > *max) return regex_error("bad repeat {m,n} with m > n", at);
    return true;
  }

  Result<uint32_t> parse_repeat(uint32_t depth) {
    uint32_t atom = TRY(parse_atom(depth));
    bool repeated = false;
    while (pos_ < n_) {
      uint8_t c = p_[pos_];
      uint32_t min, max;
      if (c == '*') min = 0, max = kInfinite;
      else if (c == '+') min = 1, max = kInfinite;
      else if (c == '?') min = 0, max = 1;
      else if (c != '{') break;
      if (repeated) return regex_error("multiple repeat", pos_);
      if (c == '{') TRY(parse_braces(&min, &max));
      else pos_++;
      uint32_t r = TRY(node(AstKind::Repeat));
      nodes_[r].min = min;
      nodes_[r].max = max;
      add_child(r, atom);
      atom = r;
      repeated = true;
    }
    return atom;
  }

  // After a backslash (pos_ at the escaped character).
  Result<Escape> parse_escape() {
    if (pos_ >= n_) return regex_error("trailing \\", pos_ - 1);
    uint8_t e = p_[pos_++];
    Escape out{Escape::Byte, 0, {}};
    auto simple = [&](uint8_t b) { out.byte = b; return out; };
    switch (e) {
      case 'n': return simple('\n');
      case 't': return simple('\t');
      case 'r': return simple('\r');
      case 'f': return simple('\f');
      case 'v': return simple('\v');
      case 'd': case 'D':
        out.set.add_range('0', '9');
        break;
      case 'w': case 'W':
        out.set.add_range('a', 'z');
        out.set.add_range('A', 'Z');
        out.set.add_range('0', '9');
        out.set.add('_');
        break;
      case 's': case 'S':
        out.set.add(' ');
        out.set.add_range('\t', '\r');   // \t \n \v \f \r
        break;
      case 'C':   // one byte, any value: PCRE's "one code unit" (\C* allows every output)
        out.set.add_range(0, 255);
        out.kind = Escape::Set;
        return out;
      case 'x': {
        auto hex = [](uint8_t c) -> int {
          if (c >= '0' && c <= '9') return c - '0';
          if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
          return -1;
        };
        if (pos_ + 2 > n_ || hex(p_[pos_]) < 0 || hex(p_[pos_ + 1]) < 0)
          return regex_error("\\x needs two hex digits", pos_ - 2);
        uint8_t b = uint8_t(hex(p_[pos_]) << 4 | hex(p_[pos_ + 1]));
        if (b > 0x7f) return regex_error("\\x above 7f (write the character itself)", pos_ - 2);
        pos_ += 2;
        return simple(b);
      }
      default:
        if (e >= 0x80 || (e >= '0' && e <= '9') || ((e | 0x20) >= 'a' && (e | 0x20) <= 'z'))
          return regex_error("unknown escape", pos_ - 2);
        return simple(e);   // escaped punctuation: itself
    }
    out.kind = (e == 'D' || e == 'W' || e == 'S') ? Escape::NotSet : Escape::Set;
    return out;
  }

  static ByteSet ascii_complement(const ByteSet& s) {
    ByteSet c{};
    for (uint32_t b = 0; b < 128; b++)
      if (!s.has(b)) c.add(b);
    return c;
  }

  // [...] or [^...]; pos_ is at '['.
  Result<uint32_t> parse_class() {
    size_t open = pos_++;
    bool negate = pos_ < n_ && p_[pos_] == '^';
    if (negate) pos_++;
    ByteSet s{};
    bool first = true;
    // One member byte (literal or escape), or a set escape (*is_set).
    auto member = [&](uint8_t* b, bool* is_set) -> Result<bool> {
      *is_set = false;
      uint8_t c = p_[pos_];
      if (c >= 0x80) return regex_error("non-ASCII character in a class", pos_);
      pos_++;
      if (c != '\\') {
        *b = c;
        return true;
      }
      Escape e = TRY(parse_escape());
      if (e.kind == Escape::NotSet) return regex_error("\\D \\W \\S inside a class", pos_ - 2);
      if (e.kind == Escape::Set && e.set.has(0xFF)) return regex_error("\\C inside a class", pos_ - 2);
      if (e.kind == Escape::Set) {
        for (int i = 0; i < 8; i++) s.w[i] |= e.set.w[i];
        *is_set = true;
      }
      *b = e.byte;
      return true;
    };
    for (;;) {
      if (pos_ >= n_) return regex_error("unterminated [", open);
      if (p_[pos_] == ']' && !first) {
        pos_++;
        break;
      }
      first = false;
      size_t at = pos_;
      uint8_t lo, hi;
      bool is_set;
      TRY(member(&lo, &is_set));
      if (is_set) continue;
      if (pos_ + 1 < n_ && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        pos_++;
        TRY(member(&hi, &is_set));
        if (is_set) return regex_error("bad range (a set as its end)", at);
        if (hi < lo) return regex_error("bad range (end before start)", at);
        s.add_range(lo, hi);
      } else {
        s.add(lo);
      }
    }
    if (negate) return any_char_node(ascii_complement(s));
    return set_node(s);
  }

  Result<uint32_t> parse_atom(uint32_t depth) {
    size_t at = pos_;
    uint8_t c = p_[pos_];
    switch (c) {
      case '(': {
        if (depth + 1 > kMaxNesting) return regex_error("nesting deeper than 32", at);
        pos_++;
        uint32_t inner = TRY(parse_alt(depth + 1));
        if (pos_ >= n_ || p_[pos_] != ')') return regex_error("unbalanced (", at);
        pos_++;
        return inner;
      }
      case '*': case '+': case '?': case '{':
        return regex_error("nothing to repeat", at);
      case '[':
        return parse_class();
      case '.': {   // any character but a newline, as in Python without DOTALL
        pos_++;
        ByteSet newline{};
        newline.add('\n');
        return any_char_node(ascii_complement(newline));
      }
      case '\\': {
        pos_++;
        Escape e = TRY(parse_escape());
        if (e.kind == Escape::Byte) return byte_node(e.byte);
        if (e.kind == Escape::Set) return set_node(e.set);
        return any_char_node(ascii_complement(e.set));
      }
      case '^': case '$':
        return regex_error("^ and $ only at the ends (the whole output is matched)", at);
      default:
        break;
    }
    if (c < 0x80) {
      pos_++;
      return byte_node(c);
    }
    // A literal multi-byte character: its bytes, as one atom (so a repeat
    // after it repeats the character, not its last byte).
    uint32_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || c > 0xF4 || pos_ + len > n_) return regex_error("invalid UTF-8", at);
    for (uint32_t k = 1; k < len; k++)
      if ((p_[pos_ + k] & 0xC0) != 0x80) return regex_error("invalid UTF-8", at);
    uint32_t seq = TRY(node(AstKind::Concat));
    for (uint32_t k = 0; k < len; k++) add_child(seq, TRY(byte_node(p_[pos_ + k])));
    pos_ += len;
    return seq;
  }

  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  AstNode* nodes_;
  uint32_t n_nodes_ = 0;
  Nfa& nfa_;
};

class Builder {
 public:
  Builder(const AstNode* nodes, Nfa& nfa) : nodes_(nodes), nfa_(nfa) {}

  Result<uint32_t> add(NfaKind kind, uint16_t set, uint32_t out1, uint32_t out2) {
    if (nfa_.n_states == kMaxNfaStates)
      return Error::make(ErrorCode::BadValue).str("regex: too large (more than 32768 NFA states; lower the repeat counts)");
    nfa_.states[nfa_.n_states] = NfaState{kind, set, out1, out2};
    return nfa_.n_states++;
  }

  // The start state of `node` followed by the state `next`.
  Result<uint32_t> compile(uint32_t id, uint32_t next) {
    const AstNode& a = nodes_[id];
    switch (a.kind) {
      case AstKind::Empty:
        return next;
      case AstKind::Set:
        return add(NfaKind::Set, a.set, next, kNoNfaState);
      case AstKind::Concat: {
        uint32_t cur = next;
        for (uint32_t c = a.last; c != kNone; c = nodes_[c].prev) cur = TRY(compile(c, cur));
        return cur;
      }
      case AstKind::Alt: {
        if (a.last == kNone) return next;
        uint32_t cur = TRY(compile(a.last, next));
        for (uint32_t c = nodes_[a.last].prev; c != kNone; c = nodes_[c].prev)
          cur = TRY(add(NfaKind::Split, 0, TRY(compile(c, next)), cur));
        return cur;
      }
      case AstKind::Repeat: {
        uint32_t cur = next;
        if (a.max == kInfinite) {
          // x*: a split that either enters x (which leads back to it) or leaves.
          uint32_t loop = TRY(add(NfaKind::Split, 0, kNoNfaState, next));
          nfa_.states[loop].out1 = TRY(compile(a.first, loop));
          cur = loop;
        } else {
          // x{0,k} as (x(x(...)?)?)?: each optional copy may stop at `next`.
          for (uint32_t i = a.min; i < a.max; i++) cur = TRY(add(NfaKind::Split, 0, TRY(compile(a.first, cur)), next));
        }
        for (uint32_t i = 0; i < a.min; i++) cur = TRY(compile(a.first, cur));
        return cur;
      }
    }
    return next;
  }

 private:
  const AstNode* nodes_;
  Nfa& nfa_;
};

}  // namespace

Result<Nfa> regex_to_nfa(const char* pattern, size_t len, Arena& arena) {
  if (len > kMaxPatternBytes)
    return Error::make(ErrorCode::BadValue).str("regex: longer than ").num(kMaxPatternBytes).str(" bytes");
  Nfa nfa;
  nfa.sets = arena.take<ByteSet>(kMaxByteSets);
  nfa.states = arena.take<NfaState>(kMaxNfaStates);
  size_t mark = arena.used;
  auto* nodes = arena.take<AstNode>(kMaxAstNodes);
  if (!nfa.sets || !nfa.states || !nodes)
    return Error::make(ErrorCode::NoMemory).str("regex: compiler scratch memory too small");
  Parser parser(pattern, len, nodes, nfa);
  uint32_t root = TRY(parser.parse());
  Builder builder(nodes, nfa);
  uint32_t match = TRY(builder.add(NfaKind::Match, 0, kNoNfaState, kNoNfaState));
  nfa.start = TRY(builder.compile(root, match));
  arena.used = mark;   // the parse tree is no longer needed
  return nfa;
}

}  // namespace llm
