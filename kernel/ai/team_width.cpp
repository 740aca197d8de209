// TeamWidth: see team_width.h. The worker's own, no lock: only the team's
// worker calls it, except set_limit() (an atomic store). The survey drives
// the team through RowTeam::set_width and RowTeam::run_job.
#include "team_width.h"
#include "row_team.h"
#include "trace.h"
#include "width_survey.h"
#include "../trap.h"

namespace ai {

namespace {

// A trace argument is 32 bits: larger figures (a stalled window) show as the maximum.
constexpr uint32_t clamp32(uint64_t v) { return v > 0xffffffffu ? 0xffffffffu : uint32_t(v); }

}  // namespace

void TeamWidth::start(uint32_t threads, uint32_t worker) {
  threads_ = threads;
  worker_ = worker;
  for (uint32_t k = 1; k <= threads; k++) windows_by_limit_[k] = PassWindows(k);
  limit_ = threads;
  __atomic_store_n(&limit_asked_, threads, __ATOMIC_RELAXED);
}

void TeamWidth::product_done(uint64_t ns, uint64_t macs) {
  // A window that closes here puts the rest of the pass at the settled width.
  if (windows().product_done(ns, macs)) trace_window();
}

bool TeamWidth::set_limit(uint32_t harts) {
  if (harts < 1 || harts > threads_) return false;
  __atomic_store_n(&limit_asked_, harts, __ATOMIC_RELAXED);
  return true;
}

// The WIDTH event: the window that just closed and what the control made
// of it, so a trace shows why a team runs at the width it does.
void TeamWidth::trace_window() const {
  using V = WidthControl::Verdict;
  static_assert(uint32_t(V::Reference) == KAI_TRACE_WIDTH_REFERENCE && uint32_t(V::Won) == KAI_TRACE_WIDTH_WON &&
                    uint32_t(V::Adopted) == KAI_TRACE_WIDTH_ADOPTED && uint32_t(V::Lost) == KAI_TRACE_WIDTH_LOST &&
                    uint32_t(V::Unjudged) == KAI_TRACE_WIDTH_UNJUDGED,
                "the verdicts are the trace's numbers");
  if (!trace::enabled(KAI_TRACE_WIDTH)) return;
  const WidthControl& control = windows().control();
  uint64_t ps = WidthControl::ps_per_mac(windows().last_window());
  uint64_t ref = control.reference_ps();
  trace::emit(KAI_TRACE_WIDTH, 0, worker_, windows().last_width(), clamp32(ps), clamp32(ref),
              uint32_t(control.verdict()));
}

// ---- the width survey (width_survey.h) ----------------------------------------

namespace {

// The survey's stand-in for a matrix product: each part multiplies and adds
// kSurveyPartSteps bytes of a table, one load, one multiply and one add per
// step, as an int8 product does; a window is kSurveyJobs such products. The
// sizes follow a SmolLM2-135M decode step, so that a survey window sees
// what a real one sees: a job of about a millisecond (a 576 x 1536 product)
// cut into parts of tens of microseconds, and a window of about 30 ms.
constexpr uint32_t kSurveyTableBytes = 4096;
constexpr uint32_t kSurveyPartSteps = 16384;
constexpr uint32_t kSurveyJobs = 32;

struct SurveyWork {
  int8_t table[kSurveyTableBytes];   // on the worker's stack (direct-mapped: every hart reads it)
  int64_t sums[kMaxChunks];          // each part's result, so the loop is not dropped
};

void survey_part(void* arg, uint32_t part) {
  auto* work = static_cast<SurveyWork*>(arg);
  int64_t sum = 0;
  for (uint32_t i = 0; i < kSurveyPartSteps; i++)
    sum += int32_t(work->table[i % kSurveyTableBytes]) * int32_t(work->table[(i * 7 + part) % kSurveyTableBytes]);
  work->sums[part] = sum;
}

}  // namespace

void TeamWidth::survey(RowTeam& team) {
  static_assert(WidthSurvey::kMaxSurveyWidth == kMaxTeamParts, "a survey covers every team");
  if (threads_ <= 1) return;
  SurveyWork work;
  for (uint32_t i = 0; i < kSurveyTableBytes; i++) work.table[i] = int8_t(i * 37 + 11);
  WidthSurvey survey(threads_);
  for (uint32_t w = survey.next_width(); w != 0; w = survey.next_width()) {
    team.set_width(w);
    uint64_t start = clock_ns();
    for (uint32_t j = 0; j < kSurveyJobs; j++) team.run_job(survey_part, &work);
    WidthWindow window{clock_ns() - start, uint64_t(kSurveyJobs) * team.chunks() * kSurveyPartSteps, kSurveyJobs};
    survey.record(window);
    trace_survey(w, WidthControl::ps_per_mac(window), KAI_TRACE_WIDTH_SURVEY);
  }
  // Every limit's control starts at the best width it allows.
  for (uint32_t k = 2; k <= threads_; k++) windows_by_limit_[k].start_at(survey.best(k));
  uint32_t chosen = survey.best(threads_);
  trace_survey(chosen, survey.median_ps(chosen), KAI_TRACE_WIDTH_SURVEYED);
}

void TeamWidth::trace_survey(uint32_t width, uint64_t ps, uint32_t verdict) const {
  trace::emit(KAI_TRACE_WIDTH, 0, worker_, width, clamp32(ps), 0, verdict);
}

}  // namespace ai
