// The row team's width control: how many threads of a team (kernel/ai/
// row_team.h) take part in a forward pass. TeamWidth (team_width.h, which
// also says why a team has a width at all) measures; this class decides.
// Pure arithmetic: no lock, no clock, no kernel header, so the host
// tests (tests/host/test_width_control.cpp) feed it windows directly.
//
// The rule, once, with its reasons: docs/ai-service.md, "The row team's
// width" (a window is the start of a pass; the reference is the median of
// the last windows at the settled width; a neighbour is probed now and then
// and adopted after kProbeWins wins in a row; a loss backs off). The
// constants below are its numbers; the tuning story is in
// docs/notebook/2026-12-row-team-width.md.
//
// The width changes only who computes which part of a product, never the
// parts themselves, so the results are the same bits at every width; it may
// change between any two products, even in the middle of a pass.
#pragma once
#include <stdint.h>

namespace ai {

constexpr uint64_t kWindowMacs = 100'000'000;   // a SmolLM2-135M decode step is 135 M
constexpr uint32_t kProbeWindows = 4;       // settled windows before a probe, at first
// The longest wait while the host may have changed (after the survey, or
// when the settled width's speed has moved: kHostMovedBy): a window is about
// one decode step, so 32 windows find a better width within seconds.
constexpr uint32_t kQuickProbeWindows = 32;
// The longest wait on a host that holds still: lost probes in a row keep
// doubling it up to here, so lost probes cost under 0.5% of a TPOT
// (docs/notebook/2026-12-row-team-width.md, "Why the wait grows to 256 windows").
constexpr uint32_t kMaxProbeWindows = 256;
// The host "moved" when the reference (the settled width's time per
// multiply-add, same kind of work) differs by more than 1/kHostMovedBy from
// what it was when the last probe lost: then the wait is cut to
// kQuickProbeWindows, for another width may be best now. A quarter: this
// host's calibration loop moves by up to 2x within a boot; smaller drifts
// than a quarter rarely change which width wins.
constexpr uint64_t kHostMovedBy = 4;
constexpr uint64_t kBetterBy = 20;          // a probe must be 5% (1/20) faster to win
// A lost probe window cost `loss` (0.8: 80% slower than the reference) of
// a window more than the settled width would have. Waiting loss *
// kProbeShare windows before the next probe keeps that below 1/kProbeShare
// (3%) of the time, from the first lost probe on (doubling alone was too
// slow: docs/notebook/2026-12-row-team-width.md, "From the source comments").
constexpr uint64_t kProbeShare = 32;
constexpr uint32_t kProbeWins = 3;          // wins in a row that adopt a neighbour
constexpr uint32_t kMaxUnjudged = 3;        // probe windows not judged before an attempt gives up
// Why a median: one window at the settled width that the host stalled
// (2.4x slower, as `calib` saw within `make perf` boots) made a probe of a far
// slower width look faster than it. With the median of three, one stalled
// reference changes nothing; the host's slow drift (tens of percent over
// seconds) still enters within three windows.
constexpr uint32_t kReferenceWindows = 3;

// The median of v[0..n), n from 1 to 3 (of two, their mean): the
// reference's windows, and a survey's rounds of one width (width_survey.h).
uint64_t median_of(const uint64_t* v, uint32_t n);

// One closed measurement window, as TeamWidth measured it.
struct WidthWindow {
  uint64_t ns = 0;         // real time the window's products took
  uint64_t macs = 0;       // multiply-adds they did
  uint32_t products = 0;   // jobs posted to the team (a product or a fused group)
};

class WidthControl {
 public:
  enum class Phase : uint8_t {
    Settled,   // running at the settled width, counting down to a probe
    Probe,     // this window runs at the neighbour being tried
    Recheck,   // a probe won: one window at the settled width for a fresh reference
  };

  // What on_window made of the window that closed (the trace's WIDTH event
  // shows it; the numbers are KAI_TRACE_WIDTH_*).
  enum class Verdict : uint8_t {
    None = 0,       // nothing closed yet, or the window was ignored
    Reference = 1,  // a window at the settled width: it entered the reference
    Won = 2,        // a probe faster than the reference; a recheck comes next
    Adopted = 3,    // the kProbeWins-th win: the probe's width is now settled
    Lost = 4,       // a probe not clearly faster: back to the settled width
    Unjudged = 5,   // a probe that did other work than its reference
  };

  constexpr WidthControl() = default;
  // A team of `threads` threads (>= 1): starts settled at the full width.
  explicit constexpr WidthControl(uint32_t threads)
      : threads_(threads ? threads : 1), width_(threads_), settled_width_(threads_) {}

  // Starts over, settled at `width` (clamped to 1..threads) with no
  // reference yet: the width survey's choice (width_survey.h). The first
  // probe waits kQuickProbeWindows windows: the survey has just timed every
  // width, so an early probe would only repeat it.
  void start_at(uint32_t width);

