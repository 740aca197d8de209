// Proposers: where the tokens that an iteration schedules after a request's
// newest token come from (the iteration seam, docs/ai-service.md,
// "N scheduled, k accepted").
//
// A proposal is a guess at the tokens the model will produce next. The
// scheduler feeds the guesses after the newest token in the same pass
// (they cost positions of the token budget and KV rows), and commit()
// keeps them only as far as the model's own choice at each position
// agrees; the rest are rolled back. So a proposer can make a request
// faster or slower, never change one of its tokens.
//
// Each request says what it wants (kai_ai_submit.spec, kept in the Request:
// spec_default, spec_proposer, spec_drafts, ngram_max, prediction). A
// request that asks for nothing gets the boot options (read at every
// iteration, so a host test may change them while requests run):
//   ai.drafts=K          up to K proposed tokens per generating request and
//                        iteration (0: none, the default; at most kMaxDrafts)
//   ai.proposer=NAME     ngram (prompt lookup: the tokens that followed the
//                        latest earlier occurrence of the context's last
//                        n-gram) or echo (the newest token again, K times:
//                        a proposer for tests, it always proposes)
//   ai.reject_drafts=1   fault injection for tests: every proposed token is
//                        rejected, whatever the model chose (acceptance 0)
#pragma once
#include <stdint.h>
#include "limits.h"

namespace ai {

struct Request;

// Ngram and Echo may be boot defaults; Predicted needs a request's prediction.
enum class ProposerKind : uint8_t { Ngram, Echo, Predicted };

extern uint32_t max_drafts;        // ai.drafts
extern ProposerKind proposer_kind; // ai.proposer
extern bool reject_drafts;         // ai.reject_drafts

bool proposer_from_name(const char* name, ProposerKind* out);
const char* proposer_name(ProposerKind k);

// Host tests replace the proposer (a simulation proposes what it wants);
// nullptr: the request's kind.
using ProposeFn = uint32_t (*)(const Request& r, uint32_t max, uint32_t* out);
extern ProposeFn propose_override;

// The proposed tokens r may get in its next pass (0: none this time),
// and from which proposer: its own choice, or the boot options'.
uint32_t drafts_for(const Request& r);
// The most drafts r may ever get per pass (0: it never speculates).
uint32_t most_drafts_for(const Request& r);
// After a generating pass that proposed d (maybe 0) tokens for r and kept
// `kept` of them: an adaptive request's next drafts (lock held).
void note_drafts_kept(Request& r, uint32_t d, uint32_t kept);
ProposerKind proposer_for(const Request& r);

// Up to `max` (<= kMaxDrafts) proposed tokens to follow r's context, in
// out[0..n); returns n. Lock held (it reads r's context, and the predicted
// proposer moves r's cursor into its prediction).
uint32_t propose(Request& r, uint32_t max, uint32_t* out);

}  // namespace ai
