// The row team's boot-time width survey (kernel/ai/width_survey.h), fed
// made-up windows. Each host below says how many picoseconds per unit of
// work a window at each width takes, round by round; the expected choices
// are worked out by hand from the rule in width_survey.h (median of three
// rounds; a wider width must beat the narrower choice by more than 5%):
//   - the order of the windows: 1..T, T..1, 1..T, then done;
//   - the host of `-smp 4` on 2 cores: 2 threads beat 1 and 3;
//   - one stalled window of the best width changes nothing (a mean would
//     have picked 1 thread);
//   - 4% faster is not enough for a wider width, 6% is;
//   - under a limit of k threads, the best of 1..k;
//   - a window without work never wins;
//   - the width control starts at the choice and waits 32 windows before
//     its first probe (not 4, as it does without a survey).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "../../kernel/ai/width_survey.h"

using ai::PassWindows;
using ai::WidthControl;
using ai::WidthSurvey;
using ai::WidthWindow;

namespace {

// A window of 1 M units at `ps` picoseconds each.
WidthWindow window_at(uint64_t ps) { return {ps * 1'000'000 / 1000, 1'000'000, 32}; }

// Runs the survey on a host given as ps[round][width - 1]; returns the
// widths in the order the survey asked for them.
std::vector<uint32_t> run(WidthSurvey& survey, const std::vector<std::vector<uint64_t>>& ps) {
  std::vector<uint32_t> order;
  uint32_t taken = 0;
  while (!survey.done()) {
    uint32_t w = survey.next_width();
    order.push_back(w);
    survey.record(window_at(ps[taken / survey.threads()][w - 1]));
    taken++;
    REQUIRE(taken <= 3 * survey.threads());
  }
  return order;
}

}  // namespace

TEST_CASE("the survey times every width once per round, up, then down, then up", "[width][survey]") {
  WidthSurvey three(3);
  auto order = run(three, {{100, 100, 100}, {100, 100, 100}, {100, 100, 100}});
  CHECK(order == std::vector<uint32_t>{1, 2, 3, 3, 2, 1, 1, 2, 3});
  CHECK(three.next_width() == 0);
  WidthSurvey one(1);
  CHECK(run(one, {{100}, {100}, {100}}) == std::vector<uint32_t>{1, 1, 1});
  CHECK(one.best(1) == 1);
}

TEST_CASE("a team of three on a host where two threads are best starts at two", "[width][survey]") {
  // -smp 4 on 2 host cores: one thread 2900 ps, two 1500, three 1750 (one
  // round lucky at 1530, one unlucky at 3050).
  WidthSurvey survey(3);
  run(survey, {{2900, 1480, 3050}, {2870, 1460, 1750}, {2850, 1500, 1530}});
  CHECK(survey.median_ps(1) == 2870);
  CHECK(survey.median_ps(2) == 1480);
  CHECK(survey.median_ps(3) == 1750);
  CHECK(survey.best(3) == 2);
  CHECK(survey.best(2) == 2);
  CHECK(survey.best(1) == 1);
}

TEST_CASE("one stalled window of the fastest width does not change the choice", "[width][survey]") {
  // Two threads 1000 ps, but one window stalled at 5000: the mean
  // (2333) would lose to one thread's 1800; the median (1000) wins.
  WidthSurvey survey(2);
  run(survey, {{1800, 1000}, {1800, 5000}, {1800, 1000}});
  CHECK(survey.median_ps(2) == 1000);
  CHECK(survey.best(2) == 2);
}

TEST_CASE("a wider width must be more than 5% faster to be chosen", "[width][survey]") {
  SECTION("4% faster: one thread stays") {
    WidthSurvey survey(2);
    run(survey, {{1000, 960}, {1000, 960}, {1000, 960}});
    CHECK(survey.best(2) == 1);   // 960 + 960 / 20 = 1008 >= 1000
  }
  SECTION("6% faster: two threads") {
    WidthSurvey survey(2);
    run(survey, {{1000, 940}, {1000, 940}, {1000, 940}});
    CHECK(survey.best(2) == 2);   // 940 + 47 = 987 < 1000
  }
  SECTION("each step up is judged against the choice so far, not the next narrower width") {
    // 2 is not 5% better than 1; 3 is 5% better than 1 (and than 2).
    WidthSurvey survey(3);
    run(survey, {{1000, 970, 900}, {1000, 970, 900}, {1000, 970, 900}});
    CHECK(survey.best(2) == 1);
    CHECK(survey.best(3) == 3);
  }
}

TEST_CASE("under a limit the survey picks the best width the limit allows", "[width][survey]") {
  WidthSurvey survey(4);
  run(survey, {{1800, 1000, 900, 1500}, {1800, 1000, 900, 1500}, {1800, 1000, 900, 1500}});
  CHECK(survey.best(4) == 3);
  CHECK(survey.best(3) == 3);
  CHECK(survey.best(2) == 2);
  CHECK(survey.best(1) == 1);
  CHECK(survey.best(9) == 3);   // a limit past the team is the team
}

TEST_CASE("a survey window without work never wins", "[width][survey]") {
  WidthSurvey survey(2);
  for (int i = 0; i < 6; i++) {
    uint32_t w = survey.next_width();
    survey.record(w == 2 ? WidthWindow{} : window_at(1800));
  }
  CHECK(survey.done());
  CHECK(survey.median_ps(2) == UINT64_MAX);
  CHECK(survey.best(2) == 1);
}

TEST_CASE("the width control starts at the survey's choice and probes after 32 windows", "[width][survey]") {
  WidthControl control(3);
  control.start_at(2);
  CHECK(control.width() == 2);
  CHECK(control.settled_width() == 2);
  CHECK(control.reference_ps() == 0);
  CHECK(control.probe_interval() == ai::kQuickProbeWindows);
  // Decode-sized windows where 2 threads are best: 32 references at 2, then
  // the first probe (one thread fewer).
  const WidthWindow at2{1000 * 135'000'000ull / 1000, 135'000'000, 210};
  for (uint32_t i = 0; i < ai::kQuickProbeWindows; i++) {
    REQUIRE(control.width() == 2);
    control.on_window(at2);
    REQUIRE(control.verdict() == WidthControl::Verdict::Reference);
  }
  CHECK(control.width() == 1);
  CHECK(control.phase() == WidthControl::Phase::Probe);

  // Out of range: clamped to the team.
  WidthControl clamp(3);
  clamp.start_at(7);
  CHECK(clamp.width() == 3);
  clamp.start_at(0);
  CHECK(clamp.width() == 1);
}

TEST_CASE("PassWindows drops a half-measured window when the survey restarts it", "[width][survey]") {
  PassWindows windows(2);
  CHECK_FALSE(windows.product_done(1000, 60'000'000));   // 60 M of a 100 M window
  windows.start_at(1);
  CHECK(windows.width() == 1);
  // A new window: 60 M more does not close it (it would have with the old 60 M).
  CHECK_FALSE(windows.product_done(1000, 60'000'000));
  CHECK(windows.product_done(1000, 60'000'000));
  CHECK(windows.last_window().macs == 120'000'000);
}
