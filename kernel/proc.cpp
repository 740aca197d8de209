// Processes, kernel threads and the scheduler. Each hart runs scheduler() on
// its boot stack and swtch()es into one runnable process at a time; a process
// gives the hart back through sched() (on yield, sleep or exit).
//
// Locking (as in xv6): p->lock protects state/chan/killed/exit_status/pid;
// wait_lock protects every p->parent and orders wait() against exit().
// Acquire wait_lock before any p->lock.
#include "proc.h"
#include "ai/service.h"
#include "boot.h"
#include "fdt.h"
#include "console.h"
#include "fs/fs.h"
#include "idle.h"
#include "kalloc.h"
#include "mem_policy.h"
#include "memlayout.h"
#include "mmap.h"
#include "printf.h"
#include "process.h"
#include "sbi.h"
#include "selftest.h"
#include "string.h"
#include "trap.h"
#include "uvm.h"

Process procs[NPROC];
Process* init_process = nullptr;

namespace {

Spinlock pid_lock{"nextpid"};
int next_pid = 1;
Spinlock wait_lock{"wait"};
constexpr uint64_t STACK_CANARY = 0x6b61692d73746b21ull;   // "kai-stk!"

int allocate_pid() {
  SpinlockGuard guard(pid_lock);
  return next_pid++;
}

void free_process(Process* p);

// A free slot with a kernel stack and (for user processes) a trapframe, in
// state Used with p->lock held. Its context starts at entry on the new stack.
ErrorOr<Process*> alloc_process(void (*entry)(), bool kthread) {
  Process* p = nullptr;
  for (auto& candidate : procs) {
    candidate.lock.acquire();
    if (candidate.state == ProcState::Unused) {
      p = &candidate;
      break;
    }
    candidate.lock.release();
  }
  if (!p) return Errno::Again;
  p->pid = allocate_pid();
  p->sid = 0;
  p->state = ProcState::Used;
  p->is_kthread = kthread;
  p->logged_unknown_syscall = false;
  p->killed = false;
  p->exit_status = 0;
  p->chan = nullptr;
  p->sz = p->heap_start = 0;
  p->pagetable = nullptr;
  // A user process's kernel stack and trapframe are memory it holds, taken
  // under the memory policy; a kernel thread's are the kernel's own.
  if (kthread) {
    p->kstack = reinterpret_cast<uint64_t>(kalloc_contiguous(KSTACK_SIZE));
  } else {
    p->kstack = reinterpret_cast<uint64_t>(mem::take_contiguous(KSTACK_SIZE, mem::For::Process));
    p->trapframe = static_cast<Trapframe*>(mem::take_page(mem::For::Process));
  }
  if (!p->kstack || (!kthread && !p->trapframe)) {
    free_process(p);
    p->lock.release();
    return Errno::NoMem;
  }
  *reinterpret_cast<uint64_t*>(p->kstack) = STACK_CANARY;
  memset(&p->context, 0, sizeof p->context);
  p->context.ra = reinterpret_cast<uint64_t>(entry);
  p->context.sp = p->kstack + KSTACK_SIZE;
  return p;
}

// p->lock held. Releases everything but the slot itself.
void free_process(Process* p) {
  if (p->trapframe) kfree(p->trapframe);
  p->trapframe = nullptr;
  if (p->pagetable) proc_free_pagetable(p->pagetable, p->sz);
  p->pagetable = nullptr;
  if (p->kstack) kfree_contiguous(reinterpret_cast<void*>(p->kstack), KSTACK_SIZE);
  p->kstack = 0;
  p->sz = p->heap_start = 0;
  p->pid = 0;
  p->sid = 0;
  p->parent = nullptr;
  p->name[0] = 0;
  p->chan = nullptr;
  p->killed = false;
  p->exit_status = 0;
  p->is_kthread = false;
  p->kfn = nullptr;
  p->karg = nullptr;
  p->state = ProcState::Unused;
}

// First code of every new process/thread: scheduler() left p->lock held.
void forkret() {
  current_process()->lock.release();
  usertrapret();
}

// A new thread's first instructions run with interrupts in whatever state
// the scheduler left them, and that is not "on": the scheduler's p->lock was
// acquired right after another thread came back from sched(), and sched()
// hands the hart back with that thread's saved `intena`. A thread that was
// preempted by the timer (yield() inside a trap, interrupts off) leaves
// intena == false, so releasing p->lock here would leave interrupts OFF.
// A user process does not care (usertrapret() turns them on with sret), but
// a kernel thread would then compute with the timer masked and keep its hart
// until it slept: the whole machine froze behind one AI request in some boots.
// So code that runs in the kernel after starting must enable interrupts
// itself, once it holds no lock (noff == 0).
void start_with_interrupts_on() {
  if (this_cpu()->noff != 0) panic("thread start: holds %d locks", this_cpu()->noff);
  riscv::intr_on();
}

void kthread_start() {
  Process* p = current_process();
  p->lock.release();
  start_with_interrupts_on();
  p->kfn(p->karg);
  kthread_exit();
}

void first_process_start() {
  Process* p = current_process();
  p->lock.release();
  start_with_interrupts_on();
  selftest_wait();   // its one line comes before anything user programs print
  // The file system sleeps on disk I/O, so it is mounted here, in process context.
  if (fs::init(ROOTDEV).is_error()) {
    kprintf("kai: cannot mount the root file system; no /bin/init to run.\n"
            "kai: the kernel keeps running (idle). Build an image with `make fsimg`.\n");
    for (;;) {
      SpinlockGuard guard(timer_lock);
      sleep_until_tick();
    }
  }
  // The AI service loads its models in its own kernel threads; the shell
  // comes up meanwhile. Its options come from the kernel command line
  // (QEMU -append: ai.workers=N, ai.max_batch=N, ...).
  ai::start();
  char arg0[] = "/bin/init";
  char* argv[] = {arg0, nullptr};
  auto result = exec("/bin/init", argv);
  if (result.is_error()) {
    kprintf("kai: exec /bin/init failed (errno %d); idling.\n", static_cast<int>(result.error()));
    for (;;) {
      SpinlockGuard guard(timer_lock);
      sleep_until_tick();
    }
  }
  p->trapframe->x[REG_A0] = result.value();
  usertrapret();
}

// wait_lock held: give p's children to init.
void reparent(Process* p) {
  for (auto& child : procs) {
    if (child.parent == p) {
      child.parent = init_process;
      wakeup(init_process);
    }
  }
}

}  // namespace


