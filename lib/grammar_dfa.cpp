// NFA -> minimal DFA (grammar_dfa.h has the steps and the invariants).
//
// In this file: byte classes, epsilon closure, subset construction with a
// hash table of the sets seen, trimming of dead states, Moore's partition
// refinement, and the final renumbering into the caller's `out` arena.
// Everything else comes from `scratch` and is given back on return.
#include "grammar_dfa.h"

namespace llm {
namespace {

constexpr uint32_t kNone = 0xFFFFFFFFu;

Error too_many_states(const char* what) {
  return Error::make(ErrorCode::BadValue).str(what).str(": more than ").num(kMaxDfaStates)
      .str(" DFA states (simplify the grammar)");
}

// FNV-1a over a list of 16-bit values.
uint32_t hash_list(const uint16_t* v, uint32_t n) {
  uint32_t h = 2166136261u;
  for (uint32_t i = 0; i < n; i++) {
    h = (h ^ (v[i] & 0xFF)) * 16777619u;
    h = (h ^ (v[i] >> 8)) * 16777619u;
  }
  return h;
}

// Sorts v[0..n) ascending (heap sort: no recursion, no extra memory).
void sort_u16(uint16_t* v, uint32_t n) {
  auto sift = [&](uint32_t i, uint32_t end) {
    for (;;) {
      uint32_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < end && v[l] > v[m]) m = l;
      if (r < end && v[r] > v[m]) m = r;
      if (m == i) return;
      uint16_t t = v[i];
      v[i] = v[m];
      v[m] = t;
      i = m;
    }
  };
  for (uint32_t i = n / 2; i-- > 0;) sift(i, n);
  for (uint32_t end = n; end > 1; end--) {
    uint16_t t = v[0];
    v[0] = v[end - 1];
    v[end - 1] = t;
    sift(0, end - 1);
  }
}

// The working state of one subset construction.
struct Subsets {
  const Nfa* nfa;
  uint32_t n_classes;
  uint8_t rep[256];          // one byte of each class
  // Closure work: a stamp per NFA state (visited in this closure), a stack.
  uint32_t* mark;
  uint32_t stamp = 0;
  uint32_t* stack;
  uint16_t* list;            // the closure being built, n_list entries
  uint32_t n_list = 0;
  // DFA states: each one's NFA set is pool[start .. start + len).
  uint16_t* pool;
  size_t pool_cap, pool_used = 0;
  uint32_t* set_start;
  uint32_t* set_len;
  uint32_t* set_hash;
  uint16_t* trans;           // [kMaxDfaStates * n_classes]
  uint8_t* accepting;
  uint32_t n_states = 0;
  uint16_t* table;           // open addressing: DFA state ids, kDeadState = empty
  uint32_t table_mask;

  // list := closure of the seeds already pushed on the stack (n_stack of them).
  void close(uint32_t n_stack) {
    n_list = 0;
    while (n_stack > 0) {
      uint32_t s = stack[--n_stack];
      if (mark[s] == stamp) continue;
      mark[s] = stamp;
      const NfaState& st = nfa->states[s];
      if (st.kind == NfaKind::Split) {
        // A Split state is passed through and never kept: two sets that differ
        // only in splits behave alike, so they must be the same DFA state.
        if (st.out2 != kNoNfaState) stack[n_stack++] = st.out2;
        if (st.out1 != kNoNfaState) stack[n_stack++] = st.out1;
      } else {
        list[n_list++] = uint16_t(s);
      }
    }
    sort_u16(list, n_list);
  }

