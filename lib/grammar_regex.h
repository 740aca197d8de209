// Regular expressions -> a byte-level NFA (Thompson's construction).
//
// In this file:
//   ByteSet       256 bits: the bytes one NFA transition accepts
//   Nfa           states with epsilon splits, byte-set transitions and one Match
//   regex_to_nfa  parses a pattern and builds its NFA in an Arena
//
// The subset (docs/constrained-decoding.md, "The regular-expression subset"):
//   literals, escapes \. \\ \n \t \r \f \v \xHH (HH <= 7f), \d \D \w \W \s \S
//   (ASCII meanings, as Python's re.ASCII), classes [a-z0-9_] [^...], '.'
//   (any character but newline), grouping (), alternation |, and the
//   repeats * + ? {m} {m,} {m,n} (m, n <= kMaxRepeat). The pattern matches
//   the whole output (a leading ^ and a trailing $ are allowed and change
//   nothing). No backreferences, lookaround or lazy repeats: they are not
//   regular, or they do not change which strings match.
//
// Characters versus bytes: the automaton reads bytes, and the output is
// UTF-8. '.', [^...] and \D \W \S match one whole well-formed UTF-8
// character (one to four bytes), so the byte automaton accepts exactly the
// UTF-8 encodings of the strings Python's re.fullmatch(p, s, re.ASCII)
// accepts; a literal non-ASCII character is its UTF-8 bytes in sequence.
// Classes list ASCII members only (a non-ASCII member is refused). One
// escape is not Python's: \C (PCRE's "one code unit") matches any single
// byte, so \C* accepts every output, well-formed UTF-8 or not.
//
// Errors name the byte offset in the pattern and the reason:
// "regex: unbalanced ( at 7".
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "grammar_arena.h"
#include "llm_error.h"

namespace llm {

constexpr uint32_t kMaxPatternBytes = 8192;   // longer patterns are refused
constexpr uint32_t kMaxAstNodes = 8192;       // parse tree nodes
constexpr uint32_t kMaxNfaStates = 32768;     // after repeats are expanded
constexpr uint32_t kMaxByteSets = 256;        // distinct byte sets
constexpr uint32_t kMaxRepeat = 1000;         // largest m or n in {m,n}
constexpr uint32_t kMaxNesting = 32;          // parentheses inside parentheses
constexpr uint32_t kNoNfaState = 0xFFFFFFFFu;

struct ByteSet {
  uint32_t w[8];
  bool has(uint32_t b) const { return (w[b >> 5] >> (b & 31)) & 1; }
  void add(uint32_t b) { w[b >> 5] |= 1u << (b & 31); }
  void add_range(uint32_t lo, uint32_t hi) {
    for (uint32_t b = lo; b <= hi; b++) add(b);
  }
  bool same(const ByteSet& o) const {
    for (int i = 0; i < 8; i++)
      if (w[i] != o.w[i]) return false;
    return true;
  }
};

// An NFA state. Split: epsilon moves to out1 and (if not kNoNfaState) out2.
// Set: on a byte in sets[set], move to out1. Match: the pattern has matched.
// Invariant: exactly one Match state; every out is a valid index or kNoNfaState.
enum class NfaKind : uint8_t { Split, Set, Match };
struct NfaState {
  NfaKind kind;
  uint16_t set;
  uint32_t out1, out2;
};

struct Nfa {
  NfaState* states = nullptr;
  uint32_t n_states = 0;
  ByteSet* sets = nullptr;
  uint32_t n_sets = 0;
  uint32_t start = kNoNfaState;
};

// Parses `pattern` (len bytes) and builds its NFA; every table comes from
// `arena`. Errors: syntax (with the offset), or a limit above exceeded.
Result<Nfa> regex_to_nfa(const char* pattern, size_t len, Arena& arena);

}  // namespace llm
