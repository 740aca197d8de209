// The width survey's rule: see width_survey.h. No lock: only the team's
// worker thread uses a survey, at boot.
#include "width_survey.h"

namespace ai {

static_assert(kSurveyRounds % 2 == 1, "the median of an odd number of rounds is one of them");
static_assert(kSurveyRounds <= 3, "median_of (width_control.h) takes at most three");

uint32_t WidthSurvey::next_width() const {
  uint32_t round = taken_ / threads_;
  if (round >= kSurveyRounds) return 0;
  uint32_t k = taken_ % threads_;
  return round % 2 == 0 ? k + 1 : threads_ - k;   // 1..T, then T..1, then 1..T
}

void WidthSurvey::record(const WidthWindow& w) {
  uint32_t width = next_width();
  if (width == 0) return;
  uint64_t ps = w.macs ? WidthControl::ps_per_mac(w) : UINT64_MAX;
  ps_[width][taken_ / threads_] = ps;
  taken_++;
}

uint64_t WidthSurvey::median_ps(uint32_t width) const {
  if (width < 1 || width > threads_) return UINT64_MAX;
  return median_of(ps_[width], kSurveyRounds);
}

uint32_t WidthSurvey::best(uint32_t limit) const {
  if (limit > threads_) limit = threads_;
  uint32_t best = 1;
  for (uint32_t w = 2; w <= limit; w++) {
    uint64_t ps = median_ps(w), ref = median_ps(best);
    if (ps != UINT64_MAX && ps + ps / kBetterBy < ref) best = w;
  }
  return best;
}

}  // namespace ai
