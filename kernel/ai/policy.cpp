// The four scheduling policies, one function each. All of them see only
// requests that are ready (their model is loaded) and already past the aging
// check in pick_next() (scheduler.cpp), so each can be written as if starvation did not exist.
#include "policy.h"
#include "requests.h"
#include "platform.h"
#include "sharing.h"

namespace ai {

uint32_t remaining_work(const Request& r) {
  // Tokens still to feed: its whole context (a queued request has nothing
  // in a session: a preempted one is recomputed), then one per token to come.
  return context_len(r) + (r.n_predict - r.n_generated);
}

int choose_fcfs(Request* const*, int) { return 0; }   // the oldest: ready[] is in arrival order

int choose_sjf(Request* const* ready, int n) {
  int best = 0;
  // Strictly less: among equal work the earlier arrival wins.
  for (int i = 1; i < n; i++)
    if (remaining_work(*ready[i]) < remaining_work(*ready[best])) best = i;
  return best;
}

int choose_priority(Request* const* ready, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (ready[i]->priority < ready[best]->priority) best = i;
  return best;
}

// The virtual token counters decide (fair_share.h): ready[] is in arrival
// order and least_served() keeps the first of equals, so each process's
// requests go in the order it sent them.
int choose_fair(Request* const* ready, int n) {
  int owners[kQueueCapacity];
  for (int i = 0; i < n; i++) owners[i] = ready[i]->owner_pid;
  return fair_counters.least_served(owners, n);
}

PolicyFn policy_function(Policy p) {
  switch (p) {
    case Policy::Sjf: return choose_sjf;
    case Policy::Priority: return choose_priority;
    case Policy::Fair: return choose_fair;
    case Policy::Fcfs: break;
  }
  return choose_fcfs;
}

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::Sjf: return "sjf";
    case Policy::Priority: return "priority";
    case Policy::Fair: return "fair";
    case Policy::Fcfs: break;
  }
  return "fcfs";
}

bool policy_from_name(const char* name, Policy* out) {
  static constexpr Policy kAll[] = {Policy::Fcfs, Policy::Sjf, Policy::Priority, Policy::Fair};
  for (Policy p : kAll) {
    if (strcmp(name, policy_name(p)) == 0) {
      *out = p;
      return true;
    }
  }
  return false;
}

bool policy_from_number(uint64_t value, Policy* out) {
  if (value > KAI_AI_POLICY_FAIR) return false;
  *out = static_cast<Policy>(value);
  return true;
}

}  // namespace ai