Process* current_process() {
  push_interrupts_off();
  Process* p = this_cpu()->proc;
  pop_interrupts_off();
  return p;
}

PageTable proc_pagetable(Process* p) {
  PageTable pt = uvm_create();
  if (!pt) return nullptr;
  if (uvm_map(pt, TRAMPOLINE, reinterpret_cast<uint64_t>(_trampoline), PAGE_SIZE,
              riscv::PTE_R | riscv::PTE_X).is_error()) {
    uvm_free_tables(pt);
    return nullptr;
  }
  if (uvm_map(pt, TRAPFRAME, reinterpret_cast<uint64_t>(p->trapframe), PAGE_SIZE,
              riscv::PTE_R | riscv::PTE_W).is_error()) {
    uvm_unmap(pt, TRAMPOLINE, 1, false);
    uvm_free_tables(pt);
    return nullptr;
  }
  return pt;
}

void proc_free_pagetable(PageTable pt, uint64_t sz) {
  uvm_unmap(pt, TRAMPOLINE, 1, false);
  uvm_unmap(pt, TRAPFRAME, 1, false);
  uvm_unmap(pt, 0, page_round_up(sz) / PAGE_SIZE, true);
  uvm_unmap(pt, USER_STACK_BOTTOM, USER_STACK_SIZE / PAGE_SIZE, true);
  uvm_free_tables(pt);
}

// `sched.fork_delay_ms=N` on the kernel command line: fork() keeps the
// parent asleep for N ms before it returns, while the child runs. A fault
// injection for tests: a race between a parent and the child it forks (the
// shell must make a command the console's foreground process before the
// command can use the console's rights) then goes the child's way every
// time instead of once in a while, when the host stalls the parent's hart.
// 0, the default: no delay. Set once at boot, read-only afterwards.
static uint64_t fork_delay_ns = 0;

void user_init() {
  int64_t delay_ms = bootarg_int(g_boot, "sched.fork_delay_ms", 0);
  if (delay_ms > 0 && delay_ms <= 10000) fork_delay_ns = uint64_t(delay_ms) * 1000000;
  auto result = alloc_process(first_process_start, false);
  if (result.is_error()) panic("user_init: cannot allocate the first process");
  Process* p = result.value();
  safestrcpy(p->name, "init", sizeof p->name);
  init_process = p;
  p->sid = p->pid;   // init leads session 1; everything it starts inherits it
  // No wake_idle_harts() here, unlike every other place that makes a thread
  // Runnable: no other hart has started yet, and this one enters scheduler() next.
  p->state = ProcState::Runnable;
  p->lock.release();
}

