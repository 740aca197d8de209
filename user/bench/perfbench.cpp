// perfbench [--asset-dir D] [--float] [--group G] [--quick] [--repeat R] [--case C] [--profile]: the cost of the
// batched forward pass (lib/llm_batch.h) on a model bundle (default /AI/SMOL),
// int8 activations unless --float. tools/perf.py (make perf) runs it twice:
// in exact mode (QEMU -icount: the guest clock counts instructions, 1 ns
// each) for instructions per multiply-add, and in real time for tokens/s.
//
//   decode@B   B sessions, each after an 8-token prompt, one decode token
//              each in one pass (B items of B sessions)
//   prefill@N  one session, an N-token prompt in one pass (first token out)
//
// One line per case:
//   perf case=decode batch=8 tokens=8 macs=N ns=N weight_bytes=N
// macs are the runtime's own work counts for the pass (Session::work).
// --quick: decode@1, decode@8 and prefill@64 only. --repeat R: run each case
// R times and report the fastest (real time on a shared host is noisy; in
// exact mode every run gives the same count). --case decode@B or prefill@N:
// that case alone. --profile: the trace's timer samples run during the timed
// passes only (`aitrace` then prints them; tools/hotspots.py reads them).
#include <kai/ai_trace.h>

#include "kai.h"
#include "kai_file.h"
#include "kai_options.h"
#include "llm.h"

namespace {

// Bundle files from a directory, each read whole into its own buffer.
class DirBundle : public llm::BundleSource {
 public:
  explicit DirBundle(const char* dir) : dir_(dir) {}
  bool get(const char* name, llm::Bytes* out) override {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir_, name);
    size_t size = 0;
    int err = 0;
    uint8_t* buf = read_whole_file(path, &size, &err, 4096);
    if (!buf) {
      if (err != -KAI_ENOENT) fprintf(2, "perfbench: cannot read %s: %s\n", path, strerror(err));
      return false;
    }
    out->data = buf;
    out->size = size;
    return true;
  }

 private:
  const char* dir_;
};

void* alloc64(size_t n) { return aligned_alloc(4096, n); }

struct Bench {
  llm::Model model;
  llm::SessionOptions opt;
  llm::Batch batch;
  llm::Session* sessions = nullptr;
  uint32_t n_sessions = 0;
  uint32_t repeat = 1;
  bool profile = false;   // --profile: the sampling profiler runs during the timed passes only

  // Starts (true) or stops the trace's timer samples around a timed pass, so
  // that a profile (tools/hotspots.py) holds the pass and not its set-up.
  void sampling(bool on) const {
    if (profile) ai_control(on ? KAI_AI_CTL_TRACE_START : KAI_AI_CTL_TRACE_STOP, on ? KAI_TRACE_CLASS_SAMPLES : 0);
  }

  uint32_t token(uint32_t i) const { return (i * 7919u + 13u) % model.config().vocab_size; }

  void report(const char* kind, uint32_t size, uint32_t tokens, uint64_t macs, uint64_t ns, uint64_t wbytes) {
    printf("perf case=%s batch=%u tokens=%u macs=%lu ns=%lu weight_bytes=%lu\n", kind, size, tokens,
           (unsigned long)macs, (unsigned long)ns, (unsigned long)wbytes);
  }

  // One batched pass, timed (only the pass: the profiler samples it alone);
  // *best keeps the shortest pass so far. False after saying why it failed.
  bool timed_forward(llm::BatchItem* items, uint32_t n, uint64_t* best) {
    sampling(true);
    uint64_t t0 = clock_ns();
    auto r = batch.forward(items, n);
    uint64_t t1 = clock_ns();
    sampling(false);
    if (r.is_error()) {
      fprintf(2, "perfbench: %s\n", r.error().message);
      return false;
    }
    if (t1 - t0 < *best) *best = t1 - t0;
    return true;
  }

  bool decode(uint32_t b) {
    uint64_t best = ~0ull, macs = 0, wbytes = 0;
    for (uint32_t rep = 0; rep < repeat; rep++) {
      llm::BatchItem items[16];
      // Every session has a prompt of 8 tokens behind it (prefill not measured).
      for (uint32_t s = 0; s < b; s++) {
        sessions[s].reset();
        uint32_t prompt[8];
        for (uint32_t i = 0; i < 8; i++) prompt[i] = token(s * 8 + i);
        if (sessions[s].prefill(prompt, 8).is_error()) return false;
        items[s] = llm::BatchItem{&sessions[s], token(1000 + s), llm::Phase::Decode, true, 0};
      }
      if (!timed_forward(items, b, &best)) return false;
      macs = wbytes = 0;  // reset() zeroed the counts: this pass only
      for (uint32_t s = 0; s < b; s++) {
        macs += sessions[s].work(llm::Phase::Decode).macs;
        wbytes += sessions[s].work(llm::Phase::Decode).weight_bytes;
      }
    }
    report("decode", b, b, macs, best, wbytes);
    return true;
  }

