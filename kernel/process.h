// Process management inside the kernel core: the trapframe, fork/exec/exit/wait, kill.
#pragma once
#include <stdint.h>
#include "error.h"
#include "proc.h"
#include "user_ptr.h"

// Saved user state of a process: kernel fields used by the trampoline, then
// x1..x31 (x[0] unused), f0..f31 and fcsr. trampoline.S hard-codes the offsets.
struct Trapframe {
  uint64_t kernel_satp;   //   0
  uint64_t kernel_sp;     //   8
  uint64_t kernel_trap;   //  16
  uint64_t epc;           //  24
  uint64_t kernel_cpu;    //  32 (loaded into tp)
  uint64_t x[32];         //  40 + 8*i
  uint64_t f[32];         // 296 + 8*i
  uint64_t fcsr;          // 552
};
static_assert(__builtin_offsetof(Trapframe, x) == 40);
static_assert(__builtin_offsetof(Trapframe, f) == 296);
static_assert(__builtin_offsetof(Trapframe, fcsr) == 552);

constexpr int REG_SP = 2, REG_A0 = 10, REG_A1 = 11, REG_A7 = 17;

extern Process procs[NPROC];
extern Process* init_process;

void user_init();                    // creates the first process
[[noreturn]] void scheduler();
void yield();
void sched();                        // p->lock held, state already changed

ErrorOr<int> fork();
[[noreturn]] void exit(int status);
ErrorOr<int> wait(UserPtr<int> status);   // null: the caller does not want it
ErrorOr<void> kill(int pid);
void kill_tree(int pid);             // pid and all its descendants (console ^C)
ErrorOr<uint64_t> grow_process(int64_t n);   // sbrk: returns the old break
void set_killed(Process* p);
// setsid(): the caller leads a new session, whose id is its pid. EPERM if it
// already leads one (init, or a process that called setsid before).
ErrorOr<int> new_session();
// getsid(): the session id of pid (0: the caller); ESRCH if there is no such
// process, EINVAL for a negative pid.
ErrorOr<int> session_of(int pid);
// Is pid the process ancestor_pid or one of its descendants? (Takes wait_lock.)
bool is_self_or_descendant(int ancestor_pid, int pid);
// The parent's pid, or 0 (no such process, or no parent).
int parent_pid(int pid);
// Console ^P: one line per process plus free memory (no locks: a debugging aid).
void procdump();

PageTable proc_pagetable(Process* p);
void proc_free_pagetable(PageTable pt, uint64_t sz);

// exec.cpp: replaces the current process image; returns argc (for a0).
ErrorOr<uint64_t> exec(const char* path, char* const argv[]);

extern "C" void swtch(Context* from, Context* to);
