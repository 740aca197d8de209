// The AI service's face to the rest of the kernel: start() reads the
// service's options from the kernel command line and starts its threads;
// process_exited() forgets a dead process's requests.
#include "service.h"
#include "requests.h"
#include "scheduler.h"
#include "models.h"
#include "loader.h"
#include "worker.h"
#include "engine.h"
#include "row_team.h"
#include "kv_cache.h"
#include "trace.h"
#include "load_meter.h"
#include "sharing.h"
#include "proposer.h"
#include "settings.h"
#include "../cpu.h"
#include "../fdt.h"
#include "../boot.h"
#include "../printf.h"
#include "../proc.h"

namespace ai {

// Written only by start(), which returns before the first user program
// runs, so readers need no lock.
static int worker_count;

namespace {

// A numeric setting from the command line when it lies in its range
// (settings.h); otherwise the current value stays and the console says why
// (a value that is not a number at all, such as `ai.budget=lots`, too).
void option_from_boot(const Setting& s) {
  char text[64];
  if (!bootarg_str(g_boot, s.name, text, sizeof text)) return;   // absent (or absurdly long)
  int64_t v = bootarg_int(g_boot, s.name, -1);
  if (v < 0 || !set_setting(s, uint64_t(v)))
    kprintf("ai: %s=%s out of range %u..%u; using %u\n", s.name, text, s.lo, s.hi, s.get());
}

}  // namespace

int n_workers() { return worker_count; }

void start() {
  // Harts per iteration: all of them by default. A row team's helpers are
  // ordinary preemptible threads, so the shell and the clients still get
  // their turn on every hart, and the team's width control (row_team.h)
  // stops using harts that do not make a pass faster (more harts than host
  // cores under QEMU).
  boot_harts = static_cast<uint32_t>(ncpu) < kMaxTeamParts ? static_cast<uint32_t>(ncpu) : kMaxTeamParts;
  for (uint32_t i = 0; i < kSettingCount; i++) option_from_boot(kSettings[i]);
  if (token_budget < max_batch) {
    // Every running request's decode token must fit in one iteration.
    kprintf("ai: ai.budget=%u is below ai.max_batch=%u; using budget %u\n", token_budget, max_batch, max_batch);
    token_budget = max_batch;
  }
  char name[64];
  if (bootarg_str(g_boot, "ai.policy", name, sizeof name) && !policy_from_name(name, &policy))
    kprintf("ai: unknown ai.policy=%s (fcfs, sjf, priority or fair); using %s\n", name, policy_name(policy));
  if (bootarg_str(g_boot, "ai.prefix_share", name, sizeof name) && !prefix_share_from_name(name, &prefix_share))
    kprintf("ai: unknown ai.prefix_share=%s (session, global or off); using %s\n", name,
            prefix_share_name(prefix_share));
  if (prefix_share == PrefixShare::Off) prefix_cache_enabled = false;   // nobody shares: nothing to cache
  if (bootarg_str(g_boot, "ai.proposer", name, sizeof name) && !proposer_from_name(name, &proposer_kind))
    kprintf("ai: unknown ai.proposer=%s (ngram or echo); using %s\n", name, proposer_name(proposer_kind));
  uint32_t workers = boot_workers, harts = boot_harts;

  trace_boot();   // before the loader, so that model loading is traced
  start_loader();
  for (uint32_t i = 0; i < workers; i++) {
    engine_start_team(i, harts);
    if (auto started = start_worker(i); started.is_error()) {
      kprintf("ai: cannot start worker %u (error %d)\n", i, static_cast<int>(started.error()));
      continue;
    }
    worker_count++;
  }
}

void on_timer_tick() { sample_load_on_tick(); }

bool profiler_running() { return trace::enabled(KAI_TRACE_SAMPLE); }

void profiler_sample(uint64_t pc, uint64_t ra, uint32_t mode, uint32_t pid) {
  trace::record(KAI_TRACE_SAMPLE, 0, 0, uint32_t(pc), uint32_t(pc >> 32), mode, pid, uint32_t(ra));
}

void process_exited(int pid) {
  SpinlockGuard guard(lock);
  forget_owner(pid);
  fair_counters.forget(pid);
}

}  // namespace ai
