// The AI service's trace: a bounded ring of fixed-size binary events, each
// stamped with the kernel clock (clock_ns(), the clock of kai_ai_result),
// that records every decision of the engine: requests arriving, admitted,
// preempted and finished; each iteration and what it computed; every token
// published; KV blocks taken, freed, evicted and found in the prefix cache;
// row-team parts per hart; model loading at boot.
//
// Off by default. `ai.trace=N` on the kernel command line makes a ring of N
// events at boot and starts recording at once (so the model loading is in
// it); ai_control starts, stops, clears and reads it (commands below).
// A full ring overwrites its oldest events: readers see the gap as
// `dropped`. /bin/aitrace prints the events as text lines; tools/trace.py
// turns those lines into a timeline (docs/trace.md).
//
// This layout is ABI with its own version: a reader checks
// kai_ai_trace_read.version against KAI_TRACE_VERSION. New event types and
// new meanings for an unused argument are added without a version change;
// a change of the struct or of an existing meaning bumps it.
#pragma once
#include <stdint.h>

#define KAI_TRACE_VERSION 1

// One event: 56 bytes, the same for every type.
struct kai_trace_event {
  uint64_t seq;        // 0, 1, 2, ... since the ring was last cleared
  uint64_t t_ns;       // kernel clock_ns() when it happened
  // Instructions the recording hart had retired (its instret counter). The
  // difference between two events of one hart is the exact number of
  // instructions between them; in exact mode (QEMU -icount) it does not
  // depend on where the 100 ns steps of the clock fall, so two boots of the
  // same workload give the same differences, to the instruction.
  uint64_t instret;
  uint64_t request;    // the request's id (ai_submit's return), 0 if none
  uint16_t type;       // KAI_TRACE_*
  uint16_t hart;       // index of the hart that recorded it (0 = the boot hart)
  uint32_t arg[5];     // meanings per type: KAI_TRACE_EVENTS below
};

