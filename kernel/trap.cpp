// Trap handling: system calls, device interrupts, the timer, and faults.
// From user mode: trampoline uservec -> usertrap() -> usertrapret() -> userret.
// From kernel mode: kernelvec -> kerneltrap().
#include "trap.h"
#include "ai/service.h"   // the AI service's timer work: load meter, profiler
#include <kai/ai_trace.h>  // KAI_TRACE_MODE_*: what a profiler sample says
#include "boot.h"
#include "console.h"
#include "cpu.h"
#include "drivers/virtio_blk.h"
#include "memlayout.h"
#include "mmap.h"
#include "printf.h"
#include "process.h"
#include "riscv.h"
#include "sbi.h"
#include "syscall_dispatch.h"
#include "tick_grid.h"
#include "uvm.h"

using namespace riscv;

extern volatile bool g_panicked;
extern "C" char trampoline_uservec[], trampoline_userret[];
extern "C" void kernelvec();
int plic_claim();
void plic_complete(int irq);

Spinlock timer_lock{"timer"};
namespace {
char timer_tick;               // only its address is used: the sleep channel
uint32_t tick_sleepers;        // threads in sleep_until_tick() (timer_lock)
}  // namespace

void sleep_until_tick() {
  tick_sleepers++;
  sleep(&timer_tick, timer_lock);
  tick_sleepers--;
}

namespace {

enum class Interrupt { None, External, Timer };

uint64_t timer_interval() { return g_boot.timebase_hz / TICK_HZ; }

}  // namespace

// On the tick's grid (tick_grid.h says why): one grid for every hart, and a
// late tick moves no later one.
uint64_t next_tick_deadline() { return next_tick_after(guest_time(), timer_interval()); }

namespace {

// Stolen clock units (guest_time()). Written by the disk driver with its
// lock held and interrupts off; read anywhere: one aligned word.
uint64_t stolen_units = 0;

// This hart's next tick is `deadline` (on the guest clock): remember it, so
// that clock_interrupt() can tell a tick from a disk deadline, and arm the
// timer.
void arm_tick(uint64_t deadline) {
  this_cpu()->tick_deadline = deadline;
  rearm_timer();
}

// Tickless idle. A hart with nothing to run needs no tick: the tick exists
// to preempt a running thread, and an idle hart is woken by an IPI when a
// thread becomes runnable (idle.cpp). Under QEMU each tick of an idle hart
// wakes a host thread that takes QEMU's global lock to deliver the
// interrupt and then scans the process table under its locks, and with
// more harts than host cores (-smp 4 on 2 cores) that thread runs instead
// of one that computes. So when the tick finds its hart idle (no thread:
// the scheduler's loop), the hart masks its timer interrupt (sie.STIE; the
// interrupt stays pending, wfi ignores it) and stops re-arming it, until
// resume_tick() before the next thread. Hart 0 always ticks: someone must
// wake the threads that sleep for time. So does every hart while the
// sampling profiler runs: it samples the idle harts too.
bool stop_tick_here() {
  return this_cpu()->proc == nullptr && cpu_index() != 0 && !ai::profiler_running();
}

// Returns whether this was a tick. With the disk clock the timer also
// fires at disk requests' due times (and early, after another hart's stall
// moved the stolen time): then only the due requests are published, and no
// tick duty runs, so ticks stay on their grid.
bool clock_interrupt() {
  if (virtio_blk_clocked()) {
    virtio_blk_publish_due(guest_time());
    if (guest_time() < this_cpu()->tick_deadline) {
      rearm_timer();
      return false;
    }
  }
  // Hart 0 ticks always (see above): it samples the AI service's load, the
  // L of Little's law (ai/load_meter.h).
  if (cpu_index() == 0) ai::on_timer_tick();
  {
    // Every ticking hart wakes the sleepers, which compare the clock with
    // their deadline. So sleep() keeps time even while one hart runs late
    // (under QEMU a busy host can starve one vCPU thread for a while).
    SpinlockGuard guard(timer_lock);
    if (tick_sleepers) wakeup(&timer_tick);
  }
  if (stop_tick_here()) {
    KAI_CSR_CLEAR(sie, SIE_STIE);
    this_cpu()->tick_stopped = true;
    return true;
  }
  // The next grid point (next_tick_deadline()): a late tick moves no later
  // one. Nothing counts these interrupts (see uptime_ticks()), so the grid
  // points a late hart skips cost no time.
  arm_tick(next_tick_deadline());
  return true;
}

// The sampling profiler (`aitrace start samples`): every timer interrupt
// notes where its hart was, in the AI trace ring. Timer interrupts come
// TICK_HZ times a second of real time, so the share of samples that land in
// a function is the share of real time spent there: what exact mode's
// instruction counts cannot show (QEMU runs some instructions, floats and
// loads, far slower than others). A hart that was idle is sampled in the
// idle loop with pid 0. The sample lands where interrupts come on again, so
// code that runs with interrupts off (holding a spinlock) is counted at the
// point it releases the lock; the return address ra (low 32 bits) then
// names who released it. Under QEMU an interrupt is taken only between two
// translated blocks, so the time of a function's last block (its epilogue)
// is credited to the return address in its caller.
void sample_this_hart(uint64_t pc, uint64_t ra, uint32_t mode) {
  if (!ai::profiler_running()) return;
  Process* p = this_cpu()->proc;
  ai::profiler_sample(pc, ra, mode, p ? uint32_t(p->pid) : 0);
}

[[noreturn]] void stop_this_hart() {
  intr_off();
  for (;;) asm volatile("wfi");
}

Interrupt device_interrupt(uint64_t scause) {
  if (g_panicked) stop_this_hart();
  if (!(scause & SCAUSE_INTERRUPT)) return Interrupt::None;
  uint64_t code = scause & ~SCAUSE_INTERRUPT;
  if (code == IRQ_S_EXTERNAL) {
    int irq = plic_claim();
    if (irq == UART0_IRQ) uart_interrupt();
    else if (irq == VIRTIO0_IRQ) virtio_blk_interrupt();
    if (irq) plic_complete(irq);
    return Interrupt::External;
  }
  if (code == IRQ_S_TIMER) {
    // A disk deadline is no tick: nothing to sample, no reason to yield.
    return clock_interrupt() ? Interrupt::Timer : Interrupt::External;
  }
  if (code == IRQ_S_SOFT) {
    KAI_CSR_CLEAR(sip, SIE_SSIE);
    // The profiler was started (ai/trace.cpp sends every idle hart an IPI):
    // an idle hart ticks again, to be sampled.
    resume_tick_if_sampling();
    return Interrupt::External;
  }
  return Interrupt::None;
}

const char* exception_name(uint64_t cause) {
  switch (cause) {
    case 0: return "instruction address misaligned";
    case 1: return "instruction access fault";
    case 2: return "illegal instruction";
    case 3: return "breakpoint";
    case 4: return "load address misaligned";
    case 5: return "load access fault";
    case 6: return "store address misaligned";
    case 7: return "store access fault";
    case 8: return "environment call from U-mode";
    case 9: return "environment call from S-mode";
    case 12: return "instruction page fault";
    case 13: return "load page fault";
    case 15: return "store page fault";
    default: return "unknown exception";
  }
}

}  // namespace

