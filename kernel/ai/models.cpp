// The registry of resident models (models.h). The loader thread that fills
// it is loader.cpp.
#include "models.h"
#include "../string.h"

namespace ai {

Model models[KAI_AI_MAX_MODELS];
int n_models;
bool models_known;
bool models_loaded;

int find_model(const char* name) {
  for (int i = 0; i < n_models; i++)
    if (strcmp(models[i].name, name) == 0) return i;
  return -1;
}

}  // namespace ai
