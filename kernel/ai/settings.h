// Every numeric setting of the AI service in one table: its name (the boot
// option), its range, what it means, and how it is read and set. Boot
// options (service.cpp), ai_control (sys_ai.cpp, for the settings that also
// change in a running boot) and the docs' tables all go through it, so a
// range is written once and checked in one place (set_setting).
//
// The values themselves stay beside the code that reads them (scheduler.h,
// kv_cache.h, sharing.h, requests.h, proposer.h): each file's invariants
// are stated where its data is. Settings that take a name (ai.policy,
// ai.prefix_share, ai.proposer) have their own parsers in those files.
#pragma once
#include <stdint.h>

namespace ai {

struct Setting {
  const char* name;       // "ai.max_batch": the boot option
  uint32_t lo, hi;        // accepted values, inclusive
  const char* meaning;
  uint32_t (*get)();
  void (*set)(uint32_t);  // called only with a value in [lo, hi]
};

// Read only at start(): how many workers, and harts per worker's row team
// (0 until start() sets the default, every hart).
extern uint32_t boot_workers, boot_harts;
// Read when a model is probed and loaded (engine.cpp): ai.context=N,
// positions per request for every model; 0, the default, is
// llm::context_for's choice (1024 for Qwen, the bundle's runtime_seq_len
// for Llama; lib/llm_rope.h says why). The models' summaries carry the result.
extern uint32_t boot_context;

// The table, in the order the docs list it.
extern const Setting kSettings[];
extern const uint32_t kSettingCount;

// The row named `name`, or nullptr.
const Setting* find_setting(const char* name);
// Sets s to v if v is in its range; false (nothing changed) otherwise.
// The caller holds ai::lock for a setting that running workers read.
bool set_setting(const Setting& s, uint64_t v);

}  // namespace ai
