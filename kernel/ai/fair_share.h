// The fair policy's bookkeeping: one virtual token counter per client, the
// Virtual Token Counter (VTC) of Sheng et al., "Fairness in Serving Large
// Language Models" (OSDI 2024), at kai's size.
//
// A client's counter is the service it has received, in weighted tokens:
// every prompt token the model computes for it costs kFairPromptWeight,
// every token it generates costs kFairOutputWeight (the paper's 1 and 2: a
// decode step reads all the weights for one token per request, a prefill
// token shares that read with the rest of its chunk, so output tokens are
// the dearer ones). The policy gives the next batch slot to the waiting
// request of the client with the smallest counter. A client that had
// nothing waiting and submits again is *lifted* to the smallest counter of
// the clients that are waiting (or, when nobody is, to where that smallest
// counter last stood): time spent idle is not banked as credit to be spent
// later in a burst that would shut everyone else out.
//
// The paper proves that two clients that stay backlogged (always something
// waiting) over any interval receive services that differ by at most 2U,
// U = max(kFairPromptWeight * longest prompt, kFairOutputWeight * M), M the
// most tokens the running batch can hold; tests/host/test_fair_share.cpp
// checks that bound on a simulated service, tests/host/test_ai_sharing.cpp
// inside the real scheduler (where the bound for kai's parameters is
// derived). docs/sharing.md, says why a client is
// a process.
//
// Pure bookkeeping: no lock of its own, no kernel header. The AI service
// calls it with ai::lock held; the host tests call it directly.
#pragma once
#include <stdint.h>

namespace ai {

constexpr uint64_t kFairPromptWeight = 1;   // per prompt token computed (cached ones are free)
constexpr uint64_t kFairOutputWeight = 2;   // per generated token
// Per proposed token computed and rejected (speculative decoding): the model
// computed its position in a shared pass, as it computes a prompt token's,
// and nothing came of it; an accepted one is charged as the output token it
// became. So a client pays for the positions computed for it, the wasted
// ones included: a proposer that misses costs its own client, not others.
constexpr uint64_t kFairDraftWeight = 1;
constexpr int kMaxFairClients = 64;         // one per process at most (NPROC)

struct FairClient {
  int32_t client;            // 0: free entry
  uint64_t served;           // the virtual token counter
  uint64_t prompt_tokens;    // what it was charged for, by kind (aistat shows them)
  uint64_t output_tokens;
  uint64_t rejected_drafts;  // proposed tokens computed and not kept
};

class FairCounters {
 public:
  // The counter of `client` (0 for a client never seen).
  uint64_t served(int client) const;
  // `client` had nothing waiting and now has a request waiting. others[0..n)
  // are the other clients with requests waiting right now. Lifts its counter
  // to at least the smallest of theirs (or the last such floor if n == 0).
  // False only if the table is full (a new client is then not tracked, and
  // counts as served 0 until an entry frees: it is never refused service).
  bool on_backlogged(int client, const int* others, int n);
  void charge_prompt(int client, uint32_t tokens);
  void charge_output(int client, uint32_t tokens);
  void charge_rejected_drafts(int client, uint32_t tokens);
  // Index in clients[0..n) (n >= 1) of the least served; among equals the
  // first, so callers pass them in arrival order. Also remembers the
  // smallest counter seen as the floor for the next lift.
  int least_served(const int* clients, int n);
  // The client is gone (its process exited).
  void forget(int client);
  // Copies up to cap entries in use into out; returns how many.
  int snapshot(FairClient* out, int cap) const;
  void reset();

 private:
  FairClient* find(int client);
  const FairClient* find(int client) const;
  FairClient* find_or_add(int client);

  FairClient table_[kMaxFairClients] = {};
  uint64_t floor_ = 0;   // the smallest counter among waiting clients, when last known
};

}  // namespace ai
