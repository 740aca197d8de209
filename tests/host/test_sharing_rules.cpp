// The sharing rules of the AI service as the kernel applies them
// (kernel/ai/sharing.h): which cache domain a request gets, what keys its
// first prefix block, and when priority preemption happens.
#include <catch2/catch.hpp>

#include <set>

#include "../../kernel/ai/sharing.h"

using ai::PrefixShare;

TEST_CASE("cache domains: a session under session sharing, one for all under global", "[sharing]") {
  CHECK(ai::domain_for(PrefixShare::Session, 1) == 1);
  CHECK(ai::domain_for(PrefixShare::Session, 42) == 42);
  CHECK(ai::domain_for(PrefixShare::Session, 42) != ai::domain_for(PrefixShare::Session, 43));
  CHECK(ai::domain_for(PrefixShare::Global, 1) == ai::domain_for(PrefixShare::Global, 43));
}

TEST_CASE("first block tags: equal exactly for the same domain and activation kind", "[sharing]") {
  // Every (domain, kind) pair of sessions 0..999 gets its own tag: a block
  // cached by one session is never found from another, and int8 and float
  // K/V rows never mix.
  std::set<uint32_t> tags;
  for (uint32_t domain = 0; domain < 1000; domain++)
    for (bool int8 : {false, true}) CHECK(tags.insert(ai::first_block_tag(domain, int8)).second);
  CHECK(ai::first_block_tag(7, true) == ai::first_block_tag(7, true));
  // Session sharing: processes of one session share, of two do not.
  uint32_t a = ai::domain_for(PrefixShare::Session, 10), b = ai::domain_for(PrefixShare::Session, 11);
  CHECK(ai::first_block_tag(a, false) == ai::first_block_tag(ai::domain_for(PrefixShare::Session, 10), false));
  CHECK(ai::first_block_tag(a, false) != ai::first_block_tag(b, false));
  // Global sharing: the two sessions share.
  CHECK(ai::first_block_tag(ai::domain_for(PrefixShare::Global, 10), false) ==
        ai::first_block_tag(ai::domain_for(PrefixShare::Global, 11), false));
}

TEST_CASE("priority preemption: only a gap of at least ai.preempt_gap preempts", "[sharing]") {
  using ai::preempts_for_priority;
  // The default gap: 0 preempts 5..15, not 4; 10 preempts 15 only.
  CHECK(preempts_for_priority(0, 10, ai::kDefaultPreemptGap));
  CHECK(preempts_for_priority(0, 5, ai::kDefaultPreemptGap));
  CHECK_FALSE(preempts_for_priority(0, 4, ai::kDefaultPreemptGap));
  CHECK(preempts_for_priority(10, 15, ai::kDefaultPreemptGap));
  CHECK_FALSE(preempts_for_priority(11, 15, ai::kDefaultPreemptGap));
  // Never for an equal or more urgent victim, whatever the gap.
  for (uint32_t gap = 1; gap <= ai::kNoPriorityPreemption; gap++)
    for (uint32_t p = 0; p <= KAI_AI_MAX_PRIORITY; p++)
      for (uint32_t v = 0; v <= p; v++) CHECK_FALSE(preempts_for_priority(p, v, gap));
  // A gap above the priority range turns it off: not even 0 against 15.
  CHECK_FALSE(preempts_for_priority(0, KAI_AI_MAX_PRIORITY, ai::kNoPriorityPreemption));
  // Gap 1: any strictly more urgent request preempts.
  CHECK(preempts_for_priority(3, 4, 1));
}
