// modelwrite FILE MODEL: a write to a model's file through a descriptor
// opened BEFORE the AI service loaded the model must be refused (EBUSY).
//
// Once a model is loaded its files' page-cache pages are the service's
// weights (docs/virtual-memory.md, "One copy of a model"), so the kernel
// refuses to open them for writing; a descriptor opened earlier is stopped
// by writei itself. The loader runs while the shell is already up, so this
// program, started at once after boot, opens FILE while MODEL is still
// loading (it says in which state it found the model), waits until MODEL
// is ready, then writes one byte at offset 0:
//   modelwrite: opened /AI/TINY/L02.BIN while TINY was loading
//   modelwrite: write after the load: Device or resource busy
//   modelwrite: shared writable map after the load: Device or resource busy
// (a store through a MAP_SHARED, PROT_WRITE map would reach the same pages).
// Exit status 0 only if both were refused with EBUSY.
#include "kai.h"

namespace {

// MODEL's state (KAI_AI_MODEL_*), or 0 while the service does not list it.
int32_t model_state(const char* model) {
  static kai_ai_info info;
  if (ai_info(&info) < 0) return 0;
  for (uint32_t i = 0; i < info.n_models; i++)
    if (strcmp(info.models[i].name, model) == 0) return info.models[i].state;
  return 0;
}

const char* state_name(int32_t s) {
  switch (s) {
    case KAI_AI_MODEL_LOADING: return "loading";
    case KAI_AI_MODEL_READY: return "ready";
    case KAI_AI_MODEL_FAILED: return "failed";
    default: return "not listed yet";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    if (argc > 3) fprintf(2, "modelwrite: unexpected argument '%s'\n", argv[3]);
    else fprintf(2, "modelwrite: missing %s\n", argc == 1 ? "FILE and MODEL" : "MODEL");
    fprintf(2, "usage: modelwrite FILE MODEL\n");
    return 2;
  }
  const char* file = argv[1];
  const char* model = argv[2];
  int fd = open(file, O_RDWR);
  int32_t at_open = model_state(model);
  if (fd < 0) {
    printf("modelwrite: open %s: %s (%s was %s)\n", file, strerror(fd), model, state_name(at_open));
    return 1;
  }
  printf("modelwrite: opened %s while %s was %s\n", file, model, state_name(at_open));
  int32_t s = at_open;
  for (int waited = 0; s != KAI_AI_MODEL_READY && s != KAI_AI_MODEL_FAILED && waited < 6000; waited++) {
    sleep(1);
    s = model_state(model);
  }
  if (s != KAI_AI_MODEL_READY) {
    printf("modelwrite: %s is %s, not ready\n", model, state_name(s));
    return 1;
  }
  // The byte the file already has would do as well: what matters is
  // whether the kernel lets the write reach the service's pages at all.
  char byte = 'x';
  long r = write(fd, &byte, 1);
  void* map = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  long m = mmap_failed(map);
  close(fd);
  if (r == 1) {
    printf("modelwrite: write after the load: accepted (the service's weights changed)\n");
    return 1;
  }
  printf("modelwrite: write after the load: %s\n", strerror(int(r)));
  if (m == 0) {
    printf("modelwrite: shared writable map after the load: accepted (stores would change the service's weights)\n");
    return 1;
  }
  printf("modelwrite: shared writable map after the load: %s\n", strerror(int(m)));
  return r == -KAI_EBUSY && m == -KAI_EBUSY ? 0 : 1;
}