ErrorOr<int> kthread_create(const char* name, void (*fn)(void*), void* arg) {
  Process* p = TRY(alloc_process(kthread_start, true));
  safestrcpy(p->name, name, sizeof p->name);
  p->kfn = fn;
  p->karg = arg;
  int pid = p->pid;
  p->state = ProcState::Runnable;
  p->lock.release();
  wake_idle_harts(1);   // an idle hart starts it now, not at its next tick (idle.cpp)
  return pid;
}

void kthread_exit() {
  Process* p = current_process();
  if (!p || !p->is_kthread) panic("kthread_exit: not a kernel thread");
  p->lock.acquire();
  p->state = ProcState::Zombie;   // the scheduler frees the slot once off this stack
  sched();
  panic("kthread_exit: zombie ran again");
}

ErrorOr<int> fork() {
  Process* parent = current_process();
  if (!parent->pagetable) return Errno::Invalid;   // kernel threads cannot fork
  // The child shares the parent's pages copy-on-write (uvm_copy), but may
  // come to hold as much as the parent as the two write: admit that much.
  uint64_t child_pages = mem::process_pages(parent->sz);
  TRY(mem::admit_growth(child_pages, child_pages));
  // Copy-on-write for a big process (one holding a model forks in
  // page-table time); a small one (a shell, a test's child) gets its copies
  // now, so it can never be killed later by a store it has no memory for
  // after another process took the free memory (the memory policy's promise
  // to small processes, mem_policy.h). A big child under exhaustion can be:
  // "out of memory for a copy-on-write page".
  bool cow = child_pages > mem::SMALL_PROCESS_PAGES;
  Process* child = TRY(alloc_process(forkret, false));
  child->pagetable = proc_pagetable(child);
  if (!child->pagetable ||
      uvm_copy(parent->pagetable, child->pagetable, 0, parent->sz, cow).is_error() ||
      uvm_copy(parent->pagetable, child->pagetable, USER_STACK_BOTTOM, USER_STACK_TOP, cow).is_error() ||
      vm_fork(parent, child).is_error()) {
    // proc_free_pagetable() frees whatever part of the copy was made.
    child->sz = parent->sz;
    free_process(child);
    child->lock.release();
    return Errno::NoMem;
  }
  child->sz = parent->sz;
  child->heap_start = parent->heap_start;
  *child->trapframe = *parent->trapframe;   // integer and FP registers
  child->trapframe->x[REG_A0] = 0;          // fork() returns 0 in the child
  for (int i = 0; i < NOFILE; i++)
    if (parent->ofile[i]) child->ofile[i] = fs::filedup(parent->ofile[i]);
  if (parent->cwd) child->cwd = fs::idup(parent->cwd);
  safestrcpy(child->name, parent->name, sizeof child->name);
  // Only a process changes its own session (setsid), so the parent's needs
  // no lock here; the child's is written before anyone can see the child.
  child->sid = parent->sid;
  int pid = child->pid;
  child->lock.release();

  {
    SpinlockGuard guard(wait_lock);
    child->parent = parent;
  }
  {
    SpinlockGuard guard(child->lock);
    child->state = ProcState::Runnable;
  }
  wake_idle_harts(1);   // an idle hart starts the child now, not at its next tick (idle.cpp)
  if (fork_delay_ns) {
    uint64_t deadline = clock_ns() + fork_delay_ns;
    SpinlockGuard guard(timer_lock);
    while (clock_ns() < deadline) sleep_until_tick();
  }
  return pid;
}

void exit(int status) {
  Process* p = current_process();
  if (p->is_kthread) kthread_exit();
  if (p == init_process) {
    kprintf("kai: init exited (status %d); halting.\n", status);
    uart_flush();
    sbi::shutdown();
  }
  vm_release_all(p, p->pagetable);   // its mappings' pages and files
  for (int fd = 0; fd < NOFILE; fd++) {
    if (p->ofile[fd]) {
      fs::fileclose(p->ofile[fd]);
      p->ofile[fd] = nullptr;
    }
  }
  if (p->cwd) {
    fs::Transaction tx;   // the last reference to a removed directory frees it
    fs::iput(p->cwd);
    p->cwd = nullptr;
  }
  if (console_foreground() == p->pid) console_set_foreground(0);
  ai::process_exited(p->pid);   // its AI requests are gone at once

  wait_lock.acquire();
  reparent(p);
  wakeup(p->parent);
  p->lock.acquire();
  p->exit_status = status;
  p->state = ProcState::Zombie;
  wait_lock.release();
  sched();
  panic("exit: zombie ran again");
}

