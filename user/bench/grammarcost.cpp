// grammarcost MODEL [N_LOGITS [N_REAL]]: what constrained decoding costs in
// the guest, per pattern: compile time, DFA bytes, mask-cache bytes, a mask's
// first visit (every token walked), a cached visit, and apply_mask over the
// logits row. Run it in exact mode (tools/qemu_run.py --deterministic
// --smp 1: virtual time, so the figures repeat); `make bench-grammar` does,
// for SMOL's vocabulary and for a Qwen3.5-size one
// (docs/constrained-decoding.md, "Cost").
//
//   grammarcost SMOL                  SMOL's TOK.BIN, one bit per id
//   grammarcost SMOL 248320 248070    a Qwen3.5-size row: SMOL's tokens
//                                     repeated to 248,070 ids, then 250 pads
//
// Why repeated tokens: no Qwen3.5 tokenizer is in the image (the QWEN bundle
// has synthetic weights and no TOK.BIN). The repeated vocabulary has SMOL's
// length profile and is walked in index order, without the sorted-order
// sharing of common prefixes between neighbours, so its first visit is an
// upper bound. The pads (ids >= N_REAL) must never be allowed: the program
// checks it on `\C*`, which allows every real text token.
#include "grammar.h"
#include "kai.h"
#include "kai_text.h"

namespace {

struct Repeated {
  const llm::Tokenizer* t;
  llm::VocabView base;
};

llm::TokenUse use_repeated(const void* c, uint32_t id, llm::TokenBytes* b) {
  const Repeated& r = *static_cast<const Repeated*>(c);
  return r.base.use(r.base.ctx, id % r.t->vocab_size, b);
}

uint64_t now_ns() { return clock_ns(); }

int usage() {
  fprintf(2, "usage: grammarcost MODEL [N_LOGITS [N_REAL]]  (N_REAL <= N_LOGITS, N_LOGITS >= the vocabulary)\n");
  return 2;
}

bool parse_count(const char* s, uint32_t* out) {
  uint64_t v = 0;
  if (*s == 0) return false;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + uint64_t(*s - '0');
    if (v > 1'000'000) return false;
  }
  *out = uint32_t(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) return usage();
  static KaiText text;
  char err[160];
  if (text.open(argv[1], err, sizeof err) < 0) {
    fprintf(2, "grammarcost: %s\n", err);
    return 1;
  }
  const llm::Tokenizer& t = text.tokenizer();
  uint32_t n_logits = t.vocab_size, n_real = t.vocab_size;
  if (argc >= 3 && (!parse_count(argv[2], &n_logits) || n_logits < t.vocab_size)) {
    fprintf(2, "grammarcost: N_LOGITS '%s': a count from %u to 1000000\n", argv[2], t.vocab_size);
    return 2;
  }
  n_real = argc == 4 ? 0 : n_logits;
  if (argc == 4 && (!parse_count(argv[3], &n_real) || n_real > n_logits || n_real < t.vocab_size)) {
    fprintf(2, "grammarcost: N_REAL '%s': a count from %u to N_LOGITS\n", argv[3], t.vocab_size);
    return 2;
  }
  Repeated rep{&t, llm::vocab_from_tokenizer(t, t.vocab_size)};
  llm::VocabView v = llm::vocab_from_tokenizer(t, n_logits);
  if (n_real != t.vocab_size) {   // the repeated vocabulary, in index order
    v.n_real = n_real;
    v.ctx = &rep;
    v.use = use_repeated;
    v.order = nullptr;
  }

  const char* patterns[] = {"(yes|no)", "[0-9]{4}-[0-9]{2}-[0-9]{2}",
                            "\\{\"name\":\"[a-z ]{0,12}\",\"age\":(0|[1-9][0-9]?)\\}", "\\C*"};
  auto* scratch = static_cast<uint8_t*>(malloc(llm::kGrammarScratchBytes));
  auto* dfa_mem = static_cast<uint8_t*>(malloc(llm::kMaxDfaBytes));
  auto* logits = static_cast<float*>(malloc(n_logits * sizeof(float)));
  if (!scratch || !dfa_mem || !logits) {
    fprintf(2, "grammarcost: out of memory\n");
    return 1;
  }
  for (uint32_t i = 0; i < n_logits; i++) logits[i] = 1.0f;
  for (const char* p : patterns) {
    llm::Arena a(scratch, llm::kGrammarScratchBytes), o(dfa_mem, llm::kMaxDfaBytes);
    uint64_t c0 = now_ns();
    auto compiled = llm::compile_grammar(llm::GrammarKind::Regex, p, strlen(p), a, o);
    uint64_t c1 = now_ns();
    if (compiled.is_error()) {
      fprintf(2, "grammarcost: %s: %s\n", p, compiled.error().message);
      return 1;
    }
    llm::Dfa d = compiled.value();
    size_t need = llm::TokenMasks::bytes_needed(d, v, d.n_states);
    auto* cache = static_cast<uint8_t*>(malloc(need));
    llm::TokenMasks m;
    if (!cache || !m.init(d, v, cache, need, d.n_states)) {
      fprintf(2, "grammarcost: no memory for %zu bytes of masks\n", need);
      return 1;
    }
    uint64_t t0 = now_ns();
    uint32_t live = 0;
    for (uint16_t s = 0; s < d.n_states; s++) live += m.allowed(s) != 0;   // every first visit
    uint64_t t1 = now_ns();
    constexpr uint32_t kLookups = 10000;
    uint32_t sink = 0;
    for (uint32_t r = 0; r < kLookups; r++) sink += m.mask(uint16_t(r % d.n_states))[0];
    asm volatile("" : : "r"(sink));   // keeps the loop
    uint64_t t2 = now_ns();
    constexpr uint32_t kApplies = 4;
    for (uint32_t r = 0; r < kApplies; r++) llm::apply_mask(logits, n_logits, m.mask(0));
    uint64_t t3 = now_ns();
    // No pad is ever allowed, in any state.
    uint32_t pads_allowed = 0;
    for (uint16_t s = 0; s < d.n_states; s++)
      for (uint32_t id = n_real; id < n_logits; id++) pads_allowed += llm::mask_allows(m.mask(s), id);
    printf("grammarcost logits=%u real=%u pattern=%s states=%u compile_us=%lu dfa_bytes=%zu mask_cache_bytes=%zu "
           "first_visit_us=%lu cached_ns=%lu apply_mask_us=%lu steps_per_first_visit=%lu allowed_at_start=%u "
           "pads_allowed=%u live_states=%u\n",
           n_logits, n_real, p, d.n_states, (c1 - c0) / 1000, o.used, need, (t1 - t0) / 1000 / d.n_states,
           (t2 - t1) / kLookups, (t3 - t2) / 1000 / kApplies, m.steps / d.n_states, m.allowed(0), pads_allowed,
           live);
    free(cache);
  }
  return 0;
}