// Every event type: X(number, NAME, class, names of arg[0..4]) with "" for
// an unused argument. The names are what /bin/aitrace prints as
// name=value, and what tools/trace.py reads back. Numbers are ABI: never
// renumber, only append.
//
//   SUBMIT        ai_submit queued it (t = kai_ai_result.t_submit_ns); queue
//                 = requests queued or running before it
//   ADMIT         a worker took it from the queue (t = t_start_ns at its first
//                 admission); policy = KAI_AI_POLICY_*, queue = still queued after
//   PREEMPT       its KV blocks were taken back; it goes back to the queue and
//                 will be recomputed; cause = KAI_TRACE_CAUSE_*, lost = positions
//   CANCEL        ai_cancel (or the owner's exit) asked it to stop; state =
//                 KAI_AI_QUEUED or KAI_AI_RUNNING when asked
//   FINISH        it ended (t = t_finish_ns); reason = KAI_AI_FINISH_*
//   ITER_BEGIN    a worker's iteration starts (after planning): its requests
//                 and tokens, and the budget and max_batch it planned under
//   ITEM          one request's part of that iteration: phase =
//                 KAI_TRACE_PHASE_*, tokens fed from position `first`
//   ITER_END      the iteration's tokens are published
//   TOKEN         an output token was published (t = the time ai_read reports);
//                 index = its place in the output
//   KV_TAKE       blocks given to a request; used = the pool's blocks in use after
//   KV_FREE       a request's blocks given back (cached = those kept as prefix)
//   KV_EVICT      cached prefix blocks reused for someone else
//   PREFIX_HIT    admission found `tokens` prompt tokens in the prefix cache
//   PART_BEGIN    a row-team part starts computing on this hart (part 0 is the
//                 worker itself); only with KAI_TRACE_CLASS_PARTS
//   PART_END      ... and ends
//   LOAD          model loading at boot: phase = KAI_TRACE_LOAD_*
//   STARTED       recording started: capacity and class mask
//   SAMPLE        a timer interrupt found this hart running at pc = pc_hi:pc_lo;
//                 mode = KAI_TRACE_MODE_*, pid = the process running (0: none,
//                 the hart was idle), ra_lo = the low 32 bits of its return
//                 address (names the caller of a leaf function). A sampling
//                 profiler: where the real time goes, TICK_HZ samples per
//                 second per hart (tools/hotspots.py)
//   WIDTH         a row team's measuring window closed (kernel/ai/width_control.h):
//                 it ran at `width` threads, at ps_per_mac picoseconds of real
//                 time per multiply-add; reference_ps = what probes are judged
//                 against after it; verdict = KAI_TRACE_WIDTH_* (only teams of
//                 2 or more threads measure)
//   DRAFT         N scheduled, k accepted: a request's iteration carried
//                 `drafted` proposed tokens, of which `accepted` were kept;
//                 fed = its position after the rollback of the rest
#define KAI_TRACE_EVENTS(X)                                                           \
  X(1, SUBMIT, REQUESTS, "model", "prompt", "predict", "priority", "queue")          \
  X(2, ADMIT, REQUESTS, "worker", "policy", "queue", "running", "")                  \
  X(3, PREEMPT, REQUESTS, "worker", "cause", "lost", "", "")                         \
  X(4, CANCEL, REQUESTS, "state", "", "", "", "")                                    \
  X(5, FINISH, REQUESTS, "reason", "generated", "error", "worker", "")               \
  X(6, ITER_BEGIN, ITERATIONS, "worker", "requests", "tokens", "budget", "max_batch") \
  X(7, ITEM, ITERATIONS, "worker", "phase", "first", "count", "")                    \
  X(8, ITER_END, ITERATIONS, "worker", "requests", "tokens", "", "")                 \
  X(9, TOKEN, TOKENS, "worker", "index", "token", "", "")                            \
  X(10, KV_TAKE, KV, "model", "blocks", "used", "", "")                              \
  X(11, KV_FREE, KV, "model", "blocks", "used", "cached", "")                        \
  X(12, KV_EVICT, KV, "model", "blocks", "used", "", "")                             \
  X(13, PREFIX_HIT, KV, "model", "blocks", "tokens", "", "")                         \
  X(14, PART_BEGIN, PARTS, "worker", "part", "", "", "")                             \
  X(15, PART_END, PARTS, "worker", "part", "", "", "")                               \
  X(16, LOAD, LOAD, "model", "phase", "", "", "")                                    \
  X(17, STARTED, ALL, "capacity", "classes", "", "", "")                             \
  X(18, SAMPLE, SAMPLES, "pc_lo", "pc_hi", "mode", "pid", "ra_lo")                   \
  X(19, WIDTH, ITERATIONS, "worker", "width", "ps_per_mac", "reference_ps", "verdict") \
  X(20, DRAFT, ITERATIONS, "worker", "drafted", "accepted", "fed", "")

enum kai_trace_type : uint16_t {
#define KAI_TRACE_ENUM_(number, name, cls, a0, a1, a2, a3, a4) KAI_TRACE_##name = number,
  KAI_TRACE_EVENTS(KAI_TRACE_ENUM_)
#undef KAI_TRACE_ENUM_
};

// Classes of events, for the start command's mask. Row-team parts come two
// per matrix product (hundreds per iteration), and samples a hundred per
// second per hart, so both are off unless asked.
#define KAI_TRACE_CLASS_REQUESTS   0x01
#define KAI_TRACE_CLASS_ITERATIONS 0x02
#define KAI_TRACE_CLASS_TOKENS     0x04
#define KAI_TRACE_CLASS_KV         0x08
#define KAI_TRACE_CLASS_PARTS      0x10
#define KAI_TRACE_CLASS_LOAD       0x20
#define KAI_TRACE_CLASS_SAMPLES    0x40
#define KAI_TRACE_CLASS_ALL        0x7f
#define KAI_TRACE_CLASS_DEFAULT    (KAI_TRACE_CLASS_ALL & ~KAI_TRACE_CLASS_PARTS & ~KAI_TRACE_CLASS_SAMPLES)