ErrorOr<int> wait(UserPtr<int> status) {
  Process* p = current_process();
  SpinlockGuard guard(wait_lock);
  for (;;) {
    bool have_children = false;
    for (auto& child : procs) {
      if (child.parent != p) continue;
      SpinlockGuard child_guard(child.lock);
      have_children = true;
      if (child.state != ProcState::Zombie) continue;
      int pid = child.pid;
      if (!status.is_null() && copy_to_user(status, &child.exit_status).is_error())
        return Errno::Fault;
      free_process(&child);
      return pid;
    }
    if (!have_children) return Errno::NoChild;
    if (current_killed()) return Errno::Interrupted;
    sleep(p, wait_lock);
  }
}

namespace {

// Marks p killed (p->lock held). A sleeping p is made Runnable, so that it
// sees the flag and exits; then this returns true, and the caller, once it
// has released p->lock, wakes an idle hart for it (the handshake in idle.cpp:
// state change first, then the look at the idle harts).
bool mark_killed(Process& p) {
  p.killed = true;
  if (p.state != ProcState::Sleeping) return false;
  p.state = ProcState::Runnable;
  return true;
}

}  // namespace

void set_killed(Process* p) {
  bool made_runnable;
  {
    SpinlockGuard guard(p->lock);
    made_runnable = mark_killed(*p);
  }
  if (made_runnable) wake_idle_harts(1);
}

bool current_killed() {
  Process* p = current_process();
  if (!p) return false;
  SpinlockGuard guard(p->lock);
  return p->killed;
}

ErrorOr<void> kill(int pid) {
  if (pid <= 0) return Errno::NoProcess;
  for (auto& p : procs) {
    bool made_runnable;
    {
      // Checked and marked under one hold of p.lock: released in between,
      // the slot could be freed and given to another process.
      SpinlockGuard guard(p.lock);
      if (p.pid != pid || p.state == ProcState::Unused) continue;
      // Kernel threads are part of the kernel, and killing init would halt it.
      if (p.is_kthread || &p == init_process) return Errno::Perm;
      made_runnable = mark_killed(p);
    }
    if (made_runnable) wake_idle_harts(1);
    return {};
  }
  return Errno::NoProcess;
}

// POSIX: a process that already leads a session (or, in Unix, a process
// group; kai has no groups) may not start another, so that a session leader
// never leaves members behind in a session without a leader. A child of
// fork() never leads anything, which is why /bin/setsid can always succeed.
ErrorOr<int> new_session() {
  Process* p = current_process();
  if (p->is_kthread) return Errno::Invalid;
  SpinlockGuard guard(p->lock);
  if (p->sid == p->pid) return Errno::Perm;
  p->sid = p->pid;
  return p->sid;
}

ErrorOr<int> session_of(int pid) {
  if (pid < 0) return Errno::Invalid;
  if (pid == 0) pid = current_process()->pid;
  for (auto& p : procs) {
    SpinlockGuard guard(p.lock);
    if (p.pid == pid && p.state != ProcState::Unused) return p.sid;
  }
  return Errno::NoProcess;
}

bool is_self_or_descendant(int ancestor_pid, int pid) {
  if (ancestor_pid <= 0 || pid <= 0) return false;
  SpinlockGuard guard(wait_lock);
  for (auto& p : procs) {
    if (p.state == ProcState::Unused || p.pid != pid) continue;
    for (Process* a = &p; a; a = a->parent)
      if (a->pid == ancestor_pid) return true;
    return false;
  }
  return false;
}

int parent_pid(int pid) {
  SpinlockGuard guard(wait_lock);
  for (auto& p : procs)
    if (p.state != ProcState::Unused && p.pid == pid) return p.parent ? p.parent->pid : 0;
  return 0;
}

void kill_tree(int pid) {
  SpinlockGuard guard(wait_lock);
  for (auto& p : procs) {
    if (p.state == ProcState::Unused || &p == init_process || p.is_kthread) continue;
    bool in_tree = false;
    for (Process* a = &p; a; a = a->parent) {
      if (a->pid == pid) {
        in_tree = true;
        break;
      }
    }
    if (in_tree) set_killed(&p);
  }
}

