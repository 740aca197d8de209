// Proposers (proposer.h): prompt lookup, echo, and the client's prediction;
// their rules are lib/llm_speculate.h's, so llmrun guesses the same tokens.
#include "proposer.h"
#include "requests.h"
#include "platform.h"
#include "llm_speculate.h"

namespace ai {

uint32_t max_drafts = 0;
ProposerKind proposer_kind = ProposerKind::Ngram;
bool reject_drafts = false;
ProposeFn propose_override = nullptr;

bool proposer_from_name(const char* name, ProposerKind* out) {
  if (strcmp(name, "ngram") == 0) *out = ProposerKind::Ngram;
  else if (strcmp(name, "echo") == 0) *out = ProposerKind::Echo;
  else return false;   // predicted needs a prediction: never a boot default
  return true;
}

const char* proposer_name(ProposerKind k) {
  switch (k) {
    case ProposerKind::Echo: return "echo";
    case ProposerKind::Predicted: return "predicted";
    case ProposerKind::Ngram: break;
  }
  return "ngram";
}

// A constrained request gets none: a proposal is not checked against the
// grammar, and the simplest correct rule is not to make any.
uint32_t most_drafts_for(const Request& r) {
  if (r.grammar != nullptr) return 0;
  return r.spec_default ? max_drafts : r.spec_drafts;
}

uint32_t drafts_for(const Request& r) {
  if (!r.spec_default && r.spec_adaptive && r.grammar == nullptr) return r.draft_control.drafts(r.spec_drafts);
  return most_drafts_for(r);
}

void note_drafts_kept(Request& r, uint32_t d, uint32_t kept) {
  if (!r.spec_default && r.spec_adaptive) r.draft_control.after_pass(r.spec_drafts, d, kept);
}

ProposerKind proposer_for(const Request& r) { return r.spec_default ? proposer_kind : r.spec_proposer; }

uint32_t propose(Request& r, uint32_t max, uint32_t* out) {
  if (max > kMaxDrafts) max = kMaxDrafts;
  if (max == 0) return 0;
  if (propose_override) return propose_override(r, max, out);
  switch (proposer_for(r)) {
    case ProposerKind::Echo: {
      uint32_t newest = context_token(r, context_len(r) - 1);
      for (uint32_t i = 0; i < max; i++) out[i] = newest;
      return max;
    }
    case ProposerKind::Predicted:
      return r.pred_cursor.propose(r.prediction, r.prediction_len, r.output, r.n_generated, max, out);
    case ProposerKind::Ngram: break;
  }
  uint32_t nmax = r.spec_default || r.ngram_max == 0 ? KAI_AI_DEFAULT_NGRAM : r.ngram_max;
  return llm::ngram_lookup([&r](uint32_t i) { return context_token(r, i); }, context_len(r), nmax, max, out);
}

}  // namespace ai
