// Row teams: see row_team.h. Locking: lock_ protects generation_, fn_ and
// arg_; helpers sleep on &generation_, the worker on &done_ (both with
// lock_). Each side notes under lock_ that it sleeps (sleeping_helpers_,
// worker_sleeping_), and the other calls wakeup() only then: wakeup()
// visits every slot of the process table, taking each one's lock (some
// 20 us under QEMU), and a product is handed off hundreds of times per
// token, usually to a thread that is still spinning. Parts are claimed
// with a compare-and-swap on next_ and counted with an atomic add on done_,
// without the lock. Before sleeping, each side
// spins on its counter for at most kSpinNs; it then takes the lock and
// checks again, so the spin is only a faster path to the same answer.
#include "row_team.h"
#include "trace.h"
#include "width_survey.h"
#include "../printf.h"
#include "../proc.h"
#include "../trap.h"
#include "llm_batch.h"

namespace ai {

static_assert(kMaxChunks == llm::kMaxParts, "the runtime splits a product into at most kMaxParts");

namespace {

// Spins while still_waiting() holds, for at most kSpinNs.
template <typename Pred>
void spin_briefly(Pred still_waiting) {
  uint64_t deadline = clock_ns() + kSpinNs;
  while (still_waiting() && clock_ns() < deadline) {
  }
}

constexpr uint64_t tag(uint64_t generation) { return generation << 32; }

// A trace argument is 32 bits: larger figures (a stalled window) show as the maximum.
constexpr uint32_t clamp32(uint64_t v) { return v > 0xffffffffu ? 0xffffffffu : uint32_t(v); }

// A helper thread's argument: its team, in one static table (kernel
// threads take one pointer).
struct HelperArg {
  RowTeam* team;
  uint32_t index;   // 1.. (the worker is 0)
};
constexpr uint32_t kMaxHelpers = 4 * kMaxTeamParts;
HelperArg helper_args[kMaxHelpers];
uint32_t n_helper_args;   // only start() (at boot, one thread) touches it

}  // namespace

uint32_t RowTeam::start(uint32_t worker, uint32_t parts) {
  if (parts > kMaxTeamParts) parts = kMaxTeamParts;
  uint32_t started = 1;   // the worker itself
  for (uint32_t k = 1; k < parts && n_helper_args < kMaxHelpers; k++) {
    HelperArg* a = &helper_args[n_helper_args++];
    a->team = this;
    a->index = k;
    char name[16];
    ksnprintf(name, sizeof name, "ai-rows%u.%u", worker, k);
    if (kthread_create(name, helper_main, a).is_error()) {
      kprintf("ai: cannot start %s; worker %u uses %u harts\n", name, worker, started);
      break;
    }
    started++;
  }
  SpinlockGuard guard(lock_);
  threads_ = started;
  for (uint32_t k = 1; k <= started; k++) windows_by_limit_[k] = PassWindows(k);
  limit_ = started;
  __atomic_store_n(&limit_asked_, started, __ATOMIC_RELAXED);
  width_ = windows().width();
  worker_ = worker;
  uint32_t chunks = started == 1 ? 1 : started * kChunksPerHart;
  chunks_ = chunks < kMaxChunks ? chunks : kMaxChunks;
  return started;
}

void RowTeam::helper_main(void* p) {
  auto* a = static_cast<HelperArg*>(p);
  a->team->helper_loop(a->index);
}

void RowTeam::run_parts(uint64_t generation, void (*fn)(void*, uint32_t), void* arg) {
  for (;;) {
    uint64_t next = __atomic_load_n(&next_, __ATOMIC_ACQUIRE);
    if ((next >> 32) != (generation & 0xffffffffu) || (next & 0xffffffffu) >= chunks_) return;
    if (!__atomic_compare_exchange_n(&next_, &next, next + 1, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      continue;   // another thread took this part: try the next
    uint32_t part = static_cast<uint32_t>(next & 0xffffffffu);
    trace::emit(KAI_TRACE_PART_BEGIN, 0, worker_, part);
    fn(arg, part);   // preemptible like any thread
    trace::emit(KAI_TRACE_PART_END, 0, worker_, part);
    if (__atomic_add_fetch(&done_, 1, __ATOMIC_ACQ_REL) == chunks_) {
      SpinlockGuard guard(lock_);   // the worker checks done_ under lock_ before it sleeps
      if (worker_sleeping_) wakeup(&done_);
    }
  }
}

void RowTeam::helper_loop(uint32_t index) {
  uint64_t seen = 0;
  for (;;) {
    // Outside the team's width: sleep (no spinning) until it grows.
    if (index >= width()) {
      SpinlockGuard guard(lock_);
      while (index >= width_) sleep(&width_, lock_);
      seen = generation_;   // jobs posted meanwhile are done or taken
    }
    // The next job often comes at once: the next matrix product of the pass.
    spin_briefly([&] { return __atomic_load_n(&generation_, __ATOMIC_ACQUIRE) == seen; });
    void (*fn)(void*, uint32_t);
    void* arg;
    {
      SpinlockGuard guard(lock_);
      while (generation_ == seen && index < width_) {
        sleeping_helpers_++;
        sleep(&generation_, lock_);
        sleeping_helpers_--;
      }
      if (index >= width_) continue;
      seen = generation_;
      fn = fn_;
      arg = arg_;
    }
    run_parts(seen, fn, arg);   // nothing left if the others were quicker
  }
}

void RowTeam::run(void (*fn)(void* arg, uint32_t part), void* arg, uint64_t macs) {
  if (threads_ <= 1) {
    trace::emit(KAI_TRACE_PART_BEGIN, 0, worker_, 0);
    fn(arg, 0);
    trace::emit(KAI_TRACE_PART_END, 0, worker_, 0);
    return;
  }
  uint64_t posted = clock_ns();
  run_job(fn, arg);
  // The width control's measurement; a window that closes here puts the
  // rest of the pass at the settled width.
  if (windows().product_done(clock_ns() - posted, macs)) trace_window();
  follow_windows();
}

void RowTeam::run_job(void (*fn)(void* arg, uint32_t part), void* arg) {
  uint64_t generation;
  {
    SpinlockGuard guard(lock_);
    fn_ = fn;
    arg_ = arg;
    generation = (generation_ + 1) & 0xffffffffu;   // it lives in 32 bits of next_
    __atomic_store_n(&done_, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&next_, tag(generation), __ATOMIC_RELEASE);
    __atomic_store_n(&generation_, generation, __ATOMIC_RELEASE);   // helpers may be spinning
    if (sleeping_helpers_) wakeup(&generation_);   // the others are spinning and see it
  }
  run_parts(generation, fn, arg);
  // The parts left are running on other harts and end about now.
  spin_briefly([&] { return __atomic_load_n(&done_, __ATOMIC_ACQUIRE) < chunks_; });
  {
    SpinlockGuard guard(lock_);
    while (__atomic_load_n(&done_, __ATOMIC_ACQUIRE) < chunks_) {
      worker_sleeping_ = true;
      sleep(&done_, lock_);
      worker_sleeping_ = false;
    }
  }
}

// The WIDTH event: the window that just closed and what the control made
// of it, so a trace shows why a team runs at the width it does.
void RowTeam::trace_window() const {
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

void RowTeam::survey() {
  static_assert(WidthSurvey::kMaxSurveyWidth == kMaxTeamParts, "a survey covers every team");
  if (threads_ <= 1) return;
  SurveyWork work;
  for (uint32_t i = 0; i < kSurveyTableBytes; i++) work.table[i] = int8_t(i * 37 + 11);
  WidthSurvey survey(threads_);
  for (uint32_t w = survey.next_width(); w != 0; w = survey.next_width()) {
    set_width(w);
    uint64_t start = clock_ns();
    for (uint32_t j = 0; j < kSurveyJobs; j++) run_job(survey_part, &work);
    WidthWindow window{clock_ns() - start, uint64_t(kSurveyJobs) * chunks_ * kSurveyPartSteps, kSurveyJobs};
    survey.record(window);
    trace_survey(w, WidthControl::ps_per_mac(window), KAI_TRACE_WIDTH_SURVEY);
  }
  // Every limit's control starts at the best width it allows.
  for (uint32_t k = 2; k <= threads_; k++) windows_by_limit_[k].start_at(survey.best(k));
  uint32_t chosen = survey.best(threads_);
  trace_survey(chosen, survey.median_ps(chosen), KAI_TRACE_WIDTH_SURVEYED);
  follow_windows();   // the width of the limit in force (a limit of 1: 1)
}

void RowTeam::trace_survey(uint32_t width, uint64_t ps, uint32_t verdict) const {
  trace::emit(KAI_TRACE_WIDTH, 0, worker_, width, clamp32(ps), 0, verdict);
}

bool RowTeam::set_limit(uint32_t harts) {
  if (harts < 1 || harts > threads_) return false;
  __atomic_store_n(&limit_asked_, harts, __ATOMIC_RELAXED);
  return true;
}

uint32_t RowTeam::begin_forward() {
  uint32_t asked = limit();
  if (asked != limit_) {
    limit_ = asked;
    follow_windows();   // that limit's control picks the width; helpers beyond it sleep
  }
  return limit_ <= 1 ? 1 : chunks_;
}

void RowTeam::end_of_forward() {
  if (limit_ <= 1) return;
  windows().end_of_pass();
  follow_windows();   // the next window may be a probe
}

void RowTeam::follow_windows() {
  uint32_t next = windows().width();
  if (next != width()) set_width(next);
}

void RowTeam::set_width(uint32_t width) {
  SpinlockGuard guard(lock_);
  __atomic_store_n(&width_, width, __ATOMIC_RELEASE);
  wakeup(&width_);   // a helper back inside the width starts claiming
}

}  // namespace ai