extern "C" void usertrap();
extern "C" void kerneltrap(const uint64_t* frame);

void trap_inithart() {
  KAI_CSR_WRITE(stvec, reinterpret_cast<uint64_t>(kernelvec));
  KAI_CSR_SET(sie, SIE_SEIE | SIE_STIE | SIE_SSIE);
  arm_tick(next_tick_deadline());
}

// Interrupts off (the scheduler holds the next thread's lock, or idle_wait()).
void resume_tick() {
  Cpu* c = this_cpu();
  if (!c->tick_stopped) return;
  c->tick_stopped = false;
  arm_tick(next_tick_deadline());   // replaces the pending interrupt
  KAI_CSR_SET(sie, SIE_STIE);
}

// An idle hart's last look before `wfi` (idle.cpp), after it has published
// Cpu::idle and a full fence. The profiler's start() stores its class, a full
// fence, then reads the idle flags to send IPIs: of the two sides, at least
// one sees the other's store. Without this look a hart could miss both: its
// tick interrupt decided to stop (profiler not yet on) while it was out of
// `wfi` with idle == false, so start() sent it no IPI, and it slept untimed
// through the whole profile.
void resume_tick_if_sampling() {
  if (ai::profiler_running()) resume_tick();
}

uint64_t guest_time() { return read_time() - __atomic_load_n(&stolen_units, __ATOMIC_RELAXED); }
uint64_t stolen_time() { return __atomic_load_n(&stolen_units, __ATOMIC_RELAXED); }

void steal_time(uint64_t units) {
  __atomic_store_n(&stolen_units, stolen_units + units, __ATOMIC_RELAXED);
  rearm_timer();
}

// A stopped tick (tickless idle) stays stopped: its interrupt is masked, and
// hart 0, which always ticks, publishes the disk's due requests.
void rearm_timer() {
  uint64_t deadline = this_cpu()->tick_deadline;
  uint64_t due = virtio_blk_next_due();
  if (due < deadline) deadline = due;
  sbi::set_timer(deadline + stolen_time());
}

uint64_t clock_ns() {
  uint64_t t = guest_time(), hz = g_boot.timebase_hz;
  return (t / hz) * 1000000000ull + (t % hz) * 1000000000ull / hz;
}