  // The DFA state whose set is list[0..n_list), made if new; kDeadState
  // for the empty set.
  Result<uint16_t> intern(const char* what) {
    if (n_list == 0) return kDeadState;
    uint32_t h = hash_list(list, n_list);
    uint32_t slot = h & table_mask;
    for (;; slot = (slot + 1) & table_mask) {
      uint16_t id = table[slot];
      if (id == kDeadState) break;
      if (set_hash[id] != h || set_len[id] != n_list) continue;
      const uint16_t* other = pool + set_start[id];
      uint32_t i = 0;
      while (i < n_list && other[i] == list[i]) i++;
      if (i == n_list) return id;
    }
    if (n_states == kMaxDfaStates) return too_many_states(what);
    if (pool_cap - pool_used < n_list)
      return Error::make(ErrorCode::BadValue).str(what).str(": too large (the compiler's memory is full)");
    uint32_t id = n_states++;
    set_start[id] = uint32_t(pool_used);
    set_len[id] = n_list;
    set_hash[id] = h;
    accepting[id] = 0;
    for (uint32_t i = 0; i < n_list; i++) {
      pool[pool_used++] = list[i];
      if (nfa->states[list[i]].kind == NfaKind::Match) accepting[id] = 1;
    }
    table[slot] = uint16_t(id);
    return uint16_t(id);
  }
};

// Splits the 256 bytes into classes that every NFA byte set treats alike.
uint32_t byte_classes(const Nfa& nfa, uint8_t* class_of, uint8_t* rep) {
  for (int b = 0; b < 256; b++) class_of[b] = 0;
  uint32_t n = 1;
  for (uint32_t s = 0; s < nfa.n_sets; s++) {
    // Each old class splits into (in the set, not in it).
    uint16_t remap[512];
    for (int i = 0; i < 512; i++) remap[i] = 0xFFFF;
    uint32_t m = 0;
    for (int b = 0; b < 256; b++) {
      uint32_t key = uint32_t(class_of[b]) * 2 + (nfa.sets[s].has(uint32_t(b)) ? 1 : 0);
      if (remap[key] == 0xFFFF) remap[key] = uint16_t(m++);
      class_of[b] = uint8_t(remap[key]);
    }
    n = m;
  }
  for (int c = 0; c < 256; c++) rep[c] = 0;
  for (int b = 255; b >= 0; b--) rep[class_of[b]] = uint8_t(b);
  return n;
}

// Marks live[s] = 1 when an accepting state is reachable from s, and sends
// every transition into a non-live state to kDeadState.
void trim(uint16_t* trans, const uint8_t* accepting, uint8_t* live, uint32_t n, uint32_t k) {
  for (uint32_t s = 0; s < n; s++) live[s] = accepting[s];
  // States are numbered in discovery order, so most transitions point to
  // higher numbers: sweeping from the top settles most states in one pass.
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t s = n; s-- > 0;) {
      if (live[s]) continue;
      for (uint32_t c = 0; c < k; c++) {
        uint16_t t = trans[s * k + c];
        if (t != kDeadState && live[t]) {
          live[s] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  for (uint32_t i = 0; i < n * k; i++)
    if (trans[i] != kDeadState && !live[trans[i]]) trans[i] = kDeadState;
}

}  // namespace

Result<Dfa> nfa_to_dfa(const Nfa& nfa, Arena& scratch, Arena& out, const char* what) {
  size_t mark_at = scratch.used;
  struct Restore {   // the scratch arena is given back on every return
    Arena& a;
    size_t at;
    ~Restore() { a.used = at; }
  } restore{scratch, mark_at};
  auto no_memory = [&] {
    return Error::make(ErrorCode::NoMemory).str(what).str(": compiler scratch memory too small");
  };

  Dfa dfa;
  Subsets w;
  w.nfa = &nfa;
  w.n_classes = byte_classes(nfa, dfa.byte_class, w.rep);
  dfa.n_classes = w.n_classes;
  uint32_t k = w.n_classes;
  w.mark = scratch.take<uint32_t>(nfa.n_states);
  w.stack = scratch.take<uint32_t>(3 * size_t(nfa.n_states) + 2);   // seeds + two outs per split
  w.list = scratch.take<uint16_t>(nfa.n_states);
  w.set_start = scratch.take<uint32_t>(kMaxDfaStates);
  w.set_len = scratch.take<uint32_t>(kMaxDfaStates);
  w.set_hash = scratch.take<uint32_t>(kMaxDfaStates);
  w.accepting = scratch.take<uint8_t>(kMaxDfaStates);
  w.trans = scratch.take<uint16_t>(size_t(kMaxDfaStates) * k);
  w.table_mask = 2 * kMaxDfaStates - 1;
  w.table = scratch.take<uint16_t>(2 * kMaxDfaStates);
  if (!w.mark || !w.stack || !w.list || !w.set_start || !w.set_len || !w.set_hash || !w.accepting || !w.trans ||
      !w.table)
    return no_memory();
  for (uint32_t i = 0; i < 2 * kMaxDfaStates; i++) w.table[i] = kDeadState;
  // Whatever is left holds the states' NFA sets.
  w.pool_cap = scratch.left() / sizeof(uint16_t);
  w.pool = scratch.take<uint16_t>(w.pool_cap);
  if (!w.pool) return no_memory();

  // 2. Subset construction, breadth first from the start set.
  w.stamp++;
  w.stack[0] = nfa.start;
  w.close(1);
  TRY(w.intern(what));
  for (uint32_t d = 0; d < w.n_states; d++) {
    for (uint32_t c = 0; c < k; c++) {
      w.stamp++;
      uint32_t n_stack = 0;
      const uint16_t* set = w.pool + w.set_start[d];
      for (uint32_t i = 0; i < w.set_len[d]; i++) {
        const NfaState& st = nfa.states[set[i]];
        if (st.kind == NfaKind::Set && nfa.sets[st.set].has(w.rep[c])) w.stack[n_stack++] = st.out1;
      }
      w.close(n_stack);
      w.trans[d * k + c] = TRY(w.intern(what));
    }
  }
  uint32_t n = w.n_states;

  // 3. Trimming. The sets are no longer needed: their pool holds the
  //    working arrays from here on.
  uint8_t* live = reinterpret_cast<uint8_t*>(w.pool);
  uint16_t* block = w.pool + n;          // the block of each state
  uint16_t* next_block = block + n;
  uint16_t* reps = next_block + n;       // a representative of each new block
  uint32_t table_bits = 1;
  while ((1u << table_bits) < 2 * n) table_bits++;
  uint16_t* htab = reps + n;
  if (w.pool_cap < size_t(4) * n + (1u << table_bits)) return no_memory();
  trim(w.trans, w.accepting, live, n, k);
  if (!live[0]) return Error::make(ErrorCode::BadValue).str(what).str(": matches no text at all");

  // 4. Moore: start from {accepting, not accepting} among the live states;
  //    split a block while two of its states move to different blocks on
  //    some byte class; stop when a round splits nothing.
  uint32_t n_blocks = 0;
  {
    uint16_t id_of[2] = {0xFFFF, 0xFFFF};
    for (uint32_t s = 0; s < n; s++) {
      if (!live[s]) {
        block[s] = kDeadState;
        continue;
      }
      uint16_t& id = id_of[w.accepting[s]];
      if (id == 0xFFFF) id = uint16_t(n_blocks++);
      block[s] = id;
    }
  }
  uint32_t hmask = (1u << table_bits) - 1;
  auto target_block = [&](uint32_t s, uint32_t c) -> uint16_t {
    uint16_t t = w.trans[s * k + c];
    return t == kDeadState ? kDeadState : block[t];
  };
  for (;;) {
    for (uint32_t i = 0; i <= hmask; i++) htab[i] = kDeadState;
    uint32_t count = 0;
    for (uint32_t s = 0; s < n; s++) {
      if (block[s] == kDeadState) {
        next_block[s] = kDeadState;
        continue;
      }
      uint32_t h = 2166136261u ^ block[s];
      for (uint32_t c = 0; c < k; c++) h = (h ^ target_block(s, c)) * 16777619u;
      for (uint32_t slot = h & hmask;; slot = (slot + 1) & hmask) {
        uint16_t e = htab[slot];
        if (e == kDeadState) {
          htab[slot] = uint16_t(s);
          reps[count] = uint16_t(s);
          next_block[s] = uint16_t(count++);
          break;
        }
        bool same = block[e] == block[s];
        for (uint32_t c = 0; same && c < k; c++) same = target_block(e, c) == target_block(s, c);
        if (same) {
          next_block[s] = next_block[e];
          break;
        }
      }
    }
    for (uint32_t s = 0; s < n; s++) block[s] = next_block[s];
    if (count == n_blocks) break;
    n_blocks = count;
  }

  // 5. The minimal DFA: one state per block. State 0 (the start) is the
  //    first representative, so the start keeps number 0.
  auto* next = out.take<uint16_t>(size_t(n_blocks) * k);
  auto* flags = out.take<uint8_t>(n_blocks);
  if (!next || !flags) return Error::make(ErrorCode::NoMemory).str(what).str(": no memory for the DFA");
  for (uint32_t b = 0; b < n_blocks; b++) {
    uint32_t s = reps[b];
    flags[b] = w.accepting[s] ? Dfa::kAccepting : 0;
    for (uint32_t c = 0; c < k; c++) {
      uint16_t t = target_block(s, c);
      next[b * k + c] = t;
      if (t != kDeadState) flags[b] |= Dfa::kHasExit;
    }
  }
  dfa.n_states = n_blocks;
  dfa.next = next;
  dfa.flags = flags;
  return dfa;
}

Result<Dfa> compile_regex(const char* pattern, size_t len, Arena& scratch, Arena& out) {
  size_t mark = scratch.used;
  auto nfa = regex_to_nfa(pattern, len, scratch);
  if (nfa.is_error()) {
    scratch.used = mark;
    return nfa.error();
  }
  auto dfa = nfa_to_dfa(nfa.value(), scratch, out, "regex");
  scratch.used = mark;
  return dfa;
}

}  // namespace llm
