// The AI service's bridge to the inference runtime (lib/): reads bundle
// files from the file system into one contiguous kernel region, validates
// them with the same llm::Model code as the cold path, and runs requests.
#include "engine.h"
#include "llm_rope.h"
#include "settings.h"
#include <new>
#include "llm.h"
#include "../fs/fs.h"
#include "../fs/page_cache.h"
#include "../kalloc.h"
#include "../printf.h"
#include "../string.h"
#include "limits.h"
#include "row_team.h"

namespace ai {

// Lives at the start of the model's contiguous region, followed by the files.
struct EngineModel {
  llm::Model model;
  llm::MemoryBundle files;
  uint64_t region_bytes;
};

namespace {

// Each file starts on a page and its last page's tail stays zero (the region
// is zero-filled): then the region's pages are exactly the files' page-cache
// pages and the cache can adopt them (one copy of a model, page_cache.h).
// (The runtime itself needs only 64: it reads floats in place.)
constexpr uint64_t kFileAlign = 4096;
static_assert(kFileAlign == PAGE_SIZE, "a file's bytes start on a page of their own");

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Looks up dir/name and locks it; pair with release(). Errors (NoEnt if it
// does not exist) leave nothing held. Only the lookup runs inside a log
// transaction: reading a locked inode writes nothing, and an open
// transaction during a multi-MiB layer read would hold up every commit.
ErrorOr<fs::Inode*> lookup_locked(const char* dir, const char* name) {
  char path[96];
  ksnprintf(path, sizeof(path), "%s/%s", dir, name);
  fs::Inode* ip;
  {
    fs::Transaction tx;   // namei may drop the last reference to a directory
    ip = TRY(fs::namei(path));
  }
  fs::ilock(ip);
  return ip;
}

void release(fs::Inode* ip) {
  fs::iunlock(ip);
  fs::Transaction tx;   // the last reference to an unlinked file frees it
  fs::iput(ip);
}

// Size of the regular file dir/name.
ErrorOr<uint64_t> file_size(const char* dir, const char* name) {
  fs::Inode* ip = TRY(lookup_locked(dir, name));
  uint64_t size = fs::inode_size(ip);
  bool is_file = fs::inode_type(ip) == KAI_T_FILE;
  release(ip);
  if (!is_file) return Errno::IsDir;
  return size;
}

// Reads exactly `size` bytes of dir/name into kernel memory at dst.
ErrorOr<void> read_file(const char* dir, const char* name, void* dst, uint64_t size) {
  fs::Inode* ip = TRY(lookup_locked(dir, name));
  auto got = fs::readi(ip, false, reinterpret_cast<uint64_t>(dst), 0, size);
  release(ip);
  if (got.is_error()) return got.error();
  if (got.value() != size) return Errno::IO;
  return {};
}

// read_file for a weight file: the same read, then, with the inode still
// locked, the file is pinned (writes and truncation refused), so the bytes
// read stay the file's bytes until the cache adopts the pages (adopt_file).
ErrorOr<void> read_file_pinned(const char* dir, const char* name, void* dst, uint64_t size) {
  fs::Inode* ip = TRY(lookup_locked(dir, name));
  auto got = fs::readi(ip, false, reinterpret_cast<uint64_t>(dst), 0, size);
  // Not pinned (sharing off, or no slot left): the service keeps a private
  // copy of this file, as it did before the cache could adopt pages.
  if (!got.is_error() && got.value() == size && fs::page_cache_sharing_models())
    (void)fs::page_cache_pin_file(ip).is_error();
  release(ip);
  if (got.is_error()) return got.error();
  if (got.value() != size) return Errno::IO;
  return {};
}

// The region's pages of dir/name become its page-cache pages (meminfo counts
// them: `free`'s pinned=); returns how many did. A file deleted since it was
// read is no longer pinned: nothing.
uint64_t adopt_file(const char* dir, const char* name, uint8_t* bytes, uint64_t size) {
  auto found = lookup_locked(dir, name);
  if (found.is_error()) return 0;
  fs::Inode* ip = found.value();
  uint64_t adopted = 0;
  if (fs::inode_size(ip) == size && fs::page_cache_file_pinned(ip))
    for (uint64_t i = 0; i * PAGE_SIZE < size; i++)
      adopted += fs::page_cache_adopt(ip, i, bytes + i * PAGE_SIZE) ? 1 : 0;
  release(ip);
  return adopted;
}

// A failed load: the files read so far are writable again.
void unpin_files(const char* dir, char names[][12], int n) {
  for (int i = 0; i < n; i++) {
    auto found = lookup_locked(dir, names[i]);
    if (found.is_error()) continue;
    fs::page_cache_unpin_file(found.value());
    release(found.value());
  }
}

// The bundle's file names in the order the runtime asks for them.
int bundle_files(const llm::Config& cfg, char names[][12]) {
  int n = 0;
  safestrcpy(names[n++], "CFG.BIN", 12);
  if (cfg.is_qwen()) safestrcpy(names[n++], "LTY.BIN", 12);
  safestrcpy(names[n++], "EMB.BIN", 12);
  safestrcpy(names[n++], "NRM.BIN", 12);
  safestrcpy(names[n++], "ROP.BIN", 12);
  for (uint32_t l = 0; l < cfg.n_layers; l++) {
    char layer[8];
    llm::layer_file_name(l, layer);
    safestrcpy(names[n++], layer, 12);
  }
  return n;
}

void fill_summary(const llm::Config& cfg, ModelSummary* s) {
  s->config = cfg;
  safestrcpy(s->family, cfg.is_qwen() ? "qwen3.5" : "llama", sizeof(s->family));
  s->dim = cfg.dim;
  s->n_layers = cfg.n_layers;
  s->vocab_size = cfg.vocab_size;
  s->runtime_seq_len = cfg.runtime_seq_len;
  s->n_params = cfg.n_params();
}

// CFG.BIN and LTY.BIN are small: read them into one page and parse. A
// missing CFG.BIN is Errno::NoEnt (the directory is not a bundle).
ErrorOr<void, Error> read_config(const char* dir, llm::Config* cfg) {
  auto cfg_size = file_size(dir, "CFG.BIN");
  if (cfg_size.is_error()) return Error::make(cfg_size.error(), "CFG.BIN", "cannot be opened");
  auto lty_size = file_size(dir, "LTY.BIN");
  bool have_lty = !lty_size.is_error();
  uint64_t lty_bytes = have_lty ? lty_size.value() : 0;
  if (cfg_size.value() > 1024) return Error::make(Errno::Invalid, "CFG.BIN", "file too large");
  if (lty_bytes > 2048) return Error::make(Errno::Invalid, "LTY.BIN", "file too large");
  auto* page = static_cast<uint8_t*>(kalloc());
  if (page == nullptr) return Error::make(Errno::NoMem, "CFG.BIN", "no page to read it into");
  ErrorOr<void, Error> status;
  if (auto r = read_file(dir, "CFG.BIN", page, cfg_size.value()); r.is_error()) {
    status = Error::make(r.error(), "CFG.BIN", "read error");
  } else if (auto l = have_lty ? read_file(dir, "LTY.BIN", page + 1024, lty_bytes) : ErrorOr<void>{}; l.is_error()) {
    status = Error::make(l.error(), "LTY.BIN", "read error");
  } else if (auto parsed = llm::parse_config(page, cfg_size.value(), page + 1024, lty_bytes, have_lty, cfg);
             parsed.is_error()) {
    status = Error::make(Errno::Invalid, parsed.error().message);   // it names the file and field
  }
  kfree(page);
  return status;
}

}  // namespace

// End-of-sequence ids from the header of the bundle's TOK.BIN, if it has
// one (course bundles do not: then a request never stops at an EOS). A
// broken TOK.BIN is reported, and the model still serves token ids.
void read_eos_ids(const char* dir, ModelSummary* summary) {
  summary->n_eos = 0;
  auto size = file_size(dir, "TOK.BIN");
  if (size.is_error()) return;
  auto* page = static_cast<uint8_t*>(kalloc());
  if (page == nullptr) return;
  uint64_t n = size.value() < 4096 ? size.value() : 4096;
  if (read_file(dir, "TOK.BIN", page, n).is_error()) {
    kfree(page);
    return;
  }
  uint32_t ids[8];
  auto got = llm::eos_ids_from_header(page, n, ids, 8);
  kfree(page);
  if (got.is_error()) {
    kprintf("ai: %s/TOK.BIN: %s (no end-of-sequence ids)\n", dir, got.error().message);
    return;
  }
  uint32_t count = got.value() < 4 ? got.value() : 4;
  for (uint32_t i = 0; i < count; i++) summary->eos[i] = ids[i];
  summary->n_eos = count;
}

ErrorOr<void, Error> engine_probe(const char* dir, ModelSummary* summary) {
  llm::Config cfg;
  TRY(read_config(dir, &cfg));
  // Requests are checked against the context the load will set (should the
  // load keep the bundle's length instead, its summary replaces this one).
  cfg.runtime_seq_len = llm::context_for(cfg, boot_context);
  fill_summary(cfg, summary);
  read_eos_ids(dir, summary);
  return {};
}

ErrorOr<EngineModel*, Error> engine_load(const char* dir, ModelSummary* summary) {
  llm::Config cfg;
  TRY(read_config(dir, &cfg));
  static char names[llm::kMaxLayers + 8][12];   // only the loader thread uses it
  static uint64_t sizes[llm::kMaxLayers + 8];
  int n_files = bundle_files(cfg, names);
  // A context longer than ROP.BIN's rows needs a RoPE table of its own,
  // placed after the files in the same region.
  uint32_t context = llm::context_for(cfg, boot_context);
  uint64_t rope_bytes = context > cfg.runtime_seq_len ? uint64_t(context) * cfg.rot_dim() * 4 : 0;

  uint64_t total = align_up(sizeof(EngineModel), kFileAlign) + align_up(rope_bytes, kFileAlign);
  for (int i = 0; i < n_files; i++) {
    auto size = file_size(dir, names[i]);
    if (size.is_error()) return Error::make(size.error(), names[i], "missing");
    sizes[i] = size.value();
    total += align_up(sizes[i], kFileAlign);
  }
  auto* region = static_cast<uint8_t*>(kalloc_contiguous(total));
  if (region == nullptr) {
    char mib[48];
    ksnprintf(mib, sizeof mib, "no contiguous memory for %lu MiB", total >> 20);
    return Error::make(Errno::NoMem, "weights", mib);
  }
  auto* em = new (region) EngineModel();
  em->region_bytes = total;
  uint8_t* cursor = region + align_up(sizeof(EngineModel), kFileAlign);
  for (int i = 0; i < n_files; i++) {
    auto r = read_file_pinned(dir, names[i], cursor, sizes[i]);
    if (r.is_error()) {
      unpin_files(dir, names, i);
      kfree_contiguous(region, total);
      return Error::make(r.error(), names[i], "read error");
    }
    em->files.add(names[i], cursor, sizes[i]);
    cursor += align_up(sizes[i], kFileAlign);
  }
  auto loaded = em->model.load(em->files);
  if (loaded.is_error()) {
    unpin_files(dir, names, n_files);
    kfree_contiguous(region, total);
    return Error::make(Errno::Invalid, loaded.error().message);   // it names the file and field
  }
  // Valid: the files' pages become page-cache pages. Only now, because the
  // region is freed whole (kfree_contiguous) on an error above, and that
  // must not free pages the cache holds. kai never unloads a model, so the
  // pages stay pinned for good (an unload would kfree them page by page).
  cursor = region + align_up(sizeof(EngineModel), kFileAlign);
  summary->pinned_pages = 0;
  for (int i = 0; i < n_files; i++) {
    summary->pinned_pages += adopt_file(dir, names[i], cursor, sizes[i]);
    cursor += align_up(sizes[i], kFileAlign);
  }
  auto context_set = em->model.set_context(context, rope_bytes ? reinterpret_cast<float*>(cursor) : nullptr);
  // ROP.BIN follows another rule: the bundle's length stays, and the log
  // says why (aistat's seq= shows the context either way).
  if (context_set.is_error()) kprintf("ai: %s: %s\n", dir, context_set.error().message);
  fill_summary(em->model.config(), summary);
  read_eos_ids(dir, summary);
  summary->bytes = total;
  return em;
}

// ---- sessions -----------------------------------------------------------

struct EngineSession {
  llm::Session session;
  void* mem = nullptr;   // kalloc_contiguous, kept between requests
  size_t bytes = 0;
};

// Statically sized: every worker has kMaxBatch sessions (their memory is
// allocated on first use, so an idle batch slot costs only this struct).
static EngineSession sessions[kMaxWorkers][kMaxBatch];

EngineSession* engine_session(uint32_t worker, uint32_t index) {
  if (worker >= uint32_t(kMaxWorkers) || index >= kMaxBatch) return nullptr;
  return &sessions[worker][index];
}

namespace {

llm::SessionOptions options_for(bool int8_activations) {
  llm::SessionOptions options;
  options.matvec = int8_activations ? llm::MatvecKind::Int8 : llm::MatvecKind::Float;
  return options;
}

// Memory of at least `bytes`, reusing what `mem` already holds.
ErrorOr<void> ensure_memory(void*& mem, size_t& have, size_t bytes) {
  if (have >= bytes) return {};
  if (mem) kfree_contiguous(mem, have);
  mem = kalloc_contiguous(bytes);
  have = mem ? bytes : 0;
  if (mem == nullptr) return Errno::NoMem;
  return {};
}

}  // namespace

ErrorOr<void, Error> engine_session_begin(EngineSession* s, EngineModel* em, bool int8_activations,
                                          const llm::KvPool* pool, bool checkpoint) {
  llm::SessionOptions options = options_for(int8_activations);
  options.paged_kv = pool != nullptr;
  options.checkpoint = checkpoint;
  size_t bytes = llm::Session::bytes_needed(em->model.config(), options);
  if (ensure_memory(s->mem, s->bytes, bytes).is_error())
    return Error::make(Errno::NoMem, "session", "no contiguous memory for its state");
  // init() lays the session out and resets every state, so reused memory
  // starts exactly as fresh memory would.
  if (auto r = s->session.init(em->model, s->mem, s->bytes, options); r.is_error())
    return Error::from("session", r.error());
  return {};
}

void engine_session_map(EngineSession* s, const llm::KvPool* pool, const uint32_t* table, uint32_t n) {
  if (pool) s->session.set_kv_pages(pool, table, n);
}

llm::Session* engine_runtime_session(EngineSession* s) { return &s->session; }

ErrorOr<void, Error> engine_session_checkpoint(EngineSession* s) {
  if (auto r = s->session.keep_checkpoint(); r.is_error()) return Error::from("rollback", r.error());
  return {};
}

ErrorOr<void, Error> engine_session_rewind(EngineSession* s, uint32_t pos) {
  if (auto r = s->session.rewind(pos); r.is_error()) return Error::from("rollback", r.error());
  return {};
}

ErrorOr<void, Error> engine_session_resume(EngineSession* s, uint32_t pos) {
  if (pos == 0) return {};
  if (auto r = s->session.resume_at(pos); r.is_error()) return Error::from("prefix reuse", r.error());
  return {};
}

ErrorOr<void, Error> engine_session_restored(EngineSession* s, uint32_t pos) {
  if (auto r = s->session.resume_from_snapshot(pos); r.is_error()) return Error::from("checkpoint", r.error());
  return {};
}

// ---- the batched forward pass ---------------------------------------------

static RowTeam teams[kMaxWorkers];

uint32_t engine_start_team(uint32_t worker, uint32_t harts) {
  if (worker >= uint32_t(kMaxWorkers)) return 0;
  return teams[worker].start(worker, harts);
}

uint32_t engine_team_parts(uint32_t worker) {
  return worker < uint32_t(kMaxWorkers) ? teams[worker].parts() : 0;
}

uint32_t engine_team_limit(uint32_t worker) {
  return worker < uint32_t(kMaxWorkers) ? teams[worker].limit() : 0;
}

bool engine_limit_teams(uint32_t harts, uint32_t workers) {
  for (uint32_t w = 0; w < workers && w < uint32_t(kMaxWorkers); w++)
    if (harts < 1 || harts > teams[w].parts()) return false;
  for (uint32_t w = 0; w < workers && w < uint32_t(kMaxWorkers); w++) teams[w].set_limit(harts);
  return true;
}

void engine_survey_team(uint32_t worker) {
  if (worker < uint32_t(kMaxWorkers)) teams[worker].survey();
}

uint32_t engine_team_width(uint32_t worker) {
  return worker < uint32_t(kMaxWorkers) ? teams[worker].width() : 0;
}

// Per worker: the runtime's Batch (scratch for one pass over up to
// kMaxBudget tokens), bound to the (model, activation kind) it last ran,
// and the row team behind its Parallel hook.
struct EngineBatch {
  llm::Batch batch;
  void* mem = nullptr;
  size_t bytes = 0;
  EngineModel* bound_model = nullptr;
  bool bound_int8 = false;
  llm::Parallel parallel;
};
static EngineBatch batches[kMaxWorkers];

namespace {

// llm::Parallel's run(): the worker's row team runs every part.
void team_run(void* ctx, uint32_t parts, void (*fn)(void* arg, uint32_t part), void* arg, uint64_t macs) {
  (void)parts;   // == the team's chunks (set in engine_forward)
  static_cast<RowTeam*>(ctx)->run(fn, arg, macs);
}

}  // namespace

ErrorOr<void, Error> engine_forward(uint32_t worker, EngineModel* em, bool int8_activations,
                                    llm::BatchItem* items, uint32_t n) {
  if (worker >= uint32_t(kMaxWorkers) || n > kMaxBudget)
    return Error::make(Errno::Invalid, "forward pass", "worker or item count out of range");
  EngineBatch& eb = batches[worker];
  if (eb.bound_model != em || eb.bound_int8 != int8_activations) {
    const llm::Config& cfg = em->model.config();
    if (ensure_memory(eb.mem, eb.bytes, llm::Batch::bytes_needed(cfg, kMaxBudget)).is_error())
      return Error::make(Errno::NoMem, "forward pass", "no contiguous memory for the batch scratch");
    if (auto r = eb.batch.init(em->model, eb.mem, eb.bytes, kMaxBudget, options_for(int8_activations)); r.is_error())
      return Error::from("forward pass", r.error());
    eb.parallel.ctx = &teams[worker];
    eb.parallel.run = team_run;
    eb.batch.set_parallel(&eb.parallel);
    eb.bound_model = em;
    eb.bound_int8 = int8_activations;
  }
  // The parts a product is cut into, under the team's limit now (1: the
  // worker alone). Parts never change a bit (lib/llm_rows.h).
  eb.parallel.parts = teams[worker].begin_forward();
  // One pass over the weights for all n tokens; each token's result is
  // exactly what it would be alone (lib/llm_batch.h).
  auto r = eb.batch.forward(items, n);
  teams[worker].end_of_forward();   // the row team's width control (row_team.h)
  if (r.is_error()) return Error::from("forward pass", r.error());
  return {};
}

// ---- sampling ------------------------------------------------------------------

// Per worker: rows of vocab_size logits and the sampler's index scratch,
// allocated on first use and grown when a pass needs more rows.
struct SampleScratch {
  void* mem = nullptr;
  size_t bytes = 0;
};
static SampleScratch sample_scratch[kMaxWorkers];

ErrorOr<LogitsRoom, Error> engine_logits_room(uint32_t worker, EngineModel* em, uint32_t rows) {
  if (worker >= uint32_t(kMaxWorkers)) return Error::make(Errno::Invalid, "sampler", "worker out of range");
  size_t vocab = em->model.config().vocab_size;
  SampleScratch& sc = sample_scratch[worker];
  if (ensure_memory(sc.mem, sc.bytes, vocab * 4 * (size_t(rows) + 1)).is_error())
    return Error::make(Errno::NoMem, "sampler", "no contiguous memory for the logits");
  auto* logits = static_cast<float*>(sc.mem);
  return LogitsRoom{logits, reinterpret_cast<uint32_t*>(logits + vocab * rows)};
}

// ---- request checks ---------------------------------------------------------

ErrorOr<void, Error> engine_check_request(const ModelSummary& model, const uint32_t* prompt,
                                          uint32_t prompt_len, uint32_t n_predict) {
  // The service sets each model's context (ai.context), so it takes the
  // longer prompts (KAI_AI_MAX_PROMPT, abi_checks.cpp), within that context.
  auto checked = llm::check_request(model.config, prompt, prompt_len, n_predict, llm::kMaxContextPrompt);
  if (checked.is_error()) return Error::from("request", checked.error());
  return {};
}

}  // namespace ai
