// The sharing options of the AI service (sharing.h): their values and
// names, the fair policy's counters and what ai_info shows of them.
#include "sharing.h"
#include "requests.h"
#include "platform.h"
#include "../param.h"

namespace ai {

// One counter per process at most, and a process's entry goes when it
// exits: so the table can never be full.
static_assert(kMaxFairClients >= NPROC, "the fair policy needs an entry for every process");

PrefixShare prefix_share = PrefixShare::Session;
uint32_t preempt_gap = kDefaultPreemptGap;
FairCounters fair_counters;

const char* prefix_share_name(PrefixShare s) {
  switch (s) {
    case PrefixShare::Global: return "global";
    case PrefixShare::Off: return "off";
    case PrefixShare::Session: break;
  }
  return "session";
}

bool prefix_share_from_name(const char* name, PrefixShare* out) {
  static constexpr PrefixShare kAll[] = {PrefixShare::Session, PrefixShare::Global, PrefixShare::Off};
  for (PrefixShare s : kAll) {
    if (strcmp(name, prefix_share_name(s)) == 0) {
      *out = s;
      return true;
    }
  }
  return false;
}

uint32_t prefix_domain(int sid) { return domain_for(prefix_share, sid); }

void note_backlogged(int owner) {
  Request* queued[kQueueCapacity];
  uint32_t n = queued_in_order(queued);
  int others[kQueueCapacity];
  int n_others = 0;
  for (uint32_t i = 0; i < n; i++) {
    int o = queued[i]->owner_pid;
    if (o == owner) return;   // already backlogged: no lift
    bool seen = false;
    for (int j = 0; j < n_others && !seen; j++) seen = others[j] == o;
    if (!seen) others[n_others++] = o;
  }
  fair_counters.on_backlogged(owner, others, n_others);
}

void fill_sharing_info(kai_ai_info& info) {
  info.prefix_share = static_cast<uint32_t>(prefix_share);
  info.preempt_gap = preempt_gap;
  info.priority_preemptions = counters.priority_preemptions;
  FairClient all[kMaxFairClients];
  int n = fair_counters.snapshot(all, kMaxFairClients);
  // Busiest first (insertion sort: at most 64 entries), then the first
  // KAI_AI_MAX_CLIENTS of them.
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && all[j].served > all[j - 1].served; j--) {
      FairClient t = all[j];
      all[j] = all[j - 1];
      all[j - 1] = t;
    }
  info.n_clients = 0;
  for (int i = 0; i < n && i < KAI_AI_MAX_CLIENTS; i++) {
    kai_ai_client& c = info.clients[info.n_clients++];
    c.pid = all[i].client;
    c.served = all[i].served;
    c.prompt_tokens = all[i].prompt_tokens;
    c.output_tokens = all[i].output_tokens;
    c.rejected_drafts = all[i].rejected_drafts > UINT32_MAX ? UINT32_MAX : uint32_t(all[i].rejected_drafts);
  }
}

}  // namespace ai
