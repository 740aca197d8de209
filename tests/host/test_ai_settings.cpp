// The AI service's settings table (kernel/ai/settings.h): one row per
// setting, each range checked in one place. What the boot options and
// ai_control rely on: every default lies in its range, names are unique,
// set_setting refuses a value outside the range and changes nothing, and a
// value inside reaches the variable the engine reads.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "../../kernel/ai/settings.h"
#include "../../kernel/ai/scheduler.h"
#include "../../kernel/ai/proposer.h"

TEST_CASE("every setting's default is in its range and names are unique", "[ai][settings]") {
  std::set<std::string> names;
  for (uint32_t i = 0; i < ai::kSettingCount; i++) {
    const ai::Setting& s = ai::kSettings[i];
    INFO(s.name);
    REQUIRE(names.insert(s.name).second);
    REQUIRE(std::string(s.name).rfind("ai.", 0) == 0);
    REQUIRE(s.lo <= s.hi);
    if (std::string(s.name) == "ai.harts") continue;   // 0 until start() sets every hart
    REQUIRE(s.get() >= s.lo);
    REQUIRE(s.get() <= s.hi);
    REQUIRE(ai::find_setting(s.name) == &s);
  }
  REQUIRE(ai::find_setting("ai.no_such_setting") == nullptr);
}

TEST_CASE("set_setting refuses out of range and applies in range", "[ai][settings]") {
  const ai::Setting& batch = *ai::find_setting("ai.max_batch");
  uint32_t before = ai::max_batch;
  REQUIRE_FALSE(ai::set_setting(batch, 0));
  REQUIRE_FALSE(ai::set_setting(batch, uint64_t(ai::kMaxBatch) + 1));
  REQUIRE_FALSE(ai::set_setting(batch, uint64_t(1) << 40));   // not truncated to 32 bits
  REQUIRE(ai::max_batch == before);
  REQUIRE(ai::set_setting(batch, 3));
  REQUIRE(ai::max_batch == 3);
  REQUIRE(ai::set_setting(batch, before));
  // A setting kept in other units: aging is milliseconds here, nanoseconds in the scheduler.
  const ai::Setting& aging = *ai::find_setting("ai.aging_ms");
  uint64_t aging_before = ai::aging_ns;
  REQUIRE(ai::set_setting(aging, 250));
  REQUIRE(ai::aging_ns == 250000000ull);
  REQUIRE(aging.get() == 250);
  REQUIRE_FALSE(ai::set_setting(aging, 3600001));
  REQUIRE(ai::aging_ns == 250000000ull);
  ai::aging_ns = aging_before;
  const ai::Setting& drafts = *ai::find_setting("ai.drafts");
  REQUIRE_FALSE(ai::set_setting(drafts, ai::kMaxDrafts + 1));
  REQUIRE(ai::max_drafts == 0);
}