ErrorOr<uint64_t> grow_process(int64_t n) {
  Process* p = current_process();
  uint64_t old = p->sz;
  if (n > 0) {
    uint64_t want = old + static_cast<uint64_t>(n);
    if (want < old || want > USER_HEAP_LIMIT) return Errno::NoMem;
    // Refuse the whole request up front (data and page-table pages, worst
    // case) rather than take most of it and give it back.
    uint64_t after = mem::process_pages(want);
    TRY(mem::admit_growth(after - mem::process_pages(old), after));
    p->sz = TRY(uvm_alloc(p->pagetable, old, want, riscv::PTE_R | riscv::PTE_W));
  } else if (n < 0) {
    uint64_t shrink = static_cast<uint64_t>(-n);
    if (shrink > old - p->heap_start) return Errno::Invalid;
    p->sz = uvm_dealloc(p->pagetable, old, old - shrink);
    riscv::sfence_vma();
  }
  return old;
}

// ---------------------------------------------------------------- scheduling
//
// A hart switches between two kinds of kernel thread: the one process it
// runs, and its own scheduler (running on the hart's boot stack, with its
// registers saved in this_cpu()->context). Every switch goes through the
// scheduler: process -> sched() -> swtch -> scheduler() -> swtch -> the
// next process. Of the integer registers swtch() saves only those a
// function call must preserve (ra, sp, s0-s11): the compiler has already
// saved every other live one on the stack of whoever called swtch, so
// switching threads is mostly switching stacks. (It also saves the whole FP
// state, f0-f31 and fcsr: swtch.S.)
//
// The lock rule that makes a switch safe: the process's p->lock is held
// across swtch, in both directions. It is acquired by the side that gives
// up the hart and released by the side that takes it: yield(), sleep() and
// exit acquire p->lock, set p->state, and call sched(); the scheduler
// releases it after swtch returns. Going in, the scheduler acquires it and
// the process releases it (after its own sched() returns, or in its start
// function, forkret() or kthread_start(), for a new one). While p->lock is held, p->state and p->context agree:
// no other hart can see the process Runnable while its registers are still
// being saved (it would start running on a stack still in use), and no
// wakeup() can slip between sleep()'s "state = Sleeping" and the switch.

// For idle_wait(): is any thread waiting for a hart?
static bool anything_runnable() {
  for (auto& p : procs) {
    SpinlockGuard guard(p.lock);
    if (p.state == ProcState::Runnable) return true;
  }
  return false;
}

void scheduler() {
  Cpu* c = this_cpu();
  c->proc = nullptr;
  for (;;) {
    // Interrupts on for a moment in every pass: if every process is asleep
    // waiting for a device (the disk, the console), only a device interrupt
    // can wake one, and with interrupts off this hart would scan forever.
    // Each p->lock the loop takes turns them off while it is held (every
    // spinlock does), and in particular across the switch into a process.
    riscv::intr_on();   // let devices interrupt (avoid deadlock when all sleep)
    bool ran = false;
    for (auto& p : procs) {
      p.lock.acquire();
      if (p.state == ProcState::Runnable) {
        // Still holding p->lock: the process releases it once it runs
        // (see the lock rule above).
        p.state = ProcState::Running;
        c->proc = &p;
        resume_tick();   // a running thread is preempted at its tick
        swtch(&c->context, &p.context);
        // Back here because the process called sched(): it holds p->lock
        // again, and p->state says why it stopped (Runnable after yield,
        // Sleeping, or Zombie).
        c->proc = nullptr;
        ran = true;
        // A kernel thread cannot free its own stack while running on it, so
        // its exit leaves the slot to the scheduler, now on another stack.
        if (p.state == ProcState::Zombie && p.is_kthread) free_process(&p);
      }
      p.lock.release();
    }
    // Nothing runnable: wait for an interrupt instead of spinning, so an idle
    // hart leaves its host CPU to the busy ones: an IPI that wakeup(), fork(),
    // kthread_create() or a kill sends to an idle hart when it makes a thread
    // runnable, a timer tick (10 ms) or a device (kernel/idle.cpp, docs/kernel.md).
    if (!ran) idle_wait(anything_runnable);
  }
}

