// The boot-time model loader: scans /AI for bundle directories, reads each
// bundle's header first (so requests can be validated at once), then loads
// the weights one model at a time while the shell is already up. A thread
// of the service, like the workers: it fills the registry (models.h), gives
// each model its KV pool (kv_cache.h) and wakes the workers (requests.h).
#include "loader.h"
#include "models.h"
#include "kv_cache.h"
#include "requests.h"
#include "trace.h"
#include "../fs/fs.h"
#include "../proc.h"
#include "../trap.h"
#include "../printf.h"
#include "../string.h"

namespace ai {

namespace {

constexpr const char* kModelRoot = "/AI";

// Collects the names of the subdirectories of /AI (any order on disk).
// The transaction covers the lookup and the final iput only (a directory
// is small, and its reads never wait for a commit).
int list_bundle_dirs(char names[][KAI_AI_MODEL_NAME_MAX], int max) {
  fs::Inode* ip;
  {
    fs::Transaction tx;   // namei may drop the last reference to a directory
    auto dir = fs::namei(kModelRoot);
    if (dir.is_error()) return 0;
    ip = dir.value();
  }
  fs::ilock(ip);
  int n = 0;
  kai_dirent de;
  for (uint64_t off = 0;; off += sizeof(de)) {
    auto got = fs::readi(ip, false, reinterpret_cast<uint64_t>(&de), off, sizeof(de));
    if (got.is_error() || got.value() != sizeof(de)) break;
    if (de.inum == 0 || de.name[0] == '.') continue;
    if (n == max) {
      kprintf("ai: skipping /AI/%s: at most %d models are loaded\n", de.name, max);
      continue;
    }
    if (strlen(de.name) >= KAI_AI_MODEL_NAME_MAX) {
      kprintf("ai: skipping /AI/%s: name longer than %d characters\n", de.name, KAI_AI_MODEL_NAME_MAX - 1);
      continue;
    }
    safestrcpy(names[n++], de.name, KAI_AI_MODEL_NAME_MAX);
  }
  fs::iunlock(ip);
  fs::Transaction tx;   // the last reference to an unlinked directory frees it
  fs::iput(ip);
  return n;
}

void loader_main(void*) {
  char names[KAI_AI_MAX_MODELS][KAI_AI_MODEL_NAME_MAX];
  int found = list_bundle_dirs(names, KAI_AI_MAX_MODELS);
  char path[64];

  // Phase 1: headers only.
  for (int i = 0; i < found; i++) {
    ksnprintf(path, sizeof(path), "%s/%s", kModelRoot, names[i]);
    ModelSummary summary{};
    auto probed = engine_probe(path, &summary);
    if (probed.is_error() && probed.error().code == Errno::NoEnt)
      continue;   // a directory without CFG.BIN is not a bundle
    {
      SpinlockGuard guard(lock);
      Model& m = models[n_models++];
      safestrcpy(m.name, names[i], sizeof(m.name));
      m.summary = summary;
      m.state = probed.is_error() ? KAI_AI_MODEL_FAILED : KAI_AI_MODEL_LOADING;
      m.error = probed.is_error() ? static_cast<int32_t>(probed.error().code) : 0;
    }
    trace::emit(KAI_TRACE_LOAD, 0, uint32_t(n_models - 1), probed.is_error() ? KAI_TRACE_LOAD_FAILED : KAI_TRACE_LOAD_PROBED);
    if (probed.is_error()) kprintf("ai: model %s failed: %s\n", names[i], probed.error().message);
  }
  {
    SpinlockGuard guard(lock);
    models_known = true;
    wakeup(&models_known_chan);
  }
  if (n_models == 0) kprintf("ai: no model bundles under %s\n", kModelRoot);

  // Phase 2: weights, one model at a time.
  for (int i = 0; i < n_models; i++) {
    Model& m = models[i];
    if (m.state != KAI_AI_MODEL_LOADING) continue;
    ksnprintf(path, sizeof(path), "%s/%s", kModelRoot, m.name);
    uint64_t t0 = clock_ns();
    trace::emit_at(t0, KAI_TRACE_LOAD, 0, uint32_t(i), KAI_TRACE_LOAD_WEIGHTS);
    ModelSummary summary{};
    auto loaded = engine_load(path, &summary);
    uint64_t elapsed = clock_ns() - t0;
    if (!loaded.is_error()) {
      // Its KV block pool, before anyone can run on it (the model is not
      // READY yet; kv_init_model allocates and logs, so no lock here).
      kv_init_model(i, summary.config, m.name, kQueueCapacity);
    }
    {
      SpinlockGuard guard(lock);
      if (loaded.is_error()) {
        m.state = KAI_AI_MODEL_FAILED;
        m.error = static_cast<int32_t>(loaded.error().code);
      } else {
        m.engine = loaded.value();
        m.summary = summary;
        m.load_ns = elapsed;
        m.state = KAI_AI_MODEL_READY;
      }
      trace::emit(KAI_TRACE_LOAD, 0, uint32_t(i), loaded.is_error() ? KAI_TRACE_LOAD_FAILED : KAI_TRACE_LOAD_READY);
      // Queued requests for this model can run now (or fail, if it failed).
      wakeup(&queue_nonempty_chan);
    }
    // The console may sleep, so log outside the lock.
    if (loaded.is_error()) {
      kprintf("ai: model %s failed: %s\n", m.name, loaded.error().message);
    } else {
      // One kprintf per line, so the line reaches the console in one piece.
      uint64_t params_k = summary.n_params / 1000;
      uint64_t mib10 = summary.bytes * 10 / (1024 * 1024);
      kprintf("ai: model %s ready: %s, %lu.%luM params, %lu.%lu MiB, loaded in %lu ms\n", m.name,
              summary.family, params_k / 1000, (params_k % 1000) / 100, mib10 / 10, mib10 % 10,
              elapsed / 1000000);
    }
  }
  {
    // The workers survey their row teams once this is set and they are
    // idle (worker.cpp): the loader no longer competes for the harts.
    SpinlockGuard guard(lock);
    models_loaded = true;
    wakeup(&queue_nonempty_chan);
  }
  kthread_exit();
}

}  // namespace

void start_loader() {
  auto pid = kthread_create("ai-loader", loader_main, nullptr);
  if (pid.is_error()) {
    kprintf("ai: cannot start the model loader (error %d)\n", static_cast<int>(pid.error()));
    SpinlockGuard guard(lock);
    models_known = true;
    models_loaded = true;
    wakeup(&models_known_chan);
  }
}

}  // namespace ai
