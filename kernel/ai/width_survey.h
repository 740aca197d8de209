// The row team's width survey: once, the first time the worker is idle
// after the models have loaded, the team times a stand-in for matrix
// products at every width, and the width control
// (width_control.h) starts at the width that ran fastest. Pure arithmetic:
// RowTeam::survey (row_team.cpp) runs the windows and feeds them here; the
// host tests (tests/host/test_width_survey.cpp) feed made-up ones.
//
// Why survey at all: without it a team starts at its full width and finds a
// better one only by probing during requests, which took seconds of slow
// requests after boot (docs/notebook/2026-12-row-team-width.md, "The survey").
// The survey costs a fraction of a second while nobody waits.
//
// The rule:
//   - kSurveyRounds rounds; each round times one window at every width,
//     from 1 up in odd rounds and from the full width down in even ones, so
//     a host that speeds up or slows down during the survey favours no
//     width.
//   - A width's figure is the median of its rounds' time per unit of work
//     (a host stall in one window changes nothing).
//   - The choice starts at 1 thread; a wider width replaces it only if it
//     is faster by more than 1/kBetterBy (5%), the margin a probe must win
//     by. Equal speed at more threads is no gain, and the harts stay free
//     for the shell and the clients.
//   - A team under a limit of k threads (`aictl harts k`) starts at the
//     best width from 1 to k, by the same rule.
// The probes go on afterwards as before, so a wrong choice (or a host that
// changes) is still corrected, only less often at first: the survey has
// just measured every width (width_control.h, start_at).
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
