// The settings table (settings.h).
#include "settings.h"
#include "limits.h"
#include "scheduler.h"
#include "kv_cache.h"
#include "sharing.h"
#include "requests.h"
#include "proposer.h"
#include "platform.h"
#include "llm_config.h"

namespace ai {

uint32_t boot_workers = 1;
uint32_t boot_harts = 0;
uint32_t boot_context = 0;

// One row per setting: name, range, meaning, get, set.
const Setting kSettings[] = {
    {"ai.workers", 1, uint32_t(kMaxWorkers), "iteration loops, each with its own batch",
     [] { return boot_workers; }, [](uint32_t v) { boot_workers = v; }},
    {"ai.max_per_process", 1, uint32_t(kQueueCapacity), "request slots one process may hold",
     [] { return max_per_process; }, [](uint32_t v) { max_per_process = v; }},
    {"ai.max_batch", 1, kMaxBatch, "requests one worker runs together (1: one at a time)",
     [] { return max_batch; }, [](uint32_t v) { max_batch = v; }},
    {"ai.budget", 1, kMaxBudget, "positions through the model per iteration",
     [] { return token_budget; }, [](uint32_t v) { token_budget = v; }},
    {"ai.harts", 1, kMaxTeamParts, "harts one worker's pass is split over (default: every hart)",
     [] { return boot_harts; }, [](uint32_t v) { boot_harts = v; }},
    {"ai.kv_mb", 1, 65536, "megabytes of KV blocks per model",
     [] { return kv_mb; }, [](uint32_t v) { kv_mb = v; }},
    {"ai.context", 0, llm::kMaxRuntimeSeqLen, "positions per request (0: 1024 for Qwen, the bundle's for Llama)",
     [] { return boot_context; }, [](uint32_t v) { boot_context = v; }},
    {"ai.kv_block", 1, 256, "positions per KV block",
     [] { return kv_block_size; }, [](uint32_t v) { kv_block_size = v; }},
    {"ai.kv_blocks", 0, 1u << 20, "exactly this many KV blocks per model (0: from ai.kv_mb)",
     [] { return kv_blocks_override; }, [](uint32_t v) { kv_blocks_override = v; }},
    {"ai.prefix_cache", 0, 1, "full prompt blocks are cached and shared",
     [] { return uint32_t(prefix_cache_enabled); }, [](uint32_t v) { prefix_cache_enabled = v != 0; }},
    {"ai.preempt_gap", 1, kNoPriorityPreemption, "priority levels a queued request must be ahead to preempt",
     [] { return preempt_gap; }, [](uint32_t v) { preempt_gap = v; }},
    {"ai.aging_ms", 1, 3600000, "a request queued this long runs before any younger one",
     [] { return uint32_t(aging_ns / 1000000); }, [](uint32_t v) { aging_ns = uint64_t(v) * 1000000; }},
    {"ai.drafts", 0, kMaxDrafts, "proposed tokens per generating request and iteration",
     [] { return max_drafts; }, [](uint32_t v) { max_drafts = v; }},
    {"ai.reject_drafts", 0, 1, "tests: every proposed token is rejected",
     [] { return uint32_t(reject_drafts); }, [](uint32_t v) { reject_drafts = v != 0; }},
};
const uint32_t kSettingCount = sizeof kSettings / sizeof kSettings[0];

const Setting* find_setting(const char* name) {
  for (const Setting& s : kSettings)
    if (strcmp(s.name, name) == 0) return &s;
  return nullptr;
}

bool set_setting(const Setting& s, uint64_t v) {
  if (v < s.lo || v > s.hi) return false;
  s.set(uint32_t(v));
  return true;
}

}  // namespace ai
