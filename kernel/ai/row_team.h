// A row team: one AI worker plus helper kernel threads that split each
// matrix product of a batched forward pass by rows, so one iteration uses
// several harts (`ai.harts=H`). The runtime (lib/) only sees a function
// "run fn(arg, part) for every part and return when all are done"; this
// file is the kernel's answer to it.
//
// How it works: the worker publishes a job (fn, arg, parts) under the
// team's lock and bumps `generation`; each helper k (1..parts-1) wakes, runs
// part k, and counts itself done; the worker runs part 0 itself, then sleeps
// until every helper is done. Helpers are ordinary kernel threads: the
// scheduler puts them on whichever harts are free, and the timer preempts
// them like anyone else, so a team never keeps a hart from the system.
// Results do not depend on the number of parts: each output row is computed
// by exactly one part, in the same order as on one hart.
//
// Hand-off speed: a pass posts a job per matrix product, hundreds per token,
// so a helper must see a job within microseconds. Each waiting side first
// watches its counter for a short, bounded time (kSpinNs; the next job or
// the last helper usually arrives within it), then sleeps. A sleeping
// thread's hart idles in `wfi`, and wakeup() sends that hart an IPI
// (kernel/idle.cpp), so a hand-off never waits for a timer tick.
#pragma once
#include <stdint.h>
#include "../error.h"
#include "../spinlock.h"

namespace ai {

constexpr uint32_t kMaxTeamParts = 8;
// How long a waiting side spins before it sleeps. Short: a spinning hart is
// a busy host thread under QEMU, taken from harts that compute when there
// are more harts than host cores.
constexpr uint64_t kSpinNs = 20'000;

class RowTeam {
 public:
  constexpr RowTeam() = default;

  // Starts parts-1 helper threads named ai-rows<worker>.<k>. Returns the
  // number of parts actually available (1 if no helper could start).
  uint32_t start(uint32_t worker, uint32_t parts);

  uint32_t parts() const { return parts_; }

  // Runs fn(arg, p) for p in [0, parts()) and returns when all are done.
  void run(void (*fn)(void* arg, uint32_t part), void* arg);

 private:
  static void helper_main(void* self_and_part);
  void helper_loop(uint32_t part);

  Spinlock lock_{"ai-rows"};
  uint32_t parts_ = 1;
  // generation_ and pending_ change under lock_, and are also read without
  // it (atomic loads) while a side spins.
  uint64_t generation_ = 0;          // bumped for every job (under lock_)
  void (*fn_)(void*, uint32_t) = nullptr;
  void* arg_ = nullptr;
  uint32_t pending_ = 0;             // helpers still running the current job
};

}  // namespace ai
