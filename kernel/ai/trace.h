// The AI service's trace ring (the event layout is ABI: <kai/ai_trace.h>).
//
//   trace_boot()     reads ai.trace=N (and ai.trace_classes=M) at boot
//   trace::emit()    records one event stamped now, if its class is on
//   trace::emit_at() the same with a time the caller already took (so an
//                    event carries exactly the timestamp of kai_ai_result)
//   trace_control()  the ai_control commands: start, stop, clear, read
//
// The cost when off: each emit site is an inline load of `classes` and one
// branch that is never taken. Arguments are evaluated before the branch, as
// for any call: a site whose arguments need a function call guards itself
// with `if (trace::enabled(TYPE))`. When on, record() takes the ring's own spinlock,
// a leaf lock: it may be taken under ai::lock or a row team's lock, and
// nothing is taken under it. Any hart may record (row-team helpers do).
//
// The ring: events[seq % capacity] holds the event numbered seq, for the
// last `capacity` numbers before next_seq. A full ring overwrites its
// oldest event; a reader whose cursor is older learns how many it missed.
//
// Built for the host unit tests (-DKAI_AI_HOST) there is no ring: every
// emit site compiles to nothing.
#pragma once
#include <stdint.h>
#include <kai/ai_trace.h>
#ifndef KAI_AI_HOST
#include "../syscall.h"
#endif

namespace ai {

#ifndef KAI_AI_HOST
// At boot, before the loader starts (so model loading can be traced).
void trace_boot();
// The KAI_AI_CTL_TRACE_* commands of ai_control.
SyscallResult trace_control(uint64_t cmd, uint64_t arg);
#endif

namespace trace {

#ifdef KAI_AI_HOST
inline bool enabled(kai_trace_type) { return false; }
inline void record(kai_trace_type, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {}
#else
// Classes of events being recorded (KAI_TRACE_CLASS_*); 0 = off. Written
// under the ring's lock, read without it by the emit sites: a site that
// reads a stale value records one event more or less around a start or
// stop, which is harmless (record() checks again under the lock).
extern uint32_t classes;

constexpr uint32_t class_of(kai_trace_type type) {
  switch (type) {
#define KAI_TRACE_CLASS_OF_(number, name, cls, a0, a1, a2, a3, a4) \
  case KAI_TRACE_##name: return KAI_TRACE_CLASS_##cls;
    KAI_TRACE_EVENTS(KAI_TRACE_CLASS_OF_)
#undef KAI_TRACE_CLASS_OF_
  }
  return 0;
}

inline bool enabled(kai_trace_type type) {
  return __builtin_expect((__atomic_load_n(&classes, __ATOMIC_RELAXED) & class_of(type)) != 0, 0);
}

// t_ns == 0: stamped with clock_ns() under the ring's lock.
void record(kai_trace_type type, uint64_t t_ns, uint64_t request, uint32_t a0, uint32_t a1, uint32_t a2,
            uint32_t a3, uint32_t a4);
#endif

inline void emit(kai_trace_type type, uint64_t request, uint32_t a0 = 0, uint32_t a1 = 0, uint32_t a2 = 0,
                 uint32_t a3 = 0, uint32_t a4 = 0) {
  if (enabled(type)) record(type, 0, request, a0, a1, a2, a3, a4);
}

inline void emit_at(uint64_t t_ns, kai_trace_type type, uint64_t request, uint32_t a0 = 0, uint32_t a1 = 0,
                    uint32_t a2 = 0, uint32_t a3 = 0, uint32_t a4 = 0) {
  if (enabled(type)) record(type, t_ns, request, a0, a1, a2, a3, a4);
}

}  // namespace trace
}  // namespace ai
