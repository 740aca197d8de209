// Scheduling policies of the AI service: which queued request a free worker
// runs next. Each policy is one small function over the ready requests in
// arrival order; pick_next() (scheduler.cpp) applies the aging rule first and
// then asks the policy in force. See docs/ai-service.md, "Scheduling policies".
#pragma once
#include <stdint.h>
#include <kai/ai_abi.h>

namespace ai {

struct Request;

enum class Policy : uint32_t {
  Fcfs = KAI_AI_POLICY_FCFS,          // arrival order: fair, but a long job blocks all behind it
  Sjf = KAI_AI_POLICY_SJF,            // least remaining work first: best mean wait, starves long jobs
  Priority = KAI_AI_POLICY_PRIORITY,  // lowest priority number first, arrival order among equals
  Fair = KAI_AI_POLICY_FAIR,          // the least-served process's oldest request (fair_share.h)
};

// Chooses among ready[0..n) (n >= 1, in arrival order); returns an index.
using PolicyFn = int (*)(Request* const* ready, int n);
int choose_fcfs(Request* const* ready, int n);
int choose_sjf(Request* const* ready, int n);
int choose_priority(Request* const* ready, int n);
int choose_fair(Request* const* ready, int n);
PolicyFn policy_function(Policy p);

const char* policy_name(Policy p);
// "fcfs", "sjf", "priority" or "fair"; false for anything else.
bool policy_from_name(const char* name, Policy* out);
bool policy_from_number(uint64_t value, Policy* out);

// Work a queued request still needs, in tokens: its context to feed plus
// the tokens not yet generated (what "shortest job" means here).
uint32_t remaining_work(const Request& r);

}  // namespace ai
