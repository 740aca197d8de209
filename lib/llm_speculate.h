// Speculative decoding pieces shared by the kernel's AI service
// (kernel/ai/proposer.cpp), `ai` and `llmrun`: the proposers' rules, so the
// warm and the cold path guess the same tokens, and the command line's
// --speculate choice with the lab's oracle. A guess only decides how many
// positions a pass verifies; the tokens are always the model's own.
#pragma once
#include <stdint.h>
#include "llm_sample.h"
#include "llm_draft_control.h"

namespace llm {

constexpr uint32_t kMaxSpecDrafts = 8;   // the kernel's kMaxDrafts (abi_checks.cpp)
constexpr uint32_t kDefaultNgram = 3;    // KAI_AI_DEFAULT_NGRAM (abi_checks.cpp)

// Prompt lookup (as vLLM's n-gram proposer and HF's prompt_lookup_num_tokens
// do): for n = nmax down to 1, the latest earlier place where the context's
// last n tokens occurred, and the (up to max) tokens that followed it. A
// longer match is a better predictor: three tokens usually tell a repeated
// phrase from a chance repeat of one word. `token(i)` is context id i < len.
template <class Token>
uint32_t ngram_lookup(Token token, uint32_t len, uint32_t nmax, uint32_t max, uint32_t* out) {
  for (uint32_t n = nmax; n >= 1; n--) {
    if (len < n + 1) continue;
    for (uint32_t s = len - n; s-- > 0;) {   // candidate starts, latest first
      bool same = true;
      for (uint32_t i = 0; i < n && same; i++) same = token(s + i) == token(len - n + i);
      if (!same) continue;
      uint32_t k = 0;
      while (k < max && s + n + k < len) {
        out[k] = token(s + n + k);
        k++;
      }
      if (k > 0) return k;
    }
  }
  return 0;
}

// Predicted Outputs (the client passes the tokens it expects): a cursor says
// which prediction id is expected as the next output token,
// prediction[at + (g - at_output)] for output g. While the output follows the
// prediction, the cursor moves with it. When the newest output token is not
// the one it expected, the output went its own way: either it replaced a few
// ids (the cursor stays in step, counting positions) or it inserted or
// deleted some (the prediction goes on elsewhere): the nearest place where
// the newest kResync output tokens occur in the prediction re-syncs it;
// none, and it keeps counting. Three tokens, not one or two: with a lab's
// oracle (substitutions only) shorter matches jumped to chance repeats and
// kept half the drafts counting would have kept. Invariant: at_output <=
// the output's length.
struct PredictionCursor {
  static constexpr uint32_t kResync = 3;
  uint32_t at = 0, at_output = 0;

  // Up to max guesses at output[g], output[g+1], ... given output[0..g).
  uint32_t propose(const uint32_t* prediction, uint32_t len, const uint32_t* output, uint32_t g, uint32_t max,
                   uint32_t* out) {
    uint32_t c = at + (g - at_output);
    if (g > 0 && !meets(prediction, len, output, g, c)) {
      uint32_t best_distance = UINT32_MAX;
      for (uint32_t j = 1; j <= len; j++) {
        uint32_t d = j > c ? j - c : c - j;
        if (d < best_distance && meets(prediction, len, output, g, j)) {
          at = j;
          at_output = g;
          best_distance = d;
        }
      }
      c = at + (g - at_output);
    }
    uint32_t k = 0;
    while (k < max && c + k < len) {
      out[k] = prediction[c + k];
      k++;
    }
    return k;
  }

 private:
  // prediction[j - kResync .. j) equals the newest kResync output tokens:
  // the output would go on at j.
  static bool meets(const uint32_t* prediction, uint32_t len, const uint32_t* output, uint32_t g, uint32_t j) {
    if (j < kResync || j > len || g < kResync) return false;
    for (uint32_t i = 1; i <= kResync; i++)
      if (prediction[j - i] != output[g - i]) return false;
    return true;
  }
};

// The lab's oracle (docs/experiments.md, "Speculative decoding"): the answer
// of a first run, each id replaced with probability 1 - A by another id of
// the vocabulary (deterministic from seed), is the prediction of a second
// run, so about a fraction A of the drafts are accepted. `ai` and `llmrun`
// pass 1 + the request's --seed, so one seed gives one pattern on both paths.
inline void corrupt_prediction(const uint32_t* answer, uint32_t n, uint32_t acceptance_milli, uint64_t seed,
                               uint32_t vocab, uint32_t* out) {
  Rng rng = rng_from_seed(seed ^ 0x5eedc0de5eedc0deull);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t roll = uint32_t(rng.next() % 1000);
    uint32_t other = vocab > 1 ? uint32_t(rng.next() % (vocab - 1)) : 0;
    out[i] = roll < acceptance_milli || vocab < 2 ? answer[i] : (answer[i] + 1 + other) % vocab;
  }
}

// --speculate ngram:K | predicted:K | oracle:K:A | none  (K = 1..8 drafts;
// A = the oracle's acceptance, a fraction 0..1).
enum class SpecKind : uint8_t { None, Ngram, Predicted, Oracle };
struct SpecChoice {
  SpecKind kind = SpecKind::None;
  uint32_t drafts = 0;
  uint32_t acceptance_milli = 0;   // oracle only
  bool adaptive = false;           // --adaptive: DraftControl chooses 0..drafts a pass
};

// false: not one of those forms (the caller names the option and the value);
// out->adaptive is kept.
inline bool parse_speculate(const char* s, SpecChoice* out) {
  struct Name {
    const char* word;
    SpecKind kind;
  } names[] = {{"ngram", SpecKind::Ngram}, {"predicted", SpecKind::Predicted}, {"oracle", SpecKind::Oracle}};
  SpecChoice c;
  c.adaptive = out->adaptive;   // a separate option (--adaptive), in any order
  if (s[0] == 'n' && s[1] == 'o' && s[2] == 'n' && s[3] == 'e' && s[4] == 0) {
    *out = c;
    return true;
  }
  const char* p = nullptr;
  for (const Name& n : names) {
    uint32_t i = 0;
    while (n.word[i] && s[i] == n.word[i]) i++;
    if (n.word[i] == 0 && s[i] == ':') {
      c.kind = n.kind;
      p = s + i + 1;
    }
  }
  if (p == nullptr || *p < '1' || *p > '9') return false;
  c.drafts = uint32_t(*p++ - '0');
  if (c.drafts > kMaxSpecDrafts) return false;
  if (c.kind != SpecKind::Oracle) {
    if (*p != 0) return false;
  } else {
    if (*p != ':' || !parse_thousandths(p + 1, 1000, &c.acceptance_milli)) return false;
  }
  *out = c;
  return true;
}

}  // namespace llm
