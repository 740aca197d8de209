// A row team: one AI worker plus helper kernel threads that split each
// matrix product of a batched forward pass by rows, so one iteration uses
// several harts (`ai.harts=H`). The runtime (lib/) only sees a function
// "run fn(arg, part) for every part and return when all are done"; this
// file is the kernel's answer to it.
//
// How it works: a team of H threads splits each product into more parts
// than threads (kChunksPerHart per thread, at most kMaxChunks). The worker
// publishes a job (fn, arg) under the team's lock and bumps `generation`;
// then the worker and every helper claim parts one at a time from a shared
// counter and run them, until none is left; the worker returns once every
// part is done. Helpers are ordinary kernel threads: the scheduler puts
// them on whichever harts are free, and the timer preempts them like anyone
// else, so a team never keeps a hart from the system.
//
// Why claim parts rather than give thread k part k: under QEMU a hart is a
// host thread, and with more harts than host cores (or a busy host) one of
// them may be descheduled for milliseconds. With fixed parts the whole pass
// would wait for that one; with claimed parts the others take over its
// share, and a helper that wakes late finds nothing left and goes back to
// sleep. Results do not depend on who runs a part, or on how many parts
// there are: each output row is computed by exactly one part, the same way.
//
// Hand-off speed: a pass posts a job per product, or per group of products that
// share their inputs (lib/llm_rows.h), about 150 per decoded SMOL token,
// so a helper must see a job within microseconds. Each waiting side first
// watches its counter for a short, bounded time (kSpinNs; the next job or
// the last part usually arrives within it), then sleeps. A sleeping
// thread's hart idles in `wfi`, and wakeup() sends that hart an IPI
// (kernel/idle.cpp), so a hand-off never waits for a timer tick.
//
// How many threads take part (the team's *width*) is not the mechanism's
// business: a TeamWidth (team_width.h) decides it, because a host may lend
// QEMU fewer cores than harts, and then fewer threads can be faster. The
// team asks it at the start of a pass, after each product and at the end
// of a pass; helpers beyond the width sleep and claim nothing. The width
// changes only who computes which part, never the parts themselves:
// results are the same bits at every width.
#pragma once
#include <stdint.h>
#include "../error.h"
#include "../spinlock.h"
#include "team_width.h"
#include "limits.h"   // kMaxTeamParts

namespace ai {

// Parts per thread of a product. The last part leaves the other threads
// idle until it ends, about half a part on average; more parts cost a claim
// each (an atomic add), which is far less (8 against 4 measured in
// docs/notebook/2026-12-row-team-width.md, "From the source comments").
constexpr uint32_t kChunksPerHart = 8;
constexpr uint32_t kMaxChunks = 16;      // == llm::kMaxParts: the runtime uses no more
// How long a waiting side spins before it sleeps. Bounded: a spinning hart
// is a busy host thread under QEMU, taken from harts that compute when there
// are more harts than host cores. Long enough to cover the usual gap between
// two jobs of one request (the worker alone: a norm, RoPE, quantizing):
// docs/notebook/2026-12-row-team-width.md, "Helpers spin 100 us".
constexpr uint64_t kSpinNs = 100'000;

class RowTeam {
 public:
  constexpr RowTeam() = default;

  // Starts parts-1 helper threads named ai-rows<worker>.<k>. Returns the
  // number of threads actually in the team (1 if no helper could start).
  uint32_t start(uint32_t worker, uint32_t parts);

  uint32_t parts() const { return threads_; }   // threads (harts) in the team
  uint32_t chunks() const { return chunks_; }   // parts a product is split into
  // Threads that currently take part (1..parts(); see the top).
  uint32_t width() const { return __atomic_load_n(&width_, __ATOMIC_RELAXED); }

  // Runs fn(arg, c) for c in [0, chunks()) and returns when all are done.
  // macs: the job's size, for the width control.
  void run(void (*fn)(void* arg, uint32_t part), void* arg, uint64_t macs);
  // Posts one job, runs parts of it, and returns when every part is done
  // (run() without the width's measurement: the survey times these).
  void run_job(void (*fn)(void* arg, uint32_t part), void* arg);
  // From now on threads 0..width-1 take part; the others sleep.
  void set_width(uint32_t width);

  // The team's *limit* (`aictl harts H`, KAI_AI_CTL_SET_HARTS): at most H
  // of its threads take part, from the next forward pass on. Any thread may
  // ask; the worker applies it between passes (begin_forward), so a pass
  // never changes team in the middle. Returns false if H is not in
  // 1..parts(). Why at run time: a student (and `make perf`) can then
  // compare one hart with two in one boot, run against run, on the same
  // host conditions, instead of across two boots.
  bool set_limit(uint32_t harts) { return width_policy_.set_limit(harts); }
  uint32_t limit() const { return width_policy_.limit(); }
  // The worker, before each forward pass: applies a new limit and returns
  // the parts a product is cut into: 1 under a limit of 1 (the pass then
  // runs on the worker alone, exactly as with ai.harts=1), else chunks().
  uint32_t begin_forward();

  // The worker, after each forward pass: the width for the next one.
  void end_of_forward();

  // The worker, once, while it is idle after the models have loaded: times
  // every width (TeamWidth::survey, width_survey.h has the rule and why).
  // Takes a fraction of a second; nothing about a result depends on it.
  void survey();

 private:
  static void helper_main(void* self_and_part);
  void helper_loop(uint32_t index);
  void follow_width();   // set_width(width_policy_.width()) if it changed
  // Claims and runs parts of job `generation` until none is left.
  void run_parts(uint64_t generation, void (*fn)(void*, uint32_t), void* arg);

  Spinlock lock_{"ai-rows"};
  uint32_t threads_ = 1;
  uint32_t chunks_ = 1;
  uint32_t worker_ = 0;              // the AI worker this team serves (for the trace)
  // generation_ changes under lock_ and is also read without it (atomic
  // loads) while a helper spins. next_ and done_ are atomics only.
  uint64_t generation_ = 0;          // bumped for every job (under lock_)
  void (*fn_)(void*, uint32_t) = nullptr;   // the job (under lock_)
  void* arg_ = nullptr;
  // The next part to claim: generation in the high 32 bits, part index in
  // the low 32. One word, so a helper still holding an old job's generation
  // can never claim (and run with the old fn) a part of a newer job.
  uint64_t next_ = 0;
  uint32_t done_ = 0;                // parts of the current job finished
  uint32_t sleeping_helpers_ = 0;    // helpers asleep on &generation_ (under lock_)
  bool worker_sleeping_ = false;     // the worker is asleep on &done_ (under lock_)
  // The width in force: written by the worker under lock_ and read by
  // helpers with atomic loads; helpers at index >= width_ sleep on &width_.
  uint32_t width_ = 1;
  TeamWidth width_policy_;   // what the width should be (the worker's own)
};

}  // namespace ai
