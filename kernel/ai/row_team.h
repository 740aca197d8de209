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
// How many threads take part: under QEMU each hart is a host thread, and
// with more harts than free host cores (`-smp 4` on a 2-core host, or a busy
// host) a helper's hart can be descheduled by the host for milliseconds in
// the middle of a part it claimed. Claiming cannot help with that part: the
// whole pass waits for it, hundreds of times per token, and a team of 3 on
// 2 host cores ran twice as slow as a team of 2. The kernel cannot see how
// many host cores it has, so it measures: over windows of whole forward
// passes (at least kWindowMacs multiply-adds, so a window holds every kind
// of product in its usual mix), the worker computes the real time per
// multiply-add at the current width, and every kProbeWindows windows it
// tries one window at a neighbouring width (one thread fewer or more, in
// turn). It keeps a width that was faster by more than 1/kBetterBy; a probe
// whose window had other work than the window before it (a prompt chunk
// against a decode step: products of another size) is not judged. Helpers beyond the width sleep
// and claim nothing. A failed probe doubles the wait before the next one
// (up to kMaxProbeWindows), so a steady host costs few probes.
// The width changes only who computes which part, never the parts
// themselves: results are the same bits at every width.
//
// Hand-off speed: a pass posts a job per matrix product, hundreds per token,
// so a helper must see a job within microseconds. Each waiting side first
// watches its counter for a short, bounded time (kSpinNs; the next job or
// the last part usually arrives within it), then sleeps. A sleeping
// thread's hart idles in `wfi`, and wakeup() sends that hart an IPI
// (kernel/idle.cpp), so a hand-off never waits for a timer tick.
#pragma once
#include <stdint.h>
#include "../error.h"
#include "../spinlock.h"

namespace ai {

constexpr uint32_t kMaxTeamParts = 8;    // threads in a team (the ai.harts limit)
constexpr uint32_t kChunksPerHart = 4;   // parts per thread of a product
constexpr uint32_t kMaxChunks = 16;      // == llm::kMaxParts: the runtime uses no more
// How long a waiting side spins before it sleeps. Short: a spinning hart is
// a busy host thread under QEMU, taken from harts that compute when there
// are more harts than host cores.
constexpr uint64_t kSpinNs = 20'000;
// Width control (see the top).
constexpr uint64_t kWindowMacs = 100'000'000;   // a SmolLM2-135M decode step is 135 M
constexpr uint32_t kProbeWindows = 4;        // windows between probes, at first
constexpr uint32_t kMaxProbeWindows = 256;   // ... and at most (about a minute of passes)
constexpr uint64_t kBetterBy = 20;           // a probe must be 5% faster to be kept

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

 private:
  static void helper_main(void* self_and_part);
  void helper_loop(uint32_t index);
 public:
  // The worker calls it after each forward pass: closes a window when it
  // holds enough work, and decides the width (see the top).
  void end_of_forward();
 private:
  void set_width(uint32_t width);
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
  // Width control. width_ is written by the worker under lock_ and read by
  // helpers with atomic loads; helpers at index >= width_ sleep on &width_.
  uint32_t width_ = 1;
  // The worker's own bookkeeping (only the worker touches it): the window
  // being measured, the time per multiply-add (ps) last measured at the
  // width in use and at the probe's, and when to probe next.
  uint32_t window_passes_ = 0;
  uint64_t window_ns_ = 0, window_macs_ = 0;
  uint64_t settled_ps_per_mac_ = 0;   // at settled_width_ (0: not measured yet)
  uint64_t settled_macs_per_pass_ = 0;   // the kind of work it was measured on
  uint32_t settled_width_ = 1;
  bool probing_ = false;              // this window runs at a neighbouring width
  bool probe_down_ = true;            // which neighbour the next probe tries
  uint32_t windows_to_probe_ = kProbeWindows, probe_windows_ = kProbeWindows;
};

}  // namespace ai
