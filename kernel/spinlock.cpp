// Spinlocks with interrupts off while held: an interrupt handler on the same
// hart that wanted the lock would otherwise spin forever.
//
// In this file: Spinlock::acquire/release/holding, the interrupt-off
// nesting (push/pop_interrupts_off) and the per-hart list of held locks
// that sleep() and panics print.
#include "spinlock.h"
#include "cpu.h"
#include "printf.h"
#include "riscv.h"

void Spinlock::acquire() {
  // Interrupts off first: if a timer interrupt came between taking the lock
  // and disabling interrupts, its handler could want the same lock and spin
  // on this hart forever.
  push_interrupts_off();
  if (holding()) panic("acquire: %s already held by this hart", name_);
  // Swap 1 in until the old value was 0 (amoswap.w.aq on RISC-V). The
  // ACQUIRE order is the point of the lock: no load or store of the critical
  // section may be performed before the swap that took the lock, by the
  // compiler or by the hart. Without it a hart could read data the previous
  // holder has not finished writing.
  while (__atomic_exchange_n(&locked_, 1u, __ATOMIC_ACQUIRE) != 0) {
  }
  cpu_ = this_cpu();
  if (cpu_->nheld < Cpu::MAX_HELD) cpu_->held[cpu_->nheld] = name_;
  cpu_->nheld++;
}

void Spinlock::release() {
  if (!holding()) panic("release: %s not held by this hart", name_);
  Cpu* c = cpu_;
  // Locks are usually released innermost first; find ours from the top.
  for (int i = (c->nheld < Cpu::MAX_HELD ? c->nheld : Cpu::MAX_HELD) - 1; i >= 0; i--) {
    if (c->held[i] == name_) {
      for (int j = i; j + 1 < c->nheld && j + 1 < Cpu::MAX_HELD; j++) c->held[j] = c->held[j + 1];
      break;
    }
  }
  c->nheld--;
  cpu_ = nullptr;   // before the store below: once it is 0, another hart owns cpu_
  // The mirror image of acquire: RELEASE order (a fence rw,w before the store
  // on RISC-V) makes every store of the critical section visible to other
  // harts before they can see locked_ == 0 and enter it themselves.
  __atomic_store_n(&locked_, 0u, __ATOMIC_RELEASE);
  // Interrupts back on only now: turned on earlier, an interrupt handler
  // could spin on a lock this hart still holds.
  pop_interrupts_off();
}

// Interrupts must be off (they are while we hold or test our own locks).
bool Spinlock::holding() const { return locked_ && cpu_ == this_cpu(); }

void push_interrupts_off() {
  bool was_on = riscv::intr_get();
  riscv::intr_off();
  Cpu* c = this_cpu();
  if (c->noff == 0) c->intena = was_on;
  c->noff++;
}

void pop_interrupts_off() {
  Cpu* c = this_cpu();
  if (riscv::intr_get()) panic("pop_interrupts_off: interrupts are on");
  if (c->noff < 1) panic("pop_interrupts_off: unbalanced");
  c->noff--;
  if (c->noff == 0 && c->intena) riscv::intr_on();
}

const char* held_locks_description(char* buf, unsigned long size) {
  Cpu* c = this_cpu();
  unsigned long n = 0;
  buf[0] = 0;
  for (int i = 0; i < c->nheld && i < Cpu::MAX_HELD; i++) {
    n += ksnprintf(buf + n, n < size ? size - n : 0, "%s%s", i ? ", " : "", c->held[i]);
    if (n >= size) break;
  }
  return buf;
}
