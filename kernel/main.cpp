// Boot. OpenSBI enters _start (entry.S) on one hart - any hart id - which
// becomes cpu 0 and calls kmain(); it brings up memory, the console,
// traps and the PLIC, creates the first process and then starts every other
// hart through SBI HSM at _secondary_start -> kmain_secondary().
#include "boot.h"
#include "console.h"
#include "cpu.h"
#include "drivers/virtio_blk.h"
#include "fs/page_cache.h"
#include "idle.h"
#include "kalloc.h"
#include "mem_policy.h"
#include "mmap.h"
#include "printf.h"
#include "process.h"
#include "sbi.h"
#include "selftest.h"
#include "trap.h"
#include "uvm.h"

BootInfo g_boot;
Cpu cpus[NCPU];
int ncpu = 1;

extern "C" void _secondary_start();
extern "C" void (*__init_array_start[])();
extern "C" void (*__init_array_end[])();

namespace {
volatile int harts_up = 0;
}

extern "C" void kmain(uint64_t hartid, uint64_t fdt) {
  cpus[0].hartid = hartid;
  for (auto** ctor = __init_array_start; ctor < __init_array_end; ctor++) (*ctor)();
  fdt_parse(fdt, g_boot);
  console_init();
  kprintf("\nkai: booting on hart %lu; %lu MiB RAM at 0x%lx; %d harts; timebase %lu Hz\n", hartid,
          g_boot.ram_size >> 20, g_boot.ram_base, g_boot.nharts, g_boot.timebase_hz);
  kalloc_init();
  mem::init();
  fs::page_cache_init();
  vm_init();
  kvm_init();
  kvm_inithart();
  trap_inithart();
  plic_init();
  plic_inithart();
  virtio_blk_init();
  idle_init();
  user_init();
  kprintf("kai: memory: %lu free pages (%lu MiB)\n", kalloc_free_pages(),
          kalloc_free_pages() * PAGE_SIZE >> 20);

  // Start the other harts one at a time. Each new hart takes the next cpu
  // index (entry.S), records its own hart id and then reports in.
  int next = 1;
  for (int i = 0; i < g_boot.nharts && next < NCPU; i++) {
    uint64_t id = g_boot.hart_ids[i];
    if (id == hartid) continue;
    long err = sbi::hart_start(id, reinterpret_cast<uint64_t>(_secondary_start), 0);
    if (err != 0) {
      kprintf("kai: hart %lu did not start (SBI error %ld)\n", id, err);
      continue;
    }
    // Wait (at most 1 s) in wfi, woken by a timer 1 ms ahead, not in a busy
    // loop: under QEMU's instruction counting (-icount, exact mode) all harts
    // share one host thread round-robin, and a hart spinning here kept the
    // new hart from ever running its first instructions.
    uint64_t deadline = riscv::read_time() + g_boot.timebase_hz;
    while (__atomic_load_n(&harts_up, __ATOMIC_ACQUIRE) < next && riscv::read_time() < deadline) {
      sbi::set_timer(riscv::read_time() + g_boot.timebase_hz / 1000);
      asm volatile("wfi");
    }
    sbi::set_timer(next_tick_deadline());   // the normal tick again, on its grid
    if (__atomic_load_n(&harts_up, __ATOMIC_ACQUIRE) < next) {
      kprintf("kai: hart %lu was started but did not report in; not using it\n", id);
      break;   // its cpu index stays reserved: never hand it to another hart
    }
    next++;
  }
  ncpu = next;
  cpus[0].started = true;
  kprintf("kai: %d cpu%s running\n", ncpu, ncpu == 1 ? "" : "s");
  selftest_start();
  scheduler();
}

extern "C" void kmain_secondary(uint64_t hartid, uint64_t cpu) {
  cpus[cpu].hartid = hartid;
  kvm_inithart();
  trap_inithart();
  plic_inithart();
  cpus[cpu].started = true;
  __atomic_fetch_add(&harts_up, 1, __ATOMIC_RELEASE);
  scheduler();
}
