// How processes share the AI service, beyond the scheduling policy: which
// requests may share cached prompt prefixes (the cache domain), and when a
// more urgent request may take a running one's batch slot (the preemption
// gap). docs/sharing.md, explains both.
//
// Boot options (set once by start(); read-only while workers run):
//   ai.prefix_share=session|global|off   default session
//   ai.preempt_gap=N                     default kDefaultPreemptGap
#pragma once
#include <stdint.h>
#include <kai/ai_abi.h>
#include "fair_share.h"
#include "kv_cache.h"   // first_block_tag: the domain in the prefix key

namespace ai {

// Who shares a cached prefix with whom.
//   Session: requests of processes in the same Unix session (a shell and
//            everything it starts); another session never hits, so it
//            cannot learn from its own latency what someone else asked.
//   Global:  every request shares with every other (fastest, not private).
//   Off:     nobody reuses a cached prefix (as ai.prefix_cache=0).
enum class PrefixShare : uint32_t {
  Session = KAI_AI_PREFIX_SHARE_SESSION,
  Global = KAI_AI_PREFIX_SHARE_GLOBAL,
  Off = KAI_AI_PREFIX_SHARE_OFF,
};
extern PrefixShare prefix_share;
const char* prefix_share_name(PrefixShare s);
// "session", "global" or "off"; false for anything else.
bool prefix_share_from_name(const char* name, PrefixShare* out);

// Under the priority policy, a queued request whose priority number is
// lower (better) than a running request's by at least preempt_gap takes
// that request's batch slot at the next iteration boundary. A preemption
// costs the victim a recomputation of everything it had fed, so a small
// difference in priority is not worth it: the default keeps the 16 levels
// in about three bands (0-4, 5-10, 11-15). A gap above the priority range
// (kNoPriorityPreemption) turns priority preemption off.
constexpr uint32_t kDefaultPreemptGap = 5;
constexpr uint32_t kNoPriorityPreemption = KAI_AI_MAX_PRIORITY + 1;
extern uint32_t preempt_gap;

// The rule itself: does a queued request of priority `urgent` take the
// batch slot of a running one of priority `victim`? (Lower is more urgent.)
constexpr bool preempts_for_priority(uint32_t urgent, uint32_t victim, uint32_t gap) {
  return gap <= KAI_AI_MAX_PRIORITY && victim >= urgent + gap;
}

// The domain rule, as pure functions (the host tests check them):
// the domain of a request from a process of Unix session `sid`...
constexpr uint32_t domain_for(PrefixShare share, int sid) {
  return share == PrefixShare::Session ? static_cast<uint32_t>(sid) : 0;
}
// (What the first block of its prompt is keyed by, the domain and the
// activation kind, is kv_cache.h's first_block_tag.)

// The fair policy's counters, one per process that has submitted (kept
// under every policy, so aistat can show how the service was shared; the
// preemptions made for priority are counters.h's). Protected by ai::lock.
extern FairCounters fair_counters;

// The prefix-cache domain of a request from a process of Unix session
// `sid`: the session under PrefixShare::Session, one domain for all under
// Global. It is taken from the process record, never from the request: a
// process cannot name another session's domain (docs/ai-service.md).
uint32_t prefix_domain(int sid);

// Called by ai_submit just before submit() (lock held): if `owner` has no
// request queued yet, it is becoming backlogged, and its counter is lifted
// to the smallest among the owners that have requests queued.
void note_backlogged(int owner);

// The sharing part of ai_info (lock held): prefix_share, preempt_gap,
// priority_preemptions and the clients, busiest first.
void fill_sharing_info(kai_ai_info& info);

}  // namespace ai
