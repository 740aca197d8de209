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

// `key=N` from the command line when it lies in [lo, hi]; otherwise the
// current value stays and the console says why (a value that is not a
// number at all, such as `ai.budget=lots`, too).
void option_u32(const char* key, uint32_t lo, uint32_t hi, uint32_t* value) {
  char text[64];
  if (!bootarg_str(g_boot, key, text, sizeof text)) return;   // absent (or absurdly long)
  int64_t v = bootarg_int(g_boot, key, -1);
  if (v >= lo && v <= hi) *value = static_cast<uint32_t>(v);
  else kprintf("ai: %s=%s out of range %u..%u; using %u\n", key, text, lo, hi, *value);
}

}  // namespace

int n_workers() { return worker_count; }

void start() {
  uint32_t workers = 1;
  option_u32("ai.workers", 1, kMaxWorkers, &workers);
  option_u32("ai.max_per_process", 1, kQueueCapacity, &max_per_process);
  option_u32("ai.max_batch", 1, kMaxBatch, &max_batch);
  option_u32("ai.budget", 1, kMaxBudget, &token_budget);
  if (token_budget < max_batch) {
    // Every running request's decode token must fit in one iteration.
    kprintf("ai: ai.budget=%u is below ai.max_batch=%u; using budget %u\n", token_budget, max_batch, max_batch);
    token_budget = max_batch;
  }
  option_u32("ai.kv_mb", 1, 65536, &kv_mb);
  option_u32("ai.kv_block", 1, 256, &kv_block_size);
  option_u32("ai.kv_blocks", 0, 1u << 20, &kv_blocks_override);
  uint32_t prefix = 1;
  option_u32("ai.prefix_cache", 0, 1, &prefix);
  prefix_cache_enabled = prefix != 0;
  char name[64];
  if (bootarg_str(g_boot, "ai.policy", name, sizeof name) && !policy_from_name(name, &policy))
    kprintf("ai: unknown ai.policy=%s (fcfs, sjf, priority or fair); using %s\n", name, policy_name(policy));
  if (bootarg_str(g_boot, "ai.prefix_share", name, sizeof name) && !prefix_share_from_name(name, &prefix_share))
    kprintf("ai: unknown ai.prefix_share=%s (session, global or off); using %s\n", name,
            prefix_share_name(prefix_share));
  if (prefix_share == PrefixShare::Off) prefix_cache_enabled = false;   // nobody shares: nothing to cache
  option_u32("ai.preempt_gap", 1, kNoPriorityPreemption, &preempt_gap);
  uint32_t aging_ms = kDefaultAgingMs;
  option_u32("ai.aging_ms", 1, 3600000, &aging_ms);
  aging_ns = uint64_t(aging_ms) * 1000000;
  option_u32("ai.drafts", 0, kMaxDrafts, &max_drafts);
  if (bootarg_str(g_boot, "ai.proposer", name, sizeof name) && !proposer_from_name(name, &proposer_kind))
    kprintf("ai: unknown ai.proposer=%s (ngram or echo); using %s\n", name, proposer_name(proposer_kind));
  uint32_t reject = 0;
  option_u32("ai.reject_drafts", 0, 1, &reject);
  reject_drafts = reject != 0;

  // Harts per iteration: all of them by default. A row team's helpers are
  // ordinary preemptible threads, so the shell and the clients still get
  // their turn on every hart, and the team's width control (row_team.h)
  // stops using harts that do not make a pass faster (more harts than host
  // cores under QEMU).
  uint32_t harts = static_cast<uint32_t>(ncpu);
  option_u32("ai.harts", 1, kMaxTeamParts, &harts);

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
