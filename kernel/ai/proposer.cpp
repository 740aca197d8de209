// Proposers (proposer.h): prompt lookup and echo.
#include "proposer.h"
#include "requests.h"
#include "platform.h"

namespace ai {

uint32_t max_drafts = 0;
ProposerKind proposer_kind = ProposerKind::Ngram;
bool reject_drafts = false;
ProposeFn propose_override = nullptr;

namespace {

// The longest n-gram looked for: a longer match is a better predictor of
// what follows, and three tokens of context are usually enough to tell a
// repeated phrase from a chance repeat of one word.
constexpr uint32_t kMaxNgram = 3;

// Prompt lookup (as vLLM's n-gram proposer and HF's prompt_lookup_num_tokens
// do): for n = kMaxNgram down to 1, find the latest earlier place where the
// context's last n tokens occurred, and propose the tokens that followed it.
uint32_t propose_ngram(const Request& r, uint32_t max, uint32_t* out) {
  uint32_t len = context_len(r);
  for (uint32_t n = kMaxNgram; n >= 1; n--) {
    if (len < n + 1) continue;
    // Candidate starts s < len - n (an earlier occurrence), latest first.
    for (uint32_t s = len - n; s-- > 0;) {
      bool same = true;
      for (uint32_t i = 0; i < n && same; i++) same = context_token(r, s + i) == context_token(r, len - n + i);
      if (!same) continue;
      uint32_t k = 0;
      while (k < max && s + n + k < len) {
        out[k] = context_token(r, s + n + k);
        k++;
      }
      if (k > 0) return k;
    }
  }
  return 0;
}

}  // namespace

bool proposer_from_name(const char* name, ProposerKind* out) {
  if (strcmp(name, "ngram") == 0) *out = ProposerKind::Ngram;
  else if (strcmp(name, "echo") == 0) *out = ProposerKind::Echo;
  else return false;
  return true;
}

const char* proposer_name(ProposerKind k) { return k == ProposerKind::Echo ? "echo" : "ngram"; }

uint32_t propose(const Request& r, uint32_t max, uint32_t* out) {
  if (max > kMaxDrafts) max = kMaxDrafts;
  if (max == 0) return 0;
  if (propose_override) return propose_override(r, max, out);
  if (proposer_kind == ProposerKind::Echo) {
    uint32_t newest = context_token(r, context_len(r) - 1);
    for (uint32_t i = 0; i < max; i++) out[i] = newest;
    return max;
  }
  return propose_ngram(r, max, out);
}

}  // namespace ai
