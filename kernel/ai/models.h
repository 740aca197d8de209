// The registry of resident models: filled by the loader thread at boot
// (loader.cpp), read by the scheduler and the system calls.
#pragma once
#include <stdint.h>
#include <kai/ai_abi.h>
#include "engine.h"

namespace ai {

struct Model {
  char name[KAI_AI_MODEL_NAME_MAX];
  int32_t state;            // KAI_AI_MODEL_LOADING / READY / FAILED (under ai::lock)
  int32_t error;
  ModelSummary summary;     // from CFG.BIN as soon as the scan has read it
  uint64_t load_ns;
  EngineModel* engine;      // set before state becomes READY; immutable after
};

extern Model models[KAI_AI_MAX_MODELS];
extern int n_models;          // under ai::lock
extern bool models_known;     // the scan of /AI is complete (under ai::lock)
extern bool models_loaded;    // ... and every model is READY or FAILED (under ai::lock)

int find_model(const char* name);   // index or -1; ai::lock held

}  // namespace ai
