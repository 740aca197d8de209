// The width control's rule (width_control.h has it in words):
//   on_window      one closed window: a settled window becomes the reference
//                  and counts down to a probe; a probe window is judged; a
//                  recheck window becomes the reference and the probe repeats
//   judge_probe    not comparable: not judged (give up after kMaxUnjudged);
//                  lost: back, wait twice as long (longer after a clear
//                  loss: windows_to_afford); won: recheck, or adopt
//                  after kProbeWins wins
//   watch_host     a settled window of a host that moved since the last loss
//                  cuts a long wait to kQuickProbeWindows
//   PassWindows    which products form the windows: the start of each pass
// No lock: only the team's worker thread calls them (RowTeam::run and
// RowTeam::end_of_forward).
#include "width_control.h"

namespace ai {

uint32_t WidthControl::on_window(const WidthWindow& w) {
  verdict_ = Verdict::None;
  if (threads_ <= 1 || w.macs == 0 || w.products == 0) return width_;
  switch (phase_) {
    case Phase::Settled:
      verdict_ = Verdict::Reference;
      take_reference(w, false);
      watch_host();
      if (--windows_to_probe_ == 0) start_probe();
      break;
    case Phase::Recheck:
      verdict_ = Verdict::Reference;   // back at the settled width, as any settled window
      take_reference(w, false);
      phase_ = Phase::Probe;
      width_ = neighbour_;
      break;
    case Phase::Probe:
      judge_probe(w);
      break;
  }
  return width_;
}

void WidthControl::start_at(uint32_t width) {
  if (width < 1) width = 1;
  if (width > threads_) width = threads_;
  *this = WidthControl(threads_);
  settled_width_ = width;
  width_ = width;
  probe_interval_ = kQuickProbeWindows;
  windows_to_probe_ = kQuickProbeWindows;
}

// Same kind of work as the reference: mean product size within 1/8. A
// prompt chunk's products are many times a decode step's, and run at
// another speed per multiply-add whatever the width.
bool WidthControl::same_kind(uint64_t size, uint64_t ref) { return size + size / 8 >= ref && ref + ref / 8 >= size; }

bool WidthControl::comparable(uint64_t size) const { return same_kind(size, reference_product_); }

static_assert(kReferenceWindows <= 3, "median_of takes at most three");
uint64_t median_of(const uint64_t* v, uint32_t n) {
  if (n == 1) return v[0];
  if (n == 2) return (v[0] + v[1]) / 2;
  uint64_t a = v[0], b = v[1], c = v[2];   // n == 3
  if (a > b) {   // now a <= b
    uint64_t t = a;
    a = b;
    b = t;
  }
  if (b > c) b = c;   // b: the smaller of the two larger ones
  return a > b ? a : b;
}

void WidthControl::take_reference(const WidthWindow& w, bool fresh) {
  uint64_t size = product_size(w);
  if (fresh || !comparable(size)) {
    recent_count_ = 0;
    recent_next_ = 0;
  }
  recent_ps_[recent_next_] = ps_per_mac(w);
  recent_next_ = (recent_next_ + 1) % kReferenceWindows;
  if (recent_count_ < kReferenceWindows) recent_count_++;
  reference_product_ = size;
  reference_ps_ = median_of(recent_ps_, recent_count_);
}

void WidthControl::start_probe() {
  // Alternately one thread fewer and one more; at either end, the only
  // neighbour there is.
  uint32_t w = settled_width_;
  bool down = probe_down_ ? w > 1 : w >= threads_;
  probe_down_ = !probe_down_;
  neighbour_ = down ? w - 1 : w + 1;
  wins_ = 0;
  unjudged_ = 0;
  phase_ = Phase::Probe;
  width_ = neighbour_;
}

void WidthControl::judge_probe(const WidthWindow& w) {
  if (!comparable(product_size(w))) {
    verdict_ = Verdict::Unjudged;
    // Not judged: a fresh reference at the settled width, then the same
    // probe again (wins_ stays as it was); or, after kMaxUnjudged of them,
    // no verdict: the next attempt after the usual wait.
    if (++unjudged_ >= kMaxUnjudged) {
      back_to_settled(probe_interval_);
      return;
    }
    phase_ = Phase::Recheck;
    width_ = settled_width_;
    return;
  }
  uint64_t ps = ps_per_mac(w);
  if (ps + ps / kBetterBy >= reference_ps_) {
    verdict_ = Verdict::Lost;
    // Lost (or not clearly faster): back at once, and probe at most half as
    // often; after a clear loss, rarely enough that probing costs little.
    // The host as this loss saw it: if it moves, the wait is cut short.
    uint32_t wait = probe_interval_ * 2;
    uint32_t affordable = windows_to_afford(ps);
    if (wait < affordable) wait = affordable;
    probe_interval_ = wait < kMaxProbeWindows ? wait : kMaxProbeWindows;
    host_ps_ = reference_ps_;
    host_product_ = reference_product_;
    back_to_settled(probe_interval_);
    return;
  }
  if (++wins_ < kProbeWins) {
    verdict_ = Verdict::Won;
    // Won once: check against a fresh measurement at the settled width.
    phase_ = Phase::Recheck;
    width_ = settled_width_;
    return;
  }
  // Won every time: the neighbour is the new settled width, with this
  // window as its reference; probe again soon (the host may have changed,
  // and the other neighbour may be better still).
  verdict_ = Verdict::Adopted;
  settled_width_ = neighbour_;
  take_reference(w, true);
  probe_interval_ = kProbeWindows;
  host_ps_ = 0;
  back_to_settled(probe_interval_);
}

// Settled windows per probe that keep a probe as slow as this one (ps per
// multiply-add against the reference) at 1/kProbeShare of the time:
// ceil(loss * kProbeShare), loss = (ps - reference) / reference.
uint32_t WidthControl::windows_to_afford(uint64_t ps) const {
  if (ps <= reference_ps_ || reference_ps_ == 0) return 0;
  uint64_t windows = ((ps - reference_ps_) * kProbeShare + reference_ps_ - 1) / reference_ps_;
  return windows < kMaxProbeWindows ? uint32_t(windows) : kMaxProbeWindows;
}

// A wait longer than kQuickProbeWindows is for a host that holds still. When
// the settled width's time per multiply-add (a full reference, the same kind
// of work as at the last loss) has moved by more than 1/kHostMovedBy, the
// host has changed and another width may be best: probe within
// kQuickProbeWindows windows, and double from there again.
void WidthControl::watch_host() {
  if (!host_ps_ || recent_count_ < kReferenceWindows) return;
  if (!same_kind(reference_product_, host_product_)) return;   // other work: no comparison
  uint64_t diff = reference_ps_ > host_ps_ ? reference_ps_ - host_ps_ : host_ps_ - reference_ps_;
  if (diff * kHostMovedBy <= host_ps_) return;
  host_ps_ = 0;
  if (probe_interval_ > kQuickProbeWindows) probe_interval_ = kQuickProbeWindows;
  if (windows_to_probe_ > kQuickProbeWindows) windows_to_probe_ = kQuickProbeWindows;
}

void WidthControl::back_to_settled(uint32_t windows_to_probe) {
  phase_ = Phase::Settled;
  width_ = settled_width_;
  windows_to_probe_ = windows_to_probe;
}

bool PassWindows::product_done(uint64_t ns, uint64_t macs) {
  if (!measuring_) return false;
  window_.ns += ns;
  window_.macs += macs;
  window_.products++;
  if (window_.macs < kWindowMacs) return false;
  last_width_ = control_.width();   // a window runs at one width: it changes only here
  control_.on_window(window_);
  last_window_ = window_;
  window_ = WidthWindow{};
  measuring_ = false;
  return true;
}

}  // namespace ai
