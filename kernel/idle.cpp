// Idle harts: idle_wait() (the scheduler, when it found nothing to run) and
// wake_idle_harts() (wakeup(), fork(), kthread_create() and kill, when they
// made threads runnable).
//
// The handshake, with Cpu::idle as the flag (accessed with atomics only):
//
//   idle hart                              waking hart
//   interrupts off                         thread.state = Runnable (thread's lock)
//   idle = true                            if idle (swap it to false): send IPI
//   look for a runnable thread again
//   none: wfi
//
// Either the idle hart's second look sees the new Runnable thread, or the
// waker sees idle == true and sends the IPI: the thread's lock orders the
// two. The sampling profiler's start (ai/trace.cpp) is a waker too: it
// wants every idle hart's tick back. It shares no lock with the idle hart,
// so both sides use a full fence between their store and their look.
//
// The IPI is not lost if it arrives before `wfi`: `wfi` returns at once
// when an enabled interrupt is pending, even with interrupts off (sstatus.SIE
// only decides whether the trap is taken; sie.SSIE lets it wake the hart).
// The scheduler turns interrupts on again after idle_wait() and takes it.
//
// The IPI itself: the SBI IPI extension asks OpenSBI (M-mode) to raise a
// supervisor software interrupt on the target hart; the trap handler only
// clears it (trap.cpp, IRQ_S_SOFT). Under QEMU each hart is a host thread,
// and one halted in `wfi` uses no host CPU, so waking by IPI rather than
// spinning also keeps more harts than host cores from slowing anyone.
#include "idle.h"
#include "cpu.h"
#include "boot.h"
#include "fdt.h"
#include "riscv.h"
#include "sbi.h"
#include "spinlock.h"
#include "trap.h"

// `sched.idle_delay_ms=N` on the kernel command line: a hart about to idle
// with its tick stopped spins N ms (interrupts off) before it publishes its
// idle flag. A fault injection for tests: it widens the window in which a
// hart is neither ticking nor flagged idle (its tick interrupt has just
// found it idle and stopped the tick, or it was woken for a thread that
// another hart ran first). The profiler's start sends no IPI to such a
// hart, so only the look before `wfi` below restarts its tick; with the
// delay, tests/qemu/test_idle.py fails every time that look is missing,
// not once in many boots. 0, the default: no delay. Set once at boot
// (idle_init), read-only afterwards.
static uint64_t idle_delay_ns = 0;

void idle_init() {
  int64_t ms = bootarg_int(g_boot, "sched.idle_delay_ms", 0);
  if (ms > 0 && ms <= 10000) idle_delay_ns = uint64_t(ms) * 1000000;
}

void idle_wait(bool (*anything_runnable)()) {
  Cpu* c = this_cpu();
  riscv::intr_off();
  if (idle_delay_ns && c->tick_stopped) {
    uint64_t until = clock_ns() + idle_delay_ns;
    while (clock_ns() < until) {
    }
  }
  __atomic_store_n(&c->idle, 1u, __ATOMIC_SEQ_CST);
  // The profiler's start has no lock in common with this hart, so a full
  // fence orders "idle = true" before the look at whether it samples (the
  // other half of the fence pair is in ai/trace.cpp, start()).
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  resume_tick_if_sampling();
  if (!anything_runnable()) asm volatile("wfi");
  __atomic_store_n(&c->idle, 0u, __ATOMIC_SEQ_CST);
}

void wake_idle_harts(uint32_t threads) {
  push_interrupts_off();   // this_cpu() must not change under us
  int me = cpu_index();
  for (int i = 0; i < ncpu && threads > 0; i++) {
    if (i == me || !__atomic_load_n(&cpus[i].idle, __ATOMIC_SEQ_CST)) continue;
    // Swap rather than store: of several wakers, one sends this hart its IPI.
    if (!__atomic_exchange_n(&cpus[i].idle, 0u, __ATOMIC_SEQ_CST)) continue;
    sbi::send_ipi(1, cpus[i].hartid);
    threads--;
  }
  pop_interrupts_off();
}
