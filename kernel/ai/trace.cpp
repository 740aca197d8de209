// The trace ring: see trace.h. Map: the ring and its lock; record() (every
// emit site ends here); trace_boot() (ai.trace=N); trace_control() (start,
// stop, clear, read). Locking: ring_lock guards everything below it; it is
// a leaf lock (nothing else is taken while it is held), so any code may
// record, whatever locks it holds.
#include "trace.h"
#include "../boot.h"
#include "../cpu.h"
#include "../fdt.h"
#include "../idle.h"
#include "../kalloc.h"
#include "../printf.h"
#include "../trap.h"
#include "../user_ptr.h"

namespace ai {
namespace trace {

uint32_t classes;   // see trace.h: written under ring_lock

}  // namespace trace

namespace {

Spinlock ring_lock{"ai-trace"};
// Invariant: events holds the events numbered [oldest(), next_seq), the
// one numbered s at events[s % capacity]; capacity is fixed once the ring
// exists (it is never freed: an emit site on another hart may be about to
// write into it).
kai_trace_event* events;   // nullptr: no ring yet
uint32_t capacity;
uint64_t next_seq;

static_assert(sizeof(kai_trace_event) == 56, "the event layout is ABI: change KAI_TRACE_VERSION with it");

uint64_t read_instret() {
  uint64_t n;
  asm volatile("csrr %0, instret" : "=r"(n));
  return n;
}

uint64_t oldest() { return next_seq > capacity ? next_seq - capacity : 0; }

// Lock held.
void put(kai_trace_type type, uint64_t t_ns, uint64_t request, uint32_t a0, uint32_t a1, uint32_t a2,
         uint32_t a3, uint32_t a4) {
  kai_trace_event& e = events[next_seq % capacity];
  e.seq = next_seq++;
  e.t_ns = t_ns != 0 ? t_ns : clock_ns();
  e.instret = read_instret();
  e.request = request;
  e.type = type;
  e.hart = static_cast<uint16_t>(cpu_index());   // interrupts are off: we stay on this hart
  e.arg[0] = a0;
  e.arg[1] = a1;
  e.arg[2] = a2;
  e.arg[3] = a3;
  e.arg[4] = a4;
}

// Makes the ring if there is none. Called without ring_lock: the
// allocation may take a while, and only ai_control (under the console rule)
// or the boot calls it. False: no memory.
bool make_ring(uint32_t n) {
  {
    SpinlockGuard guard(ring_lock);
    if (events != nullptr) return true;
  }
  auto* ring = static_cast<kai_trace_event*>(kalloc_contiguous(uint64_t(n) * sizeof(kai_trace_event)));
  if (ring == nullptr) return false;
  SpinlockGuard guard(ring_lock);
  if (events != nullptr) {   // someone else made one meanwhile
    kfree_contiguous(ring, uint64_t(n) * sizeof(kai_trace_event));
    return true;
  }
  capacity = n;
  next_seq = 0;
  events = ring;
  return true;
}

void start(uint32_t mask) {
  {
    SpinlockGuard guard(ring_lock);
    __atomic_store_n(&trace::classes, mask, __ATOMIC_RELAXED);
    put(KAI_TRACE_STARTED, 0, 0, capacity, mask, 0, 0, 0);
  }
  // Samples come from timer ticks, and an idle hart has stopped its tick
  // (tickless idle, trap.cpp): an IPI makes each idle hart start it again.
  // The fence orders the class store before the reads of the idle flags; it
  // pairs with the one in idle_wait() (idle.cpp), so a hart that is not
  // idle now sees the profiler on at its next look before `wfi`.
  if (mask & trace::class_of(KAI_TRACE_SAMPLE)) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    wake_idle_harts(NCPU);
  }
}

// Copies events [cursor, ...) to the user, in chunks small enough for the
// kernel stack: each chunk is taken under the lock, copied out without it
// (copy_to_user walks the page table and must not run with the ring held
// for long). If writers overtake the reader between chunks, the read stops
// at the gap, and the next call reports it as dropped.
SyscallResult read(UserPtr<kai_ai_trace_read> user_request) {
  kai_ai_trace_read rq;
  TRY(copy_from_user(&rq, user_request));
  if (rq.reserved[0] != 0 || rq.reserved[1] != 0 || rq.capacity == 0) return Errno::Invalid;
  UserPtr<kai_trace_event> out(reinterpret_cast<uint64_t>(rq.events));
  constexpr uint32_t kChunk = 8;
  kai_trace_event chunk[kChunk];
  uint32_t copied = 0;
  uint64_t cursor = rq.cursor;
  bool first = true;
  rq.dropped = 0;
  while (copied < rq.capacity) {
    uint32_t n = 0;
    {
      SpinlockGuard guard(ring_lock);
      if (events == nullptr) return Errno::NoDevice;
      if (cursor < oldest()) {
        if (!first) break;   // overtaken since the last chunk: report it next time
        rq.dropped = oldest() - cursor;
        cursor = oldest();
      }
      while (n < kChunk && copied + n < rq.capacity && cursor + n < next_seq) {
        chunk[n] = events[(cursor + n) % capacity];
        n++;
      }
      rq.next_seq = next_seq;
      rq.ring_events = capacity;
      rq.classes = trace::classes;
    }
    first = false;
    if (n == 0) break;
    TRY(copy_to_user(out + copied, chunk, n));
    copied += n;
    cursor += n;
  }
  rq.cursor = cursor;
  rq.version = KAI_TRACE_VERSION;
  TRY(copy_to_user(user_request, &rq));
  return copied;
}

}  // namespace

