// The row team's width survey: once, the first time the worker is idle
// after the models have loaded, the team times a stand-in for matrix
// products at every width, and the width control
// (width_control.h) starts at the width that ran fastest. Pure arithmetic:
// TeamWidth::survey (team_width.cpp) runs the windows and feeds them here; the
// host tests (tests/host/test_width_survey.cpp) feed made-up ones.
//
// Why survey at all: without it a team starts at its full width and finds a
// better one only by probing during requests, which took seconds of slow
// requests after boot (docs/notebook/2026-12-row-team-width.md, "The survey").
// The survey costs a fraction of a second while nobody waits.
//
// The rule (kSurveyRounds rounds of one window per width, up and down in
// turn; a width's figure is its median; a wider width is chosen only if it
// beats the choice so far by 1/kBetterBy): docs/ai-service.md, "The row
// team's width": "Where a team starts".
#pragma once
#include <stdint.h>
#include "width_control.h"

namespace ai {

constexpr uint32_t kSurveyRounds = 3;   // windows per width (an odd number: a true median)

class WidthSurvey {
 public:
  // A team of `threads` threads (1..kMaxSurveyWidth).
  explicit constexpr WidthSurvey(uint32_t threads)
      : threads_(threads < 1 ? 1 : threads > kMaxSurveyWidth ? kMaxSurveyWidth : threads) {}

  static constexpr uint32_t kMaxSurveyWidth = 8;   // == kMaxTeamParts (row_team.h checks it)

  // The width of the next window to time, or 0 when the survey is complete.
  uint32_t next_width() const;
  // The window just timed ran at next_width(). A window without work is
  // taken as infinitely slow (it cannot win).
  void record(const WidthWindow& window);

  bool done() const { return next_width() == 0; }
  // The median time per unit of work at width w (ps), once done().
  uint64_t median_ps(uint32_t width) const;
  // The width to start at under a limit of `limit` threads, once done().
  uint32_t best(uint32_t limit) const;
  uint32_t threads() const { return threads_; }

 private:
  uint32_t threads_;
  uint32_t taken_ = 0;   // windows recorded so far: round taken_ / threads_
  uint64_t ps_[kMaxSurveyWidth + 1][kSurveyRounds] = {};
};

}  // namespace ai
