// Processes and kernel threads as the rest of the kernel sees them: the
// Process record, the current process, sleep/wakeup, kernel threads, and
// copies to or from the current process's memory. (The scheduler's own
// operations, fork/exec/exit/wait, are in process.h.)
#pragma once
#include <stdint.h>
#include "param.h"
#include "spinlock.h"
#include "vm.h"
#include "cpu.h"
#include "vm_area.h"

struct Trapframe;

namespace fs { struct File; struct Inode; }

enum class ProcState { Unused, Used, Sleeping, Runnable, Running, Zombie };

struct Process {
  Spinlock lock{"proc"};
  // -- protected by lock --
  ProcState state = ProcState::Unused;
  const void* chan = nullptr;   // sleeping on this
  bool killed = false;
  int exit_status = 0;
  int pid = 0;
  // The Unix session it belongs to: the pid of the session's leader (the
  // process that called setsid(); init leads session 1), 0 for a kernel
  // thread. fork() copies it, setsid() changes it. Pids are never reused,
  // so a session id names one session for the whole life of the kernel:
  // the AI service uses it as the default prefix-cache domain
  // (docs/sharing.md).
  int sid = 0;

  // -- private to the process --
  PageTable pagetable = nullptr;      // nullptr for a kernel thread
  fs::File* ofile[NOFILE] = {};       // open files, indexed by file descriptor
  fs::Inode* cwd = nullptr;           // current directory (a reference: iput at exit)
  char name[32] = {};
  VmArea vmas[NVMA] = {};             // mmap()'s mappings (mmap.h)
  VmCounters vm = {};                 // its page faults (vmstat())
  uint64_t truncations_seen = 0;      // fs::truncations_total() at its last vm_sync_truncations

  // -- kernel core only --
  Process* parent = nullptr;          // protected by the global wait lock
  uint64_t kstack = 0;                // bottom of KSTACK_SIZE bytes (direct-mapped)
  Trapframe* trapframe = nullptr;     // user registers (incl. FP) while in the kernel
  Context context = {};               // swtch() here to run the process
  uint64_t sz = 0;                    // end of program + heap (the program break)
  uint64_t heap_start = 0;            // break right after exec; sbrk cannot go below
  bool is_kthread = false;
  // An unknown system-call number is logged once per process, not once per
  // call: otherwise any program could flood the console through the kernel.
  // (All processes together also share a budget of lines a second, since a
  // fork loop makes a new process per call: kernel/syscall.cpp.)
  bool logged_unknown_syscall = false;
  void (*kfn)(void*) = nullptr;       // kernel thread body
  void* karg = nullptr;
};

// The process (or kernel thread) running on this hart, or nullptr.
Process* current_process();
// Atomically releases lk and sleeps on chan; reacquires lk on wakeup.
void sleep(const void* chan, Spinlock& lk);
// Wakes every process sleeping on chan. Callable from interrupts.
void wakeup(const void* chan);
// Has the current process been killed? (Long sleeps check it.)
bool current_killed();

// Starts a kernel thread running fn(arg); it has no user address
// space and is scheduled like a process. Returns its pid or an error.
ErrorOr<int> kthread_create(const char* name, void (*fn)(void*), void* arg);

// Ends the calling kernel thread (returning from its function does the same).
// Its slot is reclaimed by the scheduler; nobody waits for kernel threads.
[[noreturn]] void kthread_exit();

// Copy to/from either a user address of the current process (user == true)
// or a kernel address. The file-system read/write paths and the console use
// these, so one code path serves read() into a user buffer and the kernel
// reading a file into its own memory. They live here, not in vm.h, because
// "the current process" is this layer's idea: vm.cpp only knows page tables.
ErrorOr<void> either_copyout(bool user_dst, uint64_t dst, const void* src, uint64_t len);
ErrorOr<void> either_copyin(void* dst, bool user_src, uint64_t src, uint64_t len);
