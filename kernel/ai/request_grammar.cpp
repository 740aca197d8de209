// A constrained request's grammar (request_grammar.h).
#include "request_grammar.h"
#include <new>
#include "platform.h"
#include "limits.h"

namespace ai {

namespace {

uint64_t align64(uint64_t v) { return (v + 63) / 64 * 64; }

// Masks a request may cache: as many as kGrammarMaskBytes hold (at least
// one), never more than the DFA has states.
uint32_t mask_slots(const llm::Dfa& dfa, const llm::VocabView& vocab) {
  uint64_t per_mask = uint64_t(llm::mask_words(vocab.n_logits)) * 4;
  uint64_t slots = kGrammarMaskBytes / per_mask;
  if (slots == 0) slots = 1;
  if (slots > dfa.n_states) slots = dfa.n_states;
  return uint32_t(slots);
}

}  // namespace

ErrorOr<RequestGrammar*, Error> grammar_build(llm::GrammarKind kind, const char* text, uint32_t len,
                                              const llm::VocabView& vocab, void* scratch, void* table) {
  llm::Arena sa(scratch, kGrammarScratchBytes), out(table, kGrammarTableBytes);
  auto compiled = llm::compile_grammar(kind, text, len, sa, out);
  if (compiled.is_error()) return Error::make(Error::errno_for(compiled.error().code), compiled.error().message);
  llm::Dfa dfa = compiled.value();
  // One region: the object, then the DFA's tables as the compiler laid
  // them out in `table` (copied, pointers moved), then the mask cache.
  uint64_t head = align64(sizeof(RequestGrammar));
  uint64_t tables = align64(out.used);
  uint32_t slots = mask_slots(dfa, vocab);
  uint64_t masks = llm::TokenMasks::bytes_needed(dfa, vocab, slots);
  uint64_t total = head + tables + masks;
  auto* base = static_cast<uint8_t*>(kalloc_contiguous(total));
  if (base == nullptr) return Error::make(Errno::NoMem, "grammar", "no kernel memory for the DFA and its masks");
  auto* g = new (base) RequestGrammar{};
  g->region_bytes = total;
  g->dfa_bytes = out.used;
  g->mask_bytes = masks;
  memcpy(base + head, table, out.used);
  auto moved = [&](const void* p) { return base + head + (static_cast<const uint8_t*>(p) - static_cast<uint8_t*>(table)); };
  g->dfa = dfa;
  g->dfa.next = reinterpret_cast<const uint16_t*>(moved(dfa.next));
  g->dfa.flags = reinterpret_cast<const uint8_t*>(moved(dfa.flags));
  g->vocab = vocab;
  if (!g->masks.init(g->dfa, g->vocab, base + head + tables, masks, slots)) {
    kfree_contiguous(base, total);
    return Error::make(Errno::NoMem, "grammar", "mask cache too small");
  }
  g->constraint = llm::Constraint(g->dfa, g->vocab, g->masks);
  g->walked = 0;
  return g;
}

void grammar_free(RequestGrammar* g) {
  if (g == nullptr) return;
  uint64_t bytes = g->region_bytes;
  g->~RequestGrammar();
  kfree_contiguous(g, bytes);
}

void grammar_sync(RequestGrammar* g, const uint32_t* output, uint32_t n) {
  if (g->walked > n) {   // the output got shorter: walk it all again
    g->constraint.replay(output, n);
  } else {
    for (uint32_t i = g->walked; i < n; i++) g->constraint.advance(output[i]);
  }
  g->walked = n;
}

ErrorOr<void, Error> grammar_mask(RequestGrammar* g, const uint32_t* output, uint32_t n, float* logits,
                                  uint32_t vocab) {
  grammar_sync(g, output, n);
  auto allowed = g->constraint.mask_logits(logits, vocab);
  if (allowed.is_error()) return Error::make(Errno::Invalid, allowed.error().message);
  return {};
}

bool grammar_matched(const RequestGrammar* g) { return g->constraint.matched(); }
bool grammar_complete(const RequestGrammar* g) { return g->constraint.complete(); }

}  // namespace ai