  // The window that just closed ran at width(). Judges it and returns the
  // width for the next window (also width() from now on). A window with no
  // products or no multiply-adds is ignored.
  uint32_t on_window(const WidthWindow& window);

  uint32_t width() const { return width_; }                  // for the next window
  uint32_t settled_width() const { return settled_width_; }
  Phase phase() const { return phase_; }
  // What probes are judged against (ps per multiply-add; 0 before the first
  // settled window). The trace's WIDTH event shows it beside each window.
  uint64_t reference_ps() const { return reference_ps_; }
  Verdict verdict() const { return verdict_; }   // of the last window on_window took
  // Time per multiply-add in picoseconds (ns alone would round a SmolLM2
  // decode step's ~1.5 ns to 1 or 2).
  static uint64_t ps_per_mac(const WidthWindow& w) { return w.macs ? w.ns * 1000 / w.macs : 0; }
  // Settled windows between the end of a lost probe and the next probe.
  uint32_t probe_interval() const { return probe_interval_; }

 private:
  static uint64_t product_size(const WidthWindow& w) { return w.macs / w.products; }
  // Mean product sizes within 1/8 of each other: the same kind of work.
  static bool same_kind(uint64_t size, uint64_t ref);
  bool comparable(uint64_t product_size) const;
  // fresh: the width changed, so earlier windows are no reference.
  void take_reference(const WidthWindow& w, bool fresh);
  void start_probe();
  void judge_probe(const WidthWindow& w);
  uint32_t windows_to_afford(uint64_t probe_ps) const;
  void back_to_settled(uint32_t windows_to_probe);
  // After a settled window: cuts a long wait when the host has moved.
  void watch_host();

  uint32_t threads_ = 1;
  uint32_t width_ = 1;             // what the next window runs at
  uint32_t settled_width_ = 1;
  Phase phase_ = Phase::Settled;
  Verdict verdict_ = Verdict::None;
  uint32_t neighbour_ = 1;         // the width being tried (Probe, Recheck)
  uint32_t wins_ = 0;              // judged probes of neighbour_ won in a row
  uint32_t unjudged_ = 0;          // probe windows of this attempt not judged
  bool probe_down_ = true;         // which neighbour the next attempt tries
  // The reference: the median of the recent windows at the settled width.
  uint64_t reference_ps_ = 0;      // 0: none measured yet
  uint64_t reference_product_ = 0;
  uint64_t recent_ps_[kReferenceWindows] = {};   // a ring: the last windows' ps per mac
  uint32_t recent_count_ = 0;      // how many of recent_ps_ hold a window (<= kReferenceWindows)
  uint32_t recent_next_ = 0;       // where the next one goes
  uint32_t windows_to_probe_ = kProbeWindows;
  uint32_t probe_interval_ = kProbeWindows;
  // The reference (and its kind of work) when the last probe lost; 0: none,
  // or the wait was already cut.
  uint64_t host_ps_ = 0;
  uint64_t host_product_ = 0;
};

// Which products of the passes form the windows, and the width each product
// runs at. TeamWidth calls width() before a product, product_done() after it
// and end_of_pass() after each forward pass; WidthControl judges the windows.
//
// Why a window is the *start* of a pass and not whole passes: a probe then
// costs about kWindowMacs multiply-adds at the neighbour's width whatever the
// batch (docs/notebook/2026-12-row-team-width.md, "A probe window is the start of a pass").
// Measuring the same stretch of every pass also keeps a window's mix of
// products the same from window to window (the classifier, a large product,
// comes last and is never in a window of a pass larger than kWindowMacs).
class PassWindows {
 public:
  constexpr PassWindows() = default;
  explicit constexpr PassWindows(uint32_t threads) : control_(threads) {}

  // The width the next product runs at: the control's while a window is
  // being measured, the settled width for the rest of the pass.
  uint32_t width() const { return measuring_ ? control_.width() : control_.settled_width(); }
  // One product ended: ns of real time, macs multiply-adds. Closes the
  // window when it holds kWindowMacs; the pass's later products are then
  // not measured. Returns true when this product closed a window (then
  // last_window() is that window and control() has judged it).
  bool product_done(uint64_t ns, uint64_t macs);
  const WidthWindow& last_window() const { return last_window_; }
  uint32_t last_width() const { return last_width_; }   // the width it ran at
  // A forward pass ended: the next pass starts measuring again (a window
  // not yet full goes on).
  void end_of_pass() { measuring_ = true; }
  // The survey's choice: the control starts over at `width`, and the
  // window being measured (if any) is dropped.
  void start_at(uint32_t width) {
    control_.start_at(width);
    window_ = WidthWindow{};
    measuring_ = true;
  }

  const WidthControl& control() const { return control_; }
  bool measuring() const { return measuring_; }

 private:
  WidthControl control_;
  WidthWindow window_;      // the window being measured
  WidthWindow last_window_; // the one closed last
  uint32_t last_width_ = 0; // ... and its width
  bool measuring_ = true;   // false from a window's close to the end of its pass
};

}  // namespace ai