  bool prefill(uint32_t n) {
    llm::Session& s = sessions[0];
    static llm::BatchItem items[256];
    uint64_t best = ~0ull;
    for (uint32_t rep = 0; rep < repeat; rep++) {
      s.reset();
      for (uint32_t i = 0; i < n; i++) items[i] = llm::BatchItem{&s, token(i), llm::Phase::Prefill, i + 1 == n, 0};
      if (!timed_forward(items, n, &best)) return false;
    }
    const llm::WorkCounts& w = s.work(llm::Phase::Prefill);
    report("prefill", n, n, w.macs, best, w.weight_bytes);
    return true;
  }
};

// "decode@B" (B = 1..16) or "prefill@N" (N = 1..255) into its kind and size;
// false if `text` is neither.
bool parse_case(const char* text, bool* decode, uint32_t* size) {
  const char* number = nullptr;
  if (strncmp(text, "decode@", 7) == 0) *decode = true, number = text + 7;
  else if (strncmp(text, "prefill@", 8) == 0) *decode = false, number = text + 8;
  else return false;
  char* end = nullptr;
  unsigned long n = strtoul(number, &end, 10);
  if (end == number || *end != 0 || n == 0 || n > (*decode ? 16ul : 255ul)) return false;
  *size = uint32_t(n);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const char* dir = "/AI/SMOL";
  static Bench b;
  b.opt.matvec = llm::MatvecKind::Int8;
  bool quick = false;
  bool one_case = false, one_decode = false;
  uint32_t one_size = 0;
  CommandLine args("perfbench", "perfbench [--asset-dir D] [--float] [--group G] [--quick] [--repeat R] [--case C] "
                   "[--profile]", argc, argv);
  while (args.next()) {
    const char* c = nullptr;
    if (args.flag("--float")) b.opt.matvec = llm::MatvecKind::Float;
    else if (args.text("--asset-dir", &dir) || args.number("--group", 0, 65536, &b.opt.int8_group) ||
             args.flag("--quick", &quick) || args.flag("--profile", &b.profile) ||
             args.number("--repeat", 1, 1000, &b.repeat))
      continue;
    else if (args.text("--case", &c)) {
      if (!parse_case(c, &one_decode, &one_size)) {
        fprintf(2, "perfbench: --case: '%s' is not decode@B (B = 1..16) or prefill@N (N = 1..255)\n", c);
        return 2;
      }
      one_case = true;
    } else args.unknown();
  }
  DirBundle files(dir);
  auto loaded = b.model.load(files);
  if (loaded.is_error()) {
    fprintf(2, "perfbench: %s (bundle %s)\n", loaded.error().message, dir);
    return 1;
  }
  const llm::Config& c = b.model.config();
  uint32_t max_prefill = c.runtime_seq_len < 255 ? c.runtime_seq_len : 255;
  size_t bb = llm::Batch::bytes_needed(c, max_prefill);
  void* bm = alloc64(bb);
  if (!bm || b.batch.init(b.model, bm, bb, max_prefill, b.opt).is_error()) {
    fprintf(2, "perfbench: not enough memory for a batch of %u\n", max_prefill);
    return 1;
  }
  b.n_sessions = quick ? 8 : 16;
  if (one_case && one_decode) b.n_sessions = one_size;
  static llm::Session sessions[16];
  b.sessions = sessions;
  size_t sb = llm::Session::bytes_needed(c);
  for (uint32_t s = 0; s < b.n_sessions; s++) {
    void* m = alloc64(sb);
    if (!m || sessions[s].init(b.model, m, sb, b.opt).is_error()) {
      fprintf(2, "perfbench: not enough memory for %u sessions\n", b.n_sessions);
      return 1;
    }
  }
  if (b.repeat == 0) b.repeat = 1;
  printf("perfbench model=%s matvec=%s group=%u repeat=%u\n", dir, b.batch.ops().name, b.opt.int8_group, b.repeat);
  if (one_case) {
    uint32_t n = one_size < max_prefill ? one_size : max_prefill;
    bool ok = one_decode ? b.decode(one_size) : b.prefill(n);
    if (!ok) return 1;
    printf("perfbench done\n");
    return 0;
  }
  static const uint32_t kDecode[] = {1, 2, 4, 8, 16}, kQuickDecode[] = {1, 8};
  static const uint32_t kPrefill[] = {16, 64, 255}, kQuickPrefill[] = {64};
  const uint32_t* dec = quick ? kQuickDecode : kDecode;
  uint32_t n_dec = quick ? 2 : 5;
  for (uint32_t i = 0; i < n_dec; i++)
    if (!b.decode(dec[i])) return 1;
  const uint32_t* pre = quick ? kQuickPrefill : kPrefill;
  uint32_t n_pre = quick ? 1 : 3;
  for (uint32_t i = 0; i < n_pre; i++) {
    uint32_t n = pre[i] < max_prefill ? pre[i] : max_prefill;
    if (!b.prefill(n)) return 1;
  }
  printf("perfbench done\n");
  return 0;
}