// The tick count is the clock divided by the tick length, not a count of
// timer interrupts. A count falls behind the clock: an interrupt can arrive
// late (a busy host delays QEMU's vCPU threads; a hart with interrupts off
// takes it later), and a hart that runs a whole tick late skips the grid
// points it missed (next_tick_deadline()). On a loaded host such a count grew by 16
// during a sleep(20) that lasted 200 ms by the clock. Taken from the clock,
// uptime() agrees with sleep() by construction: sleep(n) returns only once
// clock_ns() has passed a deadline n ticks on, so uptime() has grown by n
// or more.
uint64_t uptime_ticks() { return clock_ns() / TICK_NS; }

extern "C" void usertrap() {
  if (read_sstatus() & SSTATUS_SPP) panic("usertrap: not from user mode");
  KAI_CSR_WRITE(stvec, reinterpret_cast<uint64_t>(kernelvec));
  Process* p = current_process();
  p->trapframe->epc = read_sepc();
  uint64_t scause = read_scause();
  Interrupt intr = Interrupt::None;

  if (scause == EXC_ECALL_U) {
    if (current_killed()) exit(-1);
    p->trapframe->epc += 4;   // return after the ecall
    intr_on();
    syscall_dispatch();
  } else if ((intr = device_interrupt(scause)) == Interrupt::None) {
    // A page fault may be a mapping's page not yet there (mmap.h): map it
    // and run the instruction again. Anything else kills the process.
    uint64_t va = read_stval();
    const char* why = nullptr;
    if (scause == EXC_LOAD_PAGE_FAULT || scause == EXC_STORE_PAGE_FAULT || scause == EXC_INST_PAGE_FAULT) {
      intr_on();   // a major fault sleeps for the disk
      Access access = scause == EXC_STORE_PAGE_FAULT ? Access::Write
                      : scause == EXC_INST_PAGE_FAULT ? Access::Execute : Access::Read;
      why = handle_page_fault(p, va, access);
      if (!why) {
        if (current_killed()) exit(-1);
        usertrapret();
      }
    }
    kprintf("pid %d (%s): killed: %s at va 0x%lx, sepc 0x%lx%s%s\n", p->pid, p->name,
            exception_name(scause & ~SCAUSE_INTERRUPT), va, p->trapframe->epc, why ? ": " : "",
            why ? why : "");
    set_killed(p);
  }
  if (intr == Interrupt::Timer) sample_this_hart(p->trapframe->epc, p->trapframe->x[1], KAI_TRACE_MODE_USER);
  if (current_killed()) exit(-1);
  if (intr == Interrupt::Timer) yield();
  usertrapret();
}

void usertrapret() {
  Process* p = current_process();
  vm_sync_truncations(p);   // pages a truncation detached go before user code runs (mmap.h)
  intr_off();   // until sret: a trap now would go to uservec with kernel state
  uint64_t uservec = TRAMPOLINE + (trampoline_uservec - _trampoline);
  KAI_CSR_WRITE(stvec, uservec);
  Trapframe* tf = p->trapframe;
  tf->kernel_satp = read_satp();
  tf->kernel_sp = p->kstack + KSTACK_SIZE;
  tf->kernel_trap = reinterpret_cast<uint64_t>(usertrap);
  tf->kernel_cpu = read_tp();

  uint64_t s = read_sstatus();
  s &= ~SSTATUS_SPP;        // sret to user mode
  s |= SSTATUS_SPIE;        // with interrupts on
  s |= SSTATUS_FS_INITIAL;  // and FP usable
  write_sstatus(s);
  write_sepc(tf->epc);

  uint64_t satp = make_satp(reinterpret_cast<uint64_t>(p->pagetable));
  uint64_t userret = TRAMPOLINE + (trampoline_userret - _trampoline);
  reinterpret_cast<void (*)(uint64_t)>(userret)(satp);
  __builtin_unreachable();
}

// frame: the registers kernelvec saved, x_i at frame[i].
extern "C" void kerneltrap(const uint64_t* frame) {
  uint64_t sepc = read_sepc(), sstatus = read_sstatus(), scause = read_scause();
  if (!(sstatus & SSTATUS_SPP)) panic("kerneltrap: not from supervisor mode");
  if (intr_get()) panic("kerneltrap: interrupts enabled");
  Interrupt intr = device_interrupt(scause);
  if (intr == Interrupt::None) {
    Process* p = this_cpu()->proc;
    panic("kernel trap: %s (scause 0x%lx) at sepc 0x%lx stval 0x%lx, %s %d (%s)",
          exception_name(scause), scause, sepc, read_stval(),
          p ? (p->is_kthread ? "kthread" : "pid") : "no process", p ? p->pid : 0,
          p ? p->name : "-");
  }
  if (intr == Interrupt::Timer) sample_this_hart(sepc, frame[1], KAI_TRACE_MODE_KERNEL);
  if (intr == Interrupt::Timer && this_cpu()->proc &&
      this_cpu()->proc->state == ProcState::Running)
    yield();
  // yield() may have taken other traps; restore what sret needs.
  write_sepc(sepc);
  write_sstatus(sstatus);
}
