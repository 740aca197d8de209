// TeamWidth: how many of a row team's threads take part in each product
// (the team's *width*). RowTeam (row_team.h) is the mechanism and asks
// this object three things: at the start of a forward pass, after each
// product, and at the end of a pass; after each it runs at width().
//
// Why a width at all: under QEMU a hart is a host thread, and a host may
// lend QEMU fewer cores than harts (`-smp 4` on a 2-core host, or a busy
// host). A helper that the host deschedules in the middle of a part it
// claimed then holds up the whole pass, and fewer threads are faster. The
// kernel cannot see the host's cores, so the team measures real time: the
// start of each pass is a window (PassWindows), and WidthControl judges it
// (width_control.h has the rule once, with its reasons). Once, after the
// models have loaded, survey() times a stand-in job at every width and
// starts at the fastest (width_survey.h). On real hardware, or a host with
// a core per hart, the width simply stays at the full team.
//
// It also holds the team's *limit* (`aictl harts H`): at most H threads
// take part, from the next pass on; each limit keeps its own control.
//
// Only the team's worker calls start(), begin_pass(), product_done(),
// end_pass() and survey(); set_limit() may come from any thread (an atomic
// word, applied by begin_pass()). The width changes only who computes which
// part, never the parts: the results are the same bits at every width.
#pragma once
#include <stdint.h>
#include "width_control.h"
#include "limits.h"   // kMaxTeamParts

namespace ai {

class RowTeam;

class TeamWidth {
 public:
  constexpr TeamWidth() = default;

  // A team of `threads` threads serving AI worker `worker` (for the trace),
  // at the full width under the full limit.
  void start(uint32_t threads, uint32_t worker);

  // The three calls of a forward pass; after each, the team runs at
  // width(). begin_pass() applies a limit asked for since the last pass;
  // it and end_pass() return false when the width cannot have changed
  // (they are on every pass's path, also of a team of one: kept inline).
  bool begin_pass() {
    uint32_t asked = limit();
    if (asked == limit_) return false;
    limit_ = asked;   // that limit's control picks the width; helpers beyond it sleep
    return true;
  }
  // A product (one job of the team) took ns of real time for macs multiply-adds.
  void product_done(uint64_t ns, uint64_t macs);
  bool end_pass() {
    if (limit_ <= 1) return false;
    windows().end_of_pass();   // the next window may be a probe
    return true;
  }

  // How many threads take part in the next product (1..the limit).
  uint32_t width() const { return windows().width(); }
  // The limit in force (1: a pass runs on the worker alone, as with ai.harts=1).
  uint32_t limit_in_force() const { return limit_; }

  // `aictl harts H` (KAI_AI_CTL_SET_HARTS): false if H is not in 1..threads.
  bool set_limit(uint32_t harts);
  uint32_t limit() const { return __atomic_load_n(&limit_asked_, __ATOMIC_RELAXED); }

  // Times a stand-in for matrix products on `team` at every width and
  // starts each limit's control at the fastest. A fraction of a second;
  // nothing about a result depends on it.
  void survey(RowTeam& team);

 private:
  PassWindows& windows() { return windows_by_limit_[limit_]; }
  const PassWindows& windows() const { return windows_by_limit_[limit_]; }
  void trace_window() const;   // the WIDTH event of a window that closed
  void trace_survey(uint32_t width, uint64_t ps, uint32_t verdict) const;   // ... of a survey window

  uint32_t threads_ = 1;
  uint32_t worker_ = 0;
  // The limit asked for (atomic; any thread) and the one in force.
  uint32_t limit_asked_ = 1;
  uint32_t limit_ = 1;
  // The windows and the control that judges them, one for each limit (a
  // team of that many threads). Each keeps its measurements while another
  // limit is in force, so switching back and forth does not start a
  // control over (its first probes would cost the runs after a switch).
  PassWindows windows_by_limit_[kMaxTeamParts + 1];
};

}  // namespace ai