// Gives the hart back to the scheduler. The caller holds p->lock and no
// other lock, has set p->state to something other than Running, and has
// interrupts off (holding p->lock ensures that). Each check below is one of
// these invariants; breaking any of them would corrupt the switch or
// deadlock a hart later, far from the cause, so it panics here.
void sched() {
  Process* p = current_process();
  if (!p->lock.holding()) panic("sched: p->lock not held");
  if (this_cpu()->noff != 1) {
    char held[128];
    panic("sched: pid %d (%s) holds %d locks (%s)", p->pid, p->name, this_cpu()->noff,
          held_locks_description(held, sizeof held));
  }
  if (p->state == ProcState::Running) panic("sched: process still running");
  if (riscv::intr_get()) panic("sched: interrupts on");
  if (*reinterpret_cast<uint64_t*>(p->kstack) != STACK_CANARY)
    panic("sched: kernel stack overflow in pid %d (%s)", p->pid, p->name);
  // intena (were interrupts on before the first spinlock was taken?) belongs
  // to this thread, not to the hart: the thread may come back on another
  // hart, whose Cpu record holds some other thread's intena meanwhile. So
  // it is saved on this thread's stack across the switch and put back.
  bool intena = this_cpu()->intena;
  swtch(&p->context, &this_cpu()->context);
  // Running again, perhaps on another hart (this_cpu() is read anew), with
  // p->lock held once more: the scheduler acquired it before switching here.
  this_cpu()->intena = intena;
}

// No wake_idle_harts() here: this hart's scheduler runs a Runnable thread
// next. If that is not p, it is one that was Runnable already, and every
// hart idle since then was sent an IPI for it (or for another newly Runnable
// thread): that hart wakes and finds p. An IPI here would only wake a hart
// to race this one for p, at every timer tick.
void yield() {
  Process* p = current_process();
  SpinlockGuard guard(p->lock);
  p->state = ProcState::Runnable;
  sched();
}

void sleep(const void* chan, Spinlock& lk) {
  Process* p = current_process();
  if (!p) panic("sleep: no process (called from the scheduler or boot?)");
  // Sleeping with any spinlock other than lk held would deadlock sooner or
  // later (and sched() would panic only when it happens): catch it every time.
  if (this_cpu()->noff != 1 || !lk.holding()) {
    char held[128];
    panic("sleep: pid %d (%s) must hold exactly lk (%s); holds %d (%s)", p->pid, p->name,
          lk.name(), this_cpu()->noff, held_locks_description(held, sizeof held));
  }
  // Holding p->lock means no wakeup() can be missed between releasing lk and sleeping.
  p->lock.acquire();
  lk.release();
  p->chan = chan;
  p->state = ProcState::Sleeping;
  sched();
  p->chan = nullptr;
  p->lock.release();
  lk.acquire();
}

void wakeup(const void* chan) {
  Process* me = current_process();
  uint32_t woken = 0;
  for (auto& p : procs) {
    if (&p == me) continue;
    SpinlockGuard guard(p.lock);
    if (p.state == ProcState::Sleeping && p.chan == chan) {
      p.state = ProcState::Runnable;
      woken++;
    }
  }
  if (woken) wake_idle_harts(woken);   // an idle hart runs them now, not at its next tick
}

void procdump() {
  static const char* const names[] = {"unused", "used", "sleep", "runble", "run", "zombie"};
  kprintf("\n");
  for (auto& p : procs) {
    if (p.state == ProcState::Unused) continue;
    // A sleeper's channel is an address: `nm build/kernel/kernel.elf` names it.
    kprintf("%3d %-6s %s%s sz %lu", p.pid, names[static_cast<int>(p.state)], p.name,
            p.is_kthread ? " [kthread]" : "", p.sz);
    if (p.state == ProcState::Sleeping) kprintf(" chan %p", p.chan);
    kprintf("\n");
  }
  kprintf("free memory: %lu of %lu pages\n", mem::available_pages(), kalloc_total_pages());
}

ErrorOr<void> either_copyout(bool user_dst, uint64_t dst, const void* src, uint64_t len) {
  if (user_dst) {
    Process* p = current_process();
    if (!p || !p->pagetable) return Errno::Fault;
    return copyout(p->pagetable, dst, src, len);
  }
  memmove(reinterpret_cast<void*>(dst), src, len);
  return {};
}

ErrorOr<void> either_copyin(void* dst, bool user_src, uint64_t src, uint64_t len) {
  if (user_src) {
    Process* p = current_process();
    if (!p || !p->pagetable) return Errno::Fault;
    return copyin(p->pagetable, dst, src, len);
  }
  memmove(dst, reinterpret_cast<const void*>(src), len);
  return {};
}
