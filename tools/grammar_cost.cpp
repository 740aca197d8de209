// grammar_cost: what constrained decoding costs, on the host (real time:
// noisy on a shared machine; the step counts are exact).
//
//   grammar_cost TOK.BIN
//
// For three patterns, with the tokenizer's vocabulary and with its tokens
// repeated up to Qwen3.5's 248,320 ids: compile time, DFA and mask-cache
// bytes, a mask's first visit (every token walked), a cached visit, and
// apply_mask over the logits row (docs/notebook/2026-12-06-constrained-decoding.md).
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <vector>
#include <string>
#include "grammar.h"
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
struct Rep { const llm::Tokenizer* t; };
static llm::TokenUse use_rep(const void* c, uint32_t id, llm::TokenBytes* b) {
  const llm::Tokenizer& t = *static_cast<const Rep*>(c)->t;
  llm::VocabView v = llm::vocab_from_tokenizer(t, t.vocab_size);
  return v.use(v.ctx, id % t.vocab_size, b);
}
int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: grammar_cost TOK.BIN\n");
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "grammar_cost: cannot open %s\n", argv[1]);
    return 1;
  } std::vector<uint8_t> tok(64 << 20); size_t n = fread(tok.data(), 1, tok.size(), f); fclose(f);
  llm::Tokenizer t = llm::load_tokenizer(tok.data(), n).value();
  const char* pats[] = {"(yes|no)", "[0-9]{4}-[0-9]{2}-[0-9]{2}", "\\{\"name\":\"[a-z ]{0,12}\",\"age\":(0|[1-9][0-9]?)\\}"};
  std::vector<uint8_t> scratch(llm::kGrammarScratchBytes), mem(llm::kMaxDfaBytes);
  for (uint32_t n_logits : {t.vocab_size, 248320u}) {
    for (const char* p : pats) {
      llm::Arena a(scratch.data(), scratch.size()), o(mem.data(), mem.size());
      double c0 = now();
      llm::Dfa d = llm::compile_grammar(llm::GrammarKind::Regex, p, strlen(p), a, o).value();
      double c1 = now();
      Rep rep{&t};
      llm::VocabView v = llm::vocab_from_tokenizer(t, n_logits);
      if (n_logits != t.vocab_size) { v.n_real = n_logits; v.ctx = &rep; v.use = use_rep; v.order = nullptr; }
      llm::TokenMasks m;
      size_t need = llm::TokenMasks::bytes_needed(d, v, d.n_states);
      std::vector<uint8_t> mm(need);
      m.init(d, v, mm.data(), need, d.n_states);
      double t0 = now();
      for (uint16_t s = 0; s < d.n_states; s++) m.mask(s);
      double t1 = now();
      int reps = 100000;
      uint32_t sink = 0;
      for (int r = 0; r < reps; r++) sink += m.mask(uint16_t(r % d.n_states))[0];
      asm volatile("" : : "r"(sink));   // keep the loop
      double t2 = now();
      std::vector<float> logits(n_logits, 1.0f);
      double t3 = now();
      for (int r = 0; r < 100; r++) llm::apply_mask(logits.data(), n_logits, m.mask(0));
      double t4 = now();
      printf("vocab=%u pattern=%s states=%u classes=%u compile_us=%.0f dfa_bytes=%zu mask_cache_bytes=%zu first_visit_us=%.0f cached_lookup_us=%.3f apply_mask_us=%.0f steps_per_first_visit=%llu\n",
             n_logits, p, d.n_states, d.n_classes, (c1 - c0) * 1e6, o.used, need, (t1 - t0) * 1e6 / d.n_states,
             (t2 - t1) * 1e6 / reps, (t4 - t3) * 1e6 / 100, (unsigned long long)(m.steps / d.n_states));
    }
  }
}
