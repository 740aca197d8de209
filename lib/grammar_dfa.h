// A byte-level DFA: the automaton a grammar becomes before it meets a
// vocabulary (grammar_mask.h).
//
// In this file:
//   Dfa            the transition table over byte classes, start state 0
//   nfa_to_dfa     subset construction, then trimming and minimisation
//   compile_regex  regex_to_nfa + nfa_to_dfa in one call
//
// How the NFA becomes this table (docs/constrained-decoding.md, "From a
// pattern to a mask"):
//   1. byte classes: bytes that every NFA byte set treats alike (all of
//      a-z in "[a-z]+" ...) share a column, so a row has a few dozen
//      entries instead of 256;
//   2. subset construction: a DFA state is the set of NFA states the input
//      so far can be in (after epsilon moves); a new set becomes a new state;
//   3. trimming: a state from which no accepting state can be reached is
//      "dead", so every transition to it becomes kDeadState: then "alive"
//      means "a match is still possible", which is what a token mask needs;
//   4. minimisation (Moore's partition refinement): states that accept the
//      same continuations are merged, so the mask cache has fewer states.
//
// Invariants of a built Dfa: state 0 is the start; every state is alive
// (some accepting state is reachable from it); next[] holds state ids or
// kDeadState; n_states <= kMaxDfaStates.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "grammar_arena.h"
#include "grammar_regex.h"
#include "llm_error.h"

namespace llm {

constexpr uint32_t kMaxDfaStates = 4096;
constexpr uint16_t kDeadState = 0xFFFF;
// Scratch memory the compiler needs at most besides the DFA itself (the
// NFA, the parse tree and the subset construction's sets).
constexpr size_t kGrammarScratchBytes = size_t(4) << 20;

struct Dfa {
  uint32_t n_states = 0;
  uint32_t n_classes = 0;
  uint8_t byte_class[256] = {};
  const uint16_t* next = nullptr;   // [n_states * n_classes]
  const uint8_t* flags = nullptr;   // [n_states]: kAccepting | kHasExit

  static constexpr uint8_t kAccepting = 1;   // the input so far is a match
  static constexpr uint8_t kHasExit = 2;     // some byte leads to a live state

  uint16_t step(uint32_t state, uint8_t byte) const { return next[state * n_classes + byte_class[byte]]; }
  bool accepting(uint32_t state) const { return flags[state] & kAccepting; }
  // Accepting and nothing may follow: the output is complete.
  bool complete(uint32_t state) const { return flags[state] == kAccepting; }
  // Walks bytes from `state`; kDeadState once no match is possible.
  uint16_t walk(uint32_t state, const uint8_t* bytes, size_t n) const {
    for (size_t i = 0; i < n && state != kDeadState; i++) state = step(state, bytes[i]);
    return uint16_t(state);
  }
  bool matches(const uint8_t* bytes, size_t n) const {
    uint16_t s = walk(0, bytes, n);
    return s != kDeadState && accepting(s);
  }
};

// Builds the minimal trimmed DFA of `nfa`. Working tables come from
// `scratch` (left as it was on return); the Dfa's tables from `out`.
// `what` names the grammar kind in errors ("regex").
Result<Dfa> nfa_to_dfa(const Nfa& nfa, Arena& scratch, Arena& out, const char* what);

// The whole pipeline for one pattern.
Result<Dfa> compile_regex(const char* pattern, size_t len, Arena& scratch, Arena& out);

}  // namespace llm