void trace::record(kai_trace_type type, uint64_t t_ns, uint64_t request, uint32_t a0, uint32_t a1, uint32_t a2,
                   uint32_t a3, uint32_t a4) {
  SpinlockGuard guard(ring_lock);
  // Checked again under the lock: a stop may have come after the caller's look.
  if (events == nullptr || (classes & class_of(type)) == 0) return;
  put(type, t_ns, request, a0, a1, a2, a3, a4);
}

void trace_boot() {
  char text[16];
  if (!bootarg_str(g_boot, "ai.trace", text, sizeof text)) return;   // off: the default
  int64_t n = bootarg_int(g_boot, "ai.trace", -1);
  if (n == 0) {
    kprintf("ai: ai.trace=0: a trace ring needs room for at least one event; tracing stays off\n");
    return;
  }
  if (n < 0 || n > KAI_TRACE_MAX_EVENTS) {
    kprintf("ai: ai.trace=%s is not a number of events from 1 to %u; tracing stays off\n", text,
            KAI_TRACE_MAX_EVENTS);
    return;
  }
  uint32_t mask = KAI_TRACE_CLASS_DEFAULT;
  int64_t asked = bootarg_int(g_boot, "ai.trace_classes", mask);
  if (asked < 1 || asked > KAI_TRACE_CLASS_ALL) {
    kprintf("ai: ai.trace_classes=%ld is not a class mask from 1 to %u; using %u\n", asked,
            KAI_TRACE_CLASS_ALL, mask);
  } else {
    mask = static_cast<uint32_t>(asked);
  }
  if (!make_ring(static_cast<uint32_t>(n))) {
    kprintf("ai: ai.trace=%ld: no contiguous memory for %ld events; tracing stays off\n", n, n);
    return;
  }
  start(mask);
  kprintf("ai: tracing %ld events (classes 0x%x)\n", n, mask);
}

SyscallResult trace_control(uint64_t cmd, uint64_t arg) {
  switch (cmd) {
    case KAI_AI_CTL_TRACE_START: {
      if (arg > KAI_TRACE_CLASS_ALL) return Errno::Invalid;
      if (!make_ring(KAI_TRACE_DEFAULT_EVENTS)) return Errno::NoMem;
      start(arg == 0 ? KAI_TRACE_CLASS_DEFAULT : static_cast<uint32_t>(arg));
      return 0;
    }
    case KAI_AI_CTL_TRACE_STOP: {
      if (arg != 0) return Errno::Invalid;
      SpinlockGuard guard(ring_lock);
      __atomic_store_n(&trace::classes, 0u, __ATOMIC_RELAXED);
      return 0;
    }
    case KAI_AI_CTL_TRACE_CLEAR: {
      if (arg != 0) return Errno::Invalid;
      SpinlockGuard guard(ring_lock);
      next_seq = 0;
      return 0;
    }
    case KAI_AI_CTL_TRACE_READ:
      return read(UserPtr<kai_ai_trace_read>(arg));
    default:
      return Errno::Invalid;
  }
}

}  // namespace ai