// ITEM phase
#define KAI_TRACE_PHASE_PREFILL 1   // prompt tokens (or, after a preemption, the context again)
#define KAI_TRACE_PHASE_DECODE  2   // the one token that yields the next

// PREEMPT cause
#define KAI_TRACE_CAUSE_KV_FULL 1   // no free or evictable KV block for a running request
#define KAI_TRACE_CAUSE_PRIORITY 2  // a more urgent queued request took its batch slot (ai.preempt_gap)

// SAMPLE mode
#define KAI_TRACE_MODE_KERNEL 0     // supervisor code (pc in kernel.elf)
#define KAI_TRACE_MODE_USER   1     // user code of process pid (pc in its program)

// WIDTH verdicts: what the width control made of the window.
#define KAI_TRACE_WIDTH_REFERENCE 1  // at the settled width: it entered the reference
#define KAI_TRACE_WIDTH_WON       2  // a probe faster than the reference; a recheck follows
#define KAI_TRACE_WIDTH_ADOPTED   3  // the last win needed: `width` is now the settled width
#define KAI_TRACE_WIDTH_LOST      4  // a probe not clearly faster: back to the settled width
#define KAI_TRACE_WIDTH_UNJUDGED  5  // a probe that did other work than its reference
#define KAI_TRACE_WIDTH_SURVEY    6  // a window of the boot-time survey (reference_ps 0)
#define KAI_TRACE_WIDTH_SURVEYED  7  // the survey's choice: the median of `width`'s windows

// LOAD phase
#define KAI_TRACE_LOAD_PROBED  1    // the bundle's header is read and checked
#define KAI_TRACE_LOAD_WEIGHTS 2    // reading the weights begins
#define KAI_TRACE_LOAD_READY   3    // weights in memory, KV pool made: requests can run
#define KAI_TRACE_LOAD_FAILED  4

// ai_control commands (the same rule as every ai_control: init or the
// console's foreground process).
#define KAI_AI_CTL_TRACE_START 16   // arg: class mask (0 = KAI_TRACE_CLASS_DEFAULT); makes a
                                    // ring of KAI_TRACE_DEFAULT_EVENTS if the boot made none
#define KAI_AI_CTL_TRACE_STOP  17   // arg: 0; events stay readable
#define KAI_AI_CTL_TRACE_CLEAR 18   // arg: 0; forgets every event, seq starts at 0 again
#define KAI_AI_CTL_TRACE_READ  19   // arg: struct kai_ai_trace_read*; returns events copied
#define KAI_TRACE_DEFAULT_EVENTS 8192
#define KAI_TRACE_MAX_EVENTS (1u << 20)   // ai.trace=N: 1..this

// KAI_AI_CTL_TRACE_READ: copies the events with seq >= cursor (oldest
// first, at most `capacity`) to events[] and moves the cursor past them.
// A cursor behind the oldest event still held starts at the oldest, and
// `dropped` says how many events were lost in between (overwritten).
// Returns the number copied (0: nothing new); -KAI_EFAULT for a bad
// pointer (the struct or the buffer), -KAI_EINVAL for a nonzero reserved
// field or capacity 0, -KAI_ENODEV when there is no ring (never started).
struct kai_ai_trace_read {
  uint64_t cursor;                  // in: first seq wanted; out: the seq to ask for next
  struct kai_trace_event* events;   // in: room for `capacity` events
  uint32_t capacity;                // in
  uint32_t version;                 // out: KAI_TRACE_VERSION
  uint64_t dropped;                 // out: events between the cursor and the first copied, lost
  uint64_t next_seq;                // out: seq the next event will get (all events ever recorded)
  uint32_t ring_events;             // out: the ring's capacity
  uint32_t classes;                 // out: class mask recording now (0: stopped)
  uint32_t reserved[2];             // in: must be 0
};
