// Per-hart state. `tp` holds this hart's cpu index (0 = the boot hart) while
// in the kernel; the trapframe keeps it across user mode, where tp is the user's.
#pragma once
#include <stdint.h>
#include "param.h"
#include "riscv.h"

struct Process;

// Saved by swtch(): callee-saved integer registers plus the whole FP state.
// (The kernel is compiled with FP enabled, so any thread may hold live FP values.)
struct Context {
  uint64_t ra, sp;
  uint64_t s[12];
  uint64_t f[32];
  uint64_t fcsr;
};

struct Cpu {
  Process* proc = nullptr;      // running on this hart, or nullptr
  Context context = {};         // swtch() here to enter the scheduler
  int noff = 0;                 // depth of push_interrupts_off()
  bool intena = false;          // were interrupts on before push_interrupts_off()?
  uint64_t hartid = 0;          // SBI/PLIC hart id
  bool started = false;
  bool tick_stopped = false;    // tickless idle: timer masked until resume_tick() (trap.cpp)
  uint64_t tick_deadline = 0;   // the next tick, on the guest clock (trap.cpp, arm_tick())
  uint32_t idle = 0;            // 1: in the scheduler's wfi, waiting for work (idle.cpp; atomics
                                // only, and 32 bits: RV64 swaps words, not bytes)
  // Names of the spinlocks this hart holds (innermost last), for panic messages.
  static constexpr int MAX_HELD = 8;
  const char* held[MAX_HELD] = {};
  int nheld = 0;
};

extern Cpu cpus[NCPU];
extern int ncpu;                // harts in use

// Call with interrupts off (otherwise the process could move harts).
inline int cpu_index() { return static_cast<int>(riscv::read_tp()); }
inline Cpu* this_cpu() { return &cpus[cpu_index()]; }
inline uint64_t this_cpu_hartid() {
  uint64_t i = riscv::read_tp();
  return cpus[i < NCPU ? i : 0].hartid;
}

static_assert(__builtin_offsetof(Context, f) == 112, "swtch.S offsets");
static_assert(__builtin_offsetof(Context, fcsr) == 368, "swtch.S offsets");
