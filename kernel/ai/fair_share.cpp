// Virtual token counters (fair_share.h): a small table of clients, looked
// up by linear search (at most 64 entries, touched a few times per iteration).
#include "fair_share.h"

namespace ai {

FairClient* FairCounters::find(int client) {
  for (auto& c : table_)
    if (c.client == client) return &c;
  return nullptr;
}

const FairClient* FairCounters::find(int client) const {
  for (const auto& c : table_)
    if (c.client == client) return &c;
  return nullptr;
}

FairClient* FairCounters::find_or_add(int client) {
  if (client == 0) return nullptr;
  if (FairClient* c = find(client)) return c;
  FairClient* c = find(0);
  if (c != nullptr) *c = FairClient{client, 0, 0, 0};
  return c;
}

uint64_t FairCounters::served(int client) const {
  const FairClient* c = client != 0 ? find(client) : nullptr;
  return c ? c->served : 0;
}

bool FairCounters::on_backlogged(int client, const int* others, int n) {
  FairClient* c = find_or_add(client);
  if (c == nullptr) return false;
  if (n > 0) {
    uint64_t low = ~0ull;
    for (int i = 0; i < n; i++) {
      uint64_t s = served(others[i]);
      if (s < low) low = s;
    }
    floor_ = low;
  }
  if (c->served < floor_) c->served = floor_;
  return true;
}

void FairCounters::charge_prompt(int client, uint32_t tokens) {
  if (FairClient* c = find_or_add(client)) {
    c->served += kFairPromptWeight * tokens;
    c->prompt_tokens += tokens;
  }
}

void FairCounters::charge_output(int client, uint32_t tokens) {
  if (FairClient* c = find_or_add(client)) {
    c->served += kFairOutputWeight * tokens;
    c->output_tokens += tokens;
  }
}

void FairCounters::charge_rejected_drafts(int client, uint32_t tokens) {
  if (FairClient* c = find_or_add(client)) {
    c->served += kFairDraftWeight * tokens;
    c->rejected_drafts += tokens;
  }
}

int FairCounters::least_served(const int* clients, int n) {
  int best = 0;
  uint64_t best_served = served(clients[0]);
  for (int i = 1; i < n; i++) {
    uint64_t s = served(clients[i]);
    if (s < best_served) {   // strictly: the earlier one wins a tie
      best = i;
      best_served = s;
    }
  }
  floor_ = best_served;
  return best;
}

void FairCounters::forget(int client) {
  if (FairClient* c = client != 0 ? find(client) : nullptr) *c = FairClient{};
}

int FairCounters::snapshot(FairClient* out, int cap) const {
  int n = 0;
  for (const auto& c : table_)
    if (c.client != 0 && n < cap) out[n++] = c;
  return n;
}

void FairCounters::reset() {
  for (auto& c : table_) c = FairClient{};
  floor_ = 0;
}

}  // namespace ai
