// llmrun: generation from token ids (or text) with a kai model bundle.
//
//   llmrun [--asset-dir D] [--predict N] [--prompt-file F | --stdin | --text "..."]
//          [--int8] [--group G] [--timing] [--align-tick] [--stream] [--mmap] [--populate]
//          [--temp X] [--top-k N] [--top-p X] [--min-p X] [--repeat-penalty X]
//          [--repeat-last-n N] [--seed N] [--stop "ID ..."] [--stop-text "TEXT"] [--stop-eos] tok...
//   Sampling and stopping mean what they mean for `ai` (lib/llm_sample.h:
//   the same code, so the same seed gives the same tokens on both paths);
//   greedy by default. --stream prints each token as it is generated;
//   --text encodes the prompt with the bundle's TOK.BIN and prints text
//   (it implies --stream and --stop-eos). --stop-text "TEXT": a stop
//   sequence given as text, encoded with TOK.BIN (no BOS), then exactly
//   like --stop with those ids.
//   --align-tick: start each request's clock right after a timer tick (exact
//   mode, qemu_run --deterministic, then repeats to the instruction)
//   --speculate ngram:K | predicted:K (with --prediction FILE) | oracle:K:A:
//   speculative decoding as `ai` does it in the kernel (lib/llm_speculate.h
//   has the proposers): up to K drafts after the newest token, verified in
//   one batched pass (Session::verify), the rejected ones rolled back
//   (Session::rewind, through a checkpoint for a model with linear layers).
//   The tokens are the plain ones, bit for bit; --timing adds drafted= and
//   accepted=. oracle runs the request once, then again predicting that
//   answer with each token replaced with probability 1 - A. --adaptive: the
//   drafts per pass move in 0..K with how many are kept (llm::DraftControl).
//   --regex R | --json-schema FILE: constrained decoding (lib/grammar.h):
//   every generated token keeps the output a match or a prefix of one; the
//   request ends by itself when nothing may follow (finish=grammar), and
//   --timing says grammar=match or grammar=prefix. Not with --speculate.
//
//   --mmap: the bundle's files are used in place through mmap (read-only,
//   MADV_SEQUENTIAL; the bundle's bytes are already the layout the runtime
//   reads) instead of read() into private memory; --populate (implies
//   --mmap) faults every page in at load. The default is read(). --timing
//   ends with load=read|mmap|mmap+populate and the run's major_faults=,
//   minor_faults= and disk_bytes= (bytes the system read into its page
//   cache meanwhile; 0 on the host), resident_kib= and shared_kib= (this
//   process's pages, and those it shares: guest only).
//   --forks N: the pre-fork server's pattern: load (or map) once, then run
//   the request in N children forked one after another (copy-on-write:
//   each starts in page-table time); each child prints its own tokens and
//   timing line, with fork_us= (the parent's fork() to the child's start).
//   --context N: positions per request, as the kernel's ai.context=N (the
//   default is llm::context_for's: 1024 for Qwen, the bundle's
//   runtime_seq_len for Llama); RoPE rows past ROP.BIN are computed. With
//   it a prompt may have up to 1024 tokens, as in the kernel's service
//   (without it, the course's 255).
//
// With no prompt it reads lines "<predict> <tok0> <tok1> ..." until "exit",
// "quit" or end of input. Each request prints one line of generated ids.
// The same source runs on the host and (with platform_kai.cpp) inside kai,
// so it uses only platform.h and the runtime (no libc).
#include "platform.h"
#include "llm.h"
#include "llm_speculate.h"
#include "llm_rope.h"
#include "grammar.h"
#include "../lib/option_parser.h"

namespace {

using llm::TextBuf;

constexpr uint32_t kMaxTokens = 1024;    // ids accepted on one request line
constexpr size_t kLineCap = 16384;
constexpr uint32_t kDefaultPredict = 32;

void out(const char* s) { platform::write_out(s, llm::str_len(s)); }
void err(const char* s) { platform::write_err(s, llm::str_len(s)); }
void errln(const char* s) { err(s); err("\n"); }

// What to generate beyond greedy-until-N: sampling and stop conditions.
struct Generation {
  llm::SamplingParams sampling;   // greedy unless --temp / --repeat-penalty
  uint64_t seed = 0;
  // --stop sequences, packed as the kernel ABI carries them (lib/llm_stop.h).
  uint32_t stop[llm::kMaxStopWords];
  uint32_t stop_words = 0;
  uint32_t n_stops = 0;
  const char* stop_text[llm::kMaxStopSequences];   // --stop-text, encoded once TOK.BIN is loaded
  uint32_t n_stop_text = 0;
  bool stop_eos = false;
  // Thousandths as given on the command line (converted once, by the
  // runtime's sampling_from_thousandths, as the kernel does).
  uint32_t temp = 0, top_k = 0, top_p = 0, min_p = 0, penalty = 0, last_n = 0;
};

struct Options {
  const char* asset_dir = nullptr;
  bool stream = false;
  const char* text = nullptr;
  Generation gen;
  uint32_t predict = kDefaultPredict;
  const char* prompt_file = nullptr;
  bool use_stdin = false;
  bool timing = false;
  bool align_tick = false;   // start each request's clock right after a timer tick
  bool map = false;          // --mmap: the bundle's files used in place (mmap), not read
  bool populate = false;     // --populate: and every page faulted in at load
  uint32_t forks = 0;        // --forks N: load once, then run the request in N forked children
  uint32_t context = 0;      // --context N: positions per request (0: llm::context_for's default)
  llm::SessionOptions session;
  llm::SpecChoice spec;      // --speculate
  const char* prediction_file = nullptr;
  llm::GrammarKind grammar = llm::GrammarKind::None;   // --regex / --json-schema
  const char* grammar_arg = nullptr;                   // the pattern, or the schema's file
};

bool parse_u32(const char* s, uint32_t* v) {
  if (!*s) return false;
  uint64_t x = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    x = x * 10 + uint64_t(*s - '0');
    if (x > 0xffffffffull) return false;
  }
  *v = uint32_t(x);
  return true;
}

// Splits text into decimal ids. Returns false (and names the bad word) on
// anything that is not a non-negative decimal id.
bool parse_ids(char* text, uint32_t* ids, uint32_t cap, uint32_t* n) {
  *n = 0;
  char* p = text;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == ',') p++;
    if (!*p) break;
    char* w = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n' && *p != ',') p++;
    char saved = *p;
    *p = 0;
    uint32_t v;
    if (!parse_u32(w, &v)) {
      err("bad token '");
      err(w);
      errln("': expected a decimal token id");
      *p = saved;
      return false;
    }
    *p = saved;
    if (*n >= cap) {
      char b[96];
      TextBuf(b, sizeof b).str("too many tokens (at most ").u64(cap).str(")");
      errln(b);
      return false;
    }
    ids[(*n)++] = v;
  }
  return true;
}

// Reads bundle files from a directory into platform memory, on demand.
class DirBundle : public llm::BundleSource {
 public:
  // map: use each file in place through mmap (read-only) instead of reading it.
  DirBundle(const char* dir, bool map, bool populate) : dir_(dir), map_(map), populate_(populate) {}
  bool get(const char* name, llm::Bytes* outb) override {
    char path[512];
    TextBuf p(path, sizeof path);
    p.str(dir_).str("/").str(name);
    platform::OpenFile f = platform::open_file(path);
    if (f.fd < 0) return false;
    int64_t n = f.size;
    if (map_ && n > 0) {
      const void* at = platform::map_open_file(f, path, uint64_t(n), populate_);
      platform::close_file(f);   // the mapping keeps the file
      if (!at) {
        io_error_ = true;
        return false;
      }
      outb->data = static_cast<const uint8_t*>(at);
      outb->size = size_t(n);
      return true;
    }
    void* buf = platform::alloc(uint64_t(n));
    if (!buf) {
      platform::close_file(f);
      char b[160];
      TextBuf(b, sizeof b).str("not enough memory: ").str(name).str(" needs ").u64(uint64_t(n)).str(" bytes (ENOMEM)");
      errln(b);
      io_error_ = true;
      return false;
    }
    bool ok = platform::read_open_file(f, path, buf, uint64_t(n));
    platform::close_file(f);
    if (!ok) {
      io_error_ = true;
      return false;
    }
    bytes_read_ += uint64_t(n);
    outb->data = static_cast<const uint8_t*>(buf);
    outb->size = size_t(n);
    return true;
  }
  uint64_t bytes_read() const { return bytes_read_; }
  // A file exists but could not be held in memory or read (already
  // reported): the runtime's "missing" would be misleading.
  bool io_error() const { return io_error_; }

 private:
  const char* dir_;
  bool map_ = false, populate_ = false;
  uint64_t bytes_read_ = 0;
  bool io_error_ = false;
};

// A prompt file is either PMT.BIN style (u32 count, then u32 ids) or text
// with decimal ids.
bool read_prompt_file(const char* path, uint32_t* ids, uint32_t* n) {
  int64_t size = platform::file_size(path);
  if (size < 0) {
    err(path);
    errln(": cannot open prompt file");
    return false;
  }
  auto* buf = static_cast<uint8_t*>(platform::alloc(uint64_t(size) + 1));
  if (!buf || !platform::read_file(path, buf, uint64_t(size))) {
    err(path);
    errln(": cannot read prompt file");
    return false;
  }
  if (size >= 4 && size % 4 == 0 && llm::load_u32(buf) == uint64_t(size - 4) / 4) {
    uint32_t count = llm::load_u32(buf);
    if (count > kMaxTokens) {
      err(path);
      errln(": too many tokens");
      return false;
    }
    for (uint32_t i = 0; i < count; i++) ids[i] = llm::load_u32(buf + 4 + 4 * i);
    *n = count;
    return true;
  }
  buf[size] = 0;
  return parse_ids(reinterpret_cast<char*>(buf), ids, kMaxTokens, n);
}

const char* model_name(const char* dir, char* buf, size_t cap) {
  size_t len = llm::str_len(dir);
  while (len > 1 && dir[len - 1] == '/') len--;
  size_t start = len;
  while (start > 0 && dir[start - 1] != '/') start--;
  size_t n = 0;
  for (size_t i = start; i < len && n + 1 < cap; i++) buf[n++] = dir[i];
  buf[n] = 0;
  return buf;
}

struct Runner {
  llm::Model model;
  llm::Session session;
  Generation how;   // sampling and stop conditions
  bool stream = false;
  // Text mode (--text, or --stop-eos for its end-of-sequence ids).
  llm::Tokenizer tokenizer;
  bool have_tokenizer = false, text_mode = false;
  uint32_t eos[8];
  uint32_t n_eos = 0;
  float* logits = nullptr;      // [vocab] for the sampler
  uint32_t* order = nullptr;    // [vocab] sampler scratch
  uint32_t context[kMaxTokens + 256];
  const char* name = "";
  uint64_t load_us = 0, init_us = 0, bytes_read = 0;
  const char* load_kind = "read";
  platform::VmCounts vm_start;   // at start: the timing line shows what this run added
  int64_t fork_us = -1;          // --forks: from the parent's fork() to the child's start
  bool timing = false, align_tick = false;
  // The course's 255 prompt tokens; with --context, the service's limit
  // (llm::kMaxContextPrompt), so that long prompts can be checked here too.
  uint32_t max_prompt = llm::kMaxPrompt;
  uint32_t gen[kMaxTokens];
  char line[kMaxTokens * 11 + 16];

  const char* prompt_text = nullptr;   // --text: printed before the answer

  // Speculation (--speculate): the choice, the prediction (--prediction, or
  // the oracle's corrupted first answer), and per request what was drafted
  // and kept. spec_logits: one row of vocab_size logits per verified
  // position, for a sampled request.
  llm::SpecChoice spec;
  uint32_t prediction[kMaxTokens];
  uint32_t n_prediction = 0;
  llm::PredictionCursor cursor;
  float* spec_logits = nullptr;
  uint32_t drafted = 0, accepted = 0;
  bool quiet = false;   // the oracle's first run prints nothing
  uint32_t answer_len = 0;   // tokens the last run produced

  // Constrained decoding (--regex, --json-schema): the compiled DFA, the
  // vocabulary's view for masks, the mask cache and the request's walk.
  llm::Dfa dfa;
  llm::VocabView vocab_view;
  llm::TokenMasks masks;
  llm::Constraint constraint;

  // A sampled request, or a constrained one (greedy too: its argmax is over
  // the allowed ids, so it needs the logits, not the classifier's fused argmax).
  bool sampled() const {
    return !how.sampling.greedy() || how.sampling.repeat_penalty != 1.0f || constraint.active();
  }

  // The next token drawn from the logits of the last position fed (already
  // in logits[]: prefill_logits / step_logits), as the kernel's worker does
  // (same sampler, same recent-token window).
  uint32_t draw(llm::Rng& rng, uint32_t n_context, float* row = nullptr) {
    uint32_t vocab = model.config().vocab_size;
    uint32_t window = how.sampling.repeat_last_n;   // at most llm::kMaxRepeatLastN (checked)
    uint32_t n = n_context < window ? n_context : window;
    return llm::sample_token(row ? row : logits, vocab, how.sampling, rng, context + (n_context - n), n, order);
  }

  // Up to max drafts to follow the context (prompt ++ gen[0..produced)).
  uint32_t propose(uint32_t n_prompt, uint32_t produced, uint32_t max, uint32_t* out) {
    if (max == 0) return 0;
    if (spec.kind == llm::SpecKind::Ngram)
      return llm::ngram_lookup([this](uint32_t i) { return context[i]; }, n_prompt + produced, llm::kDefaultNgram,
                               max, out);
    return cursor.propose(prediction, n_prediction, gen, produced, max, out);
  }

  // One speculative turn: the newest token and d drafts in one verify pass;
  // publish() each token the model chooses while the drafts agree with it,
  // then roll the session back to just after the last position whose input
  // stands. The sampler's generator advances once per published token, as
  // in plain decoding, so every token is the plain one. True: stop.
  template <class Publish>
  ErrorOr<bool, llm::Error> speculate_turn(const uint32_t* drafts, uint32_t d, uint32_t n_context, llm::Rng& rng,
                                           Publish publish) {
    uint32_t toks[llm::kMaxSpecDrafts + 1], next[llm::kMaxSpecDrafts + 1];
    toks[0] = context[n_context - 1];
    for (uint32_t i = 0; i < d; i++) toks[i + 1] = drafts[i];
    uint32_t at = session.position();
    bool recurrent = model.config().n_linear_layers() > 0;
    if (recurrent) TRY(session.keep_checkpoint());
    uint32_t vocab = model.config().vocab_size;
    TRY(session.verify(toks, d + 1, next, sampled() ? spec_logits : nullptr));
    uint32_t kept = 0;
    bool stop = false;
    for (uint32_t j = 0; j <= d; j++) {
      uint32_t tok = sampled() ? draw(rng, n_context + j, spec_logits + size_t(j) * vocab) : next[j];
      kept = j + 1;
      stop = publish(tok);
      if (stop || j == d || toks[j + 1] != tok) break;
      accepted++;
    }
    drafted += d;
    if (kept <= d && !stop) {
      if (!recurrent) {
        TRY(session.rewind(at + kept));
      } else {
        // The linear layers' state went past the rejected drafts: back to
        // the checkpoint, and the kept inputs again.
        TRY(session.rewind(at));
        for (uint32_t j = 0; j < kept; j++) TRY(session.feed(toks[j]));
      }
    }
    return stop;
  }

  // Feeds the prompt (or, `decode`, one token) and chooses the next token:
  // the argmax, fused into the classifier's product, or for a sampled
  // request a draw from the logits that product wrote. One product over
  // the vocabulary per position either way, as in the kernel's worker.
  ErrorOr<uint32_t, llm::Error> feed_and_choose(const uint32_t* tokens, uint32_t n, bool decode, llm::Rng& rng,
                                                uint32_t n_context) {
    if (!sampled()) return decode ? session.step(tokens[0]) : session.prefill(tokens, n);
    auto fed = decode ? session.step_logits(tokens[0], logits) : session.prefill_logits(tokens, n, logits);
    if (fed.is_error()) return fed.error();
    // The mask comes first: the penalty, temperature and the rest see only allowed ids.
    if (constraint.active()) TRY(constraint.mask_logits(logits, model.config().vocab_size));
    return draw(rng, n_context);
  }

  // Why generation ends after `produced` tokens, or nullptr: the runtime's
  // stop rule (lib/llm_stop.h), the one the kernel's AI service follows.
  // The loop in run() ends at n_predict by itself.
  const char* stop_reason(uint32_t produced) const {
    llm::StopRule rule;
    rule.eos = eos;
    rule.n_eos = how.stop_eos ? n_eos : 0;
    rule.stop = how.stop;
    rule.stop_words = how.stop_words;
    rule.max_tokens = UINT32_MAX;
    switch (llm::finish_reason(rule, gen, produced)) {
      case llm::Finish::EndOfSequence: return "eos";
      case llm::Finish::StopSequence: return "stop";
      default: return nullptr;
    }
  }

  void show(uint32_t i, uint32_t token, llm::Decoder& d, const char* text) {
    if (!text_mode) {
      char b[16];
      TextBuf t(b, sizeof b);
      if (i) t.chr(' ');
      t.u64(token);
      out(b);
      return;
    }
    if (i == 0 && text) out(text);
    char b[llm::Decoder::kMaxPushBytes + 1];
    auto n = d.push(token, b, sizeof b - 1);
    if (!n.is_error()) platform::write_out(b, n.value());
  }
  void flush_text(llm::Decoder& d) {
    char b[llm::Decoder::kMaxPushBytes + 1];
    auto n = d.finish(b, sizeof b - 1);
    if (!n.is_error()) platform::write_out(b, n.value());
  }

  // One request: validate, prefill, decode, print. false on error.
  bool run(const uint32_t* prompt, uint32_t n_prompt, uint32_t n_predict) {
    auto ok = llm::check_request(model.config(), prompt, n_prompt, n_predict, max_prompt);
    if (ok.is_error()) {
      err(ok.error().message);
      if (ok.error().code == llm::ErrorCode::TokenOutOfRange) {
        // The runtime's message names the position; say the value too.
        for (uint32_t i = 0; i < n_prompt; i++) {
          if (prompt[i] >= model.config().vocab_size) {
            char b[96];
            TextBuf(b, sizeof b).str(" (id ").u64(prompt[i]).str("; model ").str(name).str(" has ")
                .u64(model.config().vocab_size).str(" tokens)");
            err(b);
            break;
          }
        }
      }
      errln("");
      return false;
    }
    if (spec.kind == llm::SpecKind::Oracle && !quiet) {
      // The oracle's first run: the plain answer, printed nowhere; then the
      // request again, predicting that answer with errors (acceptance A).
      quiet = true;
      llm::SpecChoice saved = spec;
      spec = llm::SpecChoice{};
      bool ok = run(prompt, n_prompt, n_predict);
      spec = saved;
      quiet = false;
      if (!ok) return false;
      n_prediction = answer_len;
      // Which ids are replaced follows --seed, as in ai's oracle.
      llm::corrupt_prediction(gen, n_prediction, spec.acceptance_milli, 1 + how.seed, model.config().vocab_size,
                              prediction);
    }
    session.reset();
    if (constraint.active()) constraint.replay(nullptr, 0);
    cursor = llm::PredictionCursor{};
    drafted = accepted = 0;
    llm::Rng rng = llm::rng_from_seed(how.seed);
    llm::Decoder decoder(tokenizer);
    decoder.set_at_start(false);   // the prompt's text is printed as given
    for (uint32_t i = 0; i < n_prompt; i++) context[i] = prompt[i];
    if (align_tick) platform::align_to_tick();
    uint64_t t0 = platform::clock_ns();
    auto first = feed_and_choose(prompt, n_prompt, false, rng, n_prompt);
    if (first.is_error()) {
      errln(first.error().message);
      return false;
    }
    uint32_t produced = 0;
    const char* finish = "length";
    uint64_t t1 = 0;
    bool show_tokens = stream && !quiet;
    // Each generated token, in order: recorded, shown, checked for a stop.
    auto publish = [&](uint32_t token) {
      gen[produced] = token;
      context[n_prompt + produced] = token;
      if (produced == 0) t1 = platform::clock_ns();
      if (show_tokens) show(produced, token, decoder, prompt_text);
      produced++;
      const char* why = stop_reason(produced);
      if (constraint.active()) {
        constraint.advance(token);
        if (!why && constraint.complete()) why = "grammar";   // nothing may follow
      }
      if (why) finish = why;
      return why != nullptr;
    };
    bool stop = publish(first.value());
    llm::DraftControl control;   // --adaptive: chooses the drafts per pass, as the kernel does
    control.start(spec.drafts);
    while (!stop && produced < n_predict) {
      uint32_t drafts[llm::kMaxSpecDrafts];
      uint32_t left = n_predict - produced - 1;   // a draft needs a token after it
      uint32_t k = spec.adaptive ? control.drafts(spec.drafts) : spec.drafts;
      uint32_t d = spec.kind == llm::SpecKind::None ? 0 : propose(n_prompt, produced, k < left ? k : left, drafts);
      if (d > 0) {
        uint32_t accepted_before = accepted;
        auto turn = speculate_turn(drafts, d, n_prompt + produced, rng, publish);
        if (turn.is_error()) {
          errln(turn.error().message);
          return false;
        }
        stop = turn.value();
        control.after_pass(spec.drafts, d, accepted - accepted_before);
        continue;
      }
      control.after_pass(spec.drafts, 0, 0);
      auto next = feed_and_choose(&gen[produced - 1], 1, true, rng, n_prompt + produced);
      if (next.is_error()) {
        errln(next.error().message);
        return false;
      }
      stop = publish(next.value());
    }
    uint64_t t2 = platform::clock_ns();
    n_predict = produced;
    answer_len = produced;
    if (quiet) return true;
    if (stream) {
      if (text_mode) flush_text(decoder);
      out("\n");
    } else {
      TextBuf t(line, sizeof line);
      for (uint32_t i = 0; i < n_predict; i++) {
        if (i) t.chr(' ');
        t.u64(gen[i]);
      }
      t.chr('\n');
      out(line);
    }
    if (timing) {
      char b[640];
      TextBuf tb(b, sizeof b);
      uint64_t ttft = (t1 - t0) / 1000, total = (t2 - t0) / 1000;
      uint64_t tpot = n_predict > 1 ? (t2 - t1) / 1000 / (n_predict - 1) : 0;
      tb.str("timing model=").str(name).str(" load_us=").u64(load_us).str(" init_us=").u64(init_us);
      // No queue on the cold path: the request's time to first token is its
      // prefill (docs/timing.md); both names are printed so that each means
      // the same on both paths.
      tb.str(" prompt=").u64(n_prompt).str(" ttft_us=").u64(ttft).str(" prefill_us=").u64(ttft);
      tb.str(" gen=").u64(n_predict);
      tb.str(" tpot_us=").u64(tpot).str(" total_us=").u64(total).str(" bytes_read=").u64(bytes_read);
      tb.str(" matvec=").str(session.ops().name);
      // Work counted by the runtime (lib/llm_batch.h WorkCounts), per phase.
      const llm::WorkCounts& p = session.work(llm::Phase::Prefill);
      const llm::WorkCounts& d = session.work(llm::Phase::Decode);
      tb.str(" prefill_macs=").u64(p.macs).str(" prefill_weight_bytes=").u64(p.weight_bytes);
      tb.str(" prefill_kv_read=").u64(p.kv_read_bytes).str(" prefill_kv_write=").u64(p.kv_write_bytes);
      tb.str(" decode_macs=").u64(d.macs).str(" decode_weight_bytes=").u64(d.weight_bytes);
      tb.str(" decode_kv_read=").u64(d.kv_read_bytes).str(" decode_kv_write=").u64(d.kv_write_bytes);
      tb.str(" finish=").str(finish);
      if (constraint.active()) tb.str(" grammar=").str(constraint.matched() ? "match" : "prefix");
      if (spec.kind != llm::SpecKind::None) tb.str(" drafted=").u64(drafted).str(" accepted=").u64(accepted);
      platform::VmCounts vm = platform::vm_counts();
      tb.str(" load=").str(load_kind).str(" major_faults=").u64(vm.major_faults - vm_start.major_faults);
      tb.str(" minor_faults=").u64(vm.minor_faults - vm_start.minor_faults);
      tb.str(" disk_bytes=").u64(vm.disk_bytes - vm_start.disk_bytes);
      platform::Resident res = platform::resident();
      tb.str(" resident_kib=").u64(res.pages * 4).str(" shared_kib=").u64(res.shared_pages * 4);
      if (fork_us >= 0) tb.str(" fork_us=").u64(uint64_t(fork_us));
      tb.chr('\n');
      err(b);
    }
    return true;
  }
};

// --temp/--top-p/--min-p/--repeat-penalty X (thousandths, as for `ai`),
// --top-k/--repeat-last-n/--seed N, --stop "ID ...": 1 taken, 0 not one of
// these, -1 bad value (reported, naming the option).
int generation_option(int argc, char** argv, int* i, Generation* g) {
  const char* a = argv[*i];
  struct Milli {
    const char* name;
    uint32_t* field;
    uint32_t max;
  } millis[] = {{"--temp", &g->temp, llm::kMaxTemperatureMilli},
                {"--top-p", &g->top_p, llm::kMaxTopPMilli},
                {"--min-p", &g->min_p, llm::kMaxMinPMilli},
                {"--repeat-penalty", &g->penalty, llm::kMaxRepeatPenaltyMilli}};
  bool known = llm::str_eq(a, "--top-k") || llm::str_eq(a, "--repeat-last-n") || llm::str_eq(a, "--seed") ||
               llm::str_eq(a, "--stop") || llm::str_eq(a, "--stop-text");
  for (const Milli& m : millis) known |= llm::str_eq(a, m.name);
  if (!known) return 0;
  if (*i + 1 >= argc) {
    err(a);
    errln(" needs a value");
    return -1;
  }
  const char* v = argv[++*i];
  auto bad = [&](const char* what) {
    err(a);
    err(": '");
    err(v);
    err("' is not ");
    errln(what);
    return -1;
  };
  for (const Milli& m : millis)
    if (llm::str_eq(a, m.name)) return llm::parse_thousandths(v, m.max, m.field) ? 1 : bad("a decimal in range (at most 3 decimals)");
  if (g->n_stops + g->n_stop_text == llm::kMaxStopSequences && (llm::str_eq(a, "--stop") || llm::str_eq(a, "--stop-text")))
    return bad("accepted: at most 4 --stop and --stop-text options");
  if (llm::str_eq(a, "--stop-text")) {
    if (!*v) return bad("a text (it is empty)");
    g->stop_text[g->n_stop_text++] = v;
    return 1;
  }
  if (llm::str_eq(a, "--stop")) {
    static char copy[256];
    uint32_t n = 0;
    size_t len = llm::str_len(v);
    if (len >= sizeof copy) return bad("1 to 8 token ids");
    for (size_t k = 0; k <= len; k++) copy[k] = v[k];
    uint32_t* seq = g->stop + g->stop_words;   // room for kMaxStopTokens ids after the length word
    if (!parse_ids(copy, seq + 1, llm::kMaxStopTokens, &n) || n == 0) return bad("1 to 8 token ids");
    seq[0] = n;
    g->stop_words += 1 + n;
    g->n_stops++;
    return 1;
  }
  uint32_t x;
  if (!parse_u32(v, &x)) return bad("a whole number");
  if (llm::str_eq(a, "--seed")) g->seed = x;
  else if (llm::str_eq(a, "--top-k")) g->top_k = x;
  else if (x > llm::kMaxRepeatLastN) return bad("a window of 0 to 256 tokens");
  else g->last_n = x;
  return 1;
}

// --regex / --json-schema: compiles the grammar for the model's vocabulary
// and gives the runner its constraint. Errors name the option and the place.
bool compile_constraint(Runner& r, const Options& opt, uint32_t vocab) {
  const char* text = opt.grammar_arg;
  size_t len = llm::str_len(text);
  const char* what = opt.grammar == llm::GrammarKind::Regex ? "--regex: " : "--json-schema: ";
  if (opt.grammar == llm::GrammarKind::JsonSchema) {
    int64_t size = platform::file_size(opt.grammar_arg);
    if (size < 0 || size > int64_t(llm::kMaxGrammarBytes)) {
      err(what);
      err(opt.grammar_arg);
      errln(size < 0 ? ": cannot open" : ": larger than 16384 bytes");
      return false;
    }
    auto* buf = static_cast<char*>(platform::alloc(uint64_t(size) + 1));
    if (!buf || !platform::read_file(opt.grammar_arg, buf, uint64_t(size))) {
      err(what);
      err(opt.grammar_arg);
      errln(": cannot read");
      return false;
    }
    text = buf;
    len = size_t(size);
  }
  void* scratch = platform::alloc(llm::kGrammarScratchBytes);
  void* tables = platform::alloc(llm::kMaxDfaBytes);
  if (!scratch || !tables) {
    errln("not enough memory for the grammar compiler");
    return false;
  }
  llm::Arena sa(scratch, llm::kGrammarScratchBytes), out(tables, llm::kMaxDfaBytes);
  auto dfa = llm::compile_grammar(opt.grammar, text, len, sa, out);
  if (dfa.is_error()) {
    err(what);
    errln(dfa.error().message);
    return false;
  }
  r.dfa = dfa.value();
  r.vocab_view = llm::vocab_from_tokenizer(r.tokenizer, vocab);
  // Up to 4 MiB of cached masks (every state when they fit).
  uint32_t per_mask = llm::mask_words(vocab) * 4;
  uint32_t slots = uint32_t((size_t(4) << 20) / per_mask);
  if (slots == 0) slots = 1;
  if (slots > r.dfa.n_states) slots = r.dfa.n_states;
  size_t need = llm::TokenMasks::bytes_needed(r.dfa, r.vocab_view, slots);
  void* mem = platform::alloc(need);
  if (!mem || !r.masks.init(r.dfa, r.vocab_view, mem, need, slots)) {
    errln("not enough memory for the grammar's token masks");
    return false;
  }
  r.constraint = llm::Constraint(r.dfa, r.vocab_view, r.masks);
  r.how.stop_eos = true;   // EOS is allowed exactly where the output is a match
  return true;
}

// The context as the kernel's ai.context sets it (llm::context_for): the
// same positions, the same RoPE rows, so the two compare token for token.
bool set_context(llm::Model& model, uint32_t requested) {
  const llm::Config& c = model.config();
  if (requested > c.seq_len || requested > llm::kMaxRuntimeSeqLen) {
    char b[128];
    TextBuf(b, sizeof b).str("--context ").u64(requested).str(" exceeds the model's ").str(
        c.seq_len < llm::kMaxRuntimeSeqLen ? "seq_len " : "limit ").u64(
        c.seq_len < llm::kMaxRuntimeSeqLen ? c.seq_len : llm::kMaxRuntimeSeqLen);
    errln(b);
    return false;
  }
  uint32_t context = llm::context_for(c, requested);
  uint64_t floats = model.rope_table_floats(context);
  float* table = floats ? static_cast<float*>(platform::alloc(floats * 4)) : nullptr;
  if (floats && !table) {
    errln("not enough memory for the RoPE table of --context");
    return false;
  }
  auto set = model.set_context(context, table);
  if (set.is_error()) {
    errln(set.error().message);
    return requested == 0;   // the default keeps the bundle's length; an explicit --context fails
  }
  return true;
}

constexpr const char* kUsage =
    "llmrun [--asset-dir D] [--predict N] [--prompt-file F | --stdin | --text \"...\"] [--int8] [--group G]\n"
    "              [--mmap] [--populate] [--forks N] [--context N]\n"
    "              [--timing] [--align-tick] [--stream] [--temp X] [--top-k N] [--top-p X] [--min-p X]\n"
    "              [--repeat-penalty X] [--repeat-last-n N] [--seed N] [--stop \"ID ...\"] [--stop-text \"TEXT\"]\n"
    "              [--stop-eos] [--speculate ngram:K|predicted:K|oracle:K:A|none] [--adaptive] [--prediction FILE]\n"
    "              [--regex R | --json-schema FILE] tok...\n"
    "  --text implies --stream and --stop-eos; --stop-text is encoded with the bundle's TOK.BIN\n"
    "  no tokens: read lines '<predict> <tok...>' until 'exit' or 'quit'";

// The shared parser (user/lib/option_parser.h) with llmrun's own sampling
// options: they fill the runtime's Generation, not the kernel's request.
class RunnerCommandLine : public OptionParser {
 public:
  using OptionParser::OptionParser;
  bool generation(Generation* g) {
    int taken = generation_option(argc_, argv_, &at_, g);
    if (taken < 0) option_io::exit(2);   // generation_option said why
    return taken > 0;
  }
};

// Reads the command line into opt and prompt[0..*n_prompt), or exits with
// status 2 naming what is wrong.
void parse_options(int argc, char** argv, Options& opt, uint32_t* prompt, uint32_t* n_prompt) {
  RunnerCommandLine args("llmrun", kUsage, argc, argv);
  const uint32_t kAny = 0xffffffffu;
  const char* speculate = nullptr;
  while (args.next()) {
    if (args.help() || args.text("--asset-dir", &opt.asset_dir) || args.number("--predict", 0, kAny, &opt.predict) ||
        args.text("--prompt-file", &opt.prompt_file) || args.flag("--stdin", &opt.use_stdin) ||
        args.flag("--stream", &opt.stream) || args.text("--text", &opt.text) ||
        args.flag("--stop-eos", &opt.gen.stop_eos) || args.generation(&opt.gen) || args.flag("--timing", &opt.timing) ||
        args.flag("--align-tick", &opt.align_tick) || args.flag("--mmap", &opt.map) ||
        args.number("--forks", 1, 64, &opt.forks) || args.text("--speculate", &speculate) ||
        args.flag("--adaptive", &opt.spec.adaptive) || args.text("--prediction", &opt.prediction_file) ||
        args.number("--context", 1, kAny, &opt.context) || args.number("--group", 0, kAny, &opt.session.int8_group))
      continue;
    const char* a = args.current();
    if (args.flag("--populate")) {
      opt.map = opt.populate = true;
    } else if (args.flag("--int8")) {
      opt.session.matvec = llm::MatvecKind::Int8;
    } else if (args.flag("--regex") || args.flag("--json-schema")) {
      if (opt.grammar != llm::GrammarKind::None) {
        errln("give one grammar: --regex or --json-schema, once");
        option_io::exit(2);
      }
      opt.grammar = a[2] == 'r' ? llm::GrammarKind::Regex : llm::GrammarKind::JsonSchema;
      args.text(a, &opt.grammar_arg);
    } else if (a[0] == '-') {
      args.unknown();
    } else {
      if (*n_prompt >= kMaxTokens) {
        char most[16];
        llm::TextBuf(most, sizeof most).u64(kMaxTokens);
        args.fail({"more than ", most, " prompt tokens"});
      }
      if (!parse_u32(a, &prompt[*n_prompt])) args.fail({"bad token '", a, "': expected a decimal token id"});
      ++*n_prompt;
    }
  }
  if (speculate && !llm::parse_speculate(speculate, &opt.spec))
    args.fail({"--speculate: '", speculate, "' is not ngram:K, predicted:K, oracle:K:A or none (K 1..8, A 0..1)"});
}

}  // namespace

int llmrun_main(int argc, char** argv) {
  Options opt;
  static uint32_t prompt[kMaxTokens];
  uint32_t n_prompt = 0;
  static char text[kLineCap];
  parse_options(argc, argv, opt, prompt, &n_prompt);
  if ((opt.prompt_file != nullptr) + opt.use_stdin + (n_prompt > 0) + (opt.text != nullptr) > 1) {
    errln("give the prompt one way: tokens, --prompt-file, --stdin or --text");
    return 2;
  }
  if (opt.prompt_file && !read_prompt_file(opt.prompt_file, prompt, &n_prompt)) return 1;
  if ((opt.spec.kind == llm::SpecKind::Predicted) != (opt.prediction_file != nullptr)) {
    errln(opt.prediction_file ? "--prediction needs --speculate predicted:K"
                              : "--speculate predicted:K needs --prediction FILE");
    return 2;
  }
  if (opt.grammar != llm::GrammarKind::None && opt.spec.kind != llm::SpecKind::None) {
    errln("--speculate cannot be combined with --regex or --json-schema (drafts are not checked against the grammar)");
    return 2;
  }
  if (opt.spec.adaptive && opt.spec.kind == llm::SpecKind::None) {
    errln("--adaptive needs --speculate ngram:K, predicted:K or oracle:K:A");
    return 2;
  }
  // A model with linear layers rolls back through a checkpoint.
  if (opt.spec.kind != llm::SpecKind::None) opt.session.checkpoint = true;
  if (opt.use_stdin) {
    if (!platform::read_line(text, sizeof text)) text[0] = 0;
    if (!parse_ids(text, prompt, kMaxTokens, &n_prompt)) return 1;
  }

  static Runner r;
  const char* dir = opt.asset_dir ? opt.asset_dir : platform::default_asset_dir();
  char name[64];
  r.name = model_name(dir, name, sizeof name);
  r.timing = opt.timing;
  r.align_tick = opt.align_tick;
  DirBundle bundle(dir, opt.map, opt.populate);
  r.load_kind = opt.populate ? "mmap+populate" : opt.map ? "mmap" : "read";
  r.vm_start = platform::vm_counts();
  uint64_t t0 = platform::clock_ns();
  auto loaded = r.model.load(bundle);
  if (loaded.is_error()) {
    if (bundle.io_error()) {
      err("cannot load bundle ");
      errln(dir);
      return 1;
    }
    err(loaded.error().message);
    err(" (bundle ");
    err(dir);
    errln(")");
    return 1;
  }
  if (!set_context(r.model, opt.context)) return 1;
  if (opt.context) r.max_prompt = llm::kMaxContextPrompt;
  uint64_t t1 = platform::clock_ns();
  size_t need = llm::Session::bytes_needed(r.model.config(), opt.session);
  void* mem = platform::alloc(need);
  if (!mem) {
    char b[128];
    TextBuf(b, sizeof b).str("not enough memory: session needs ").u64(need).str(" bytes");
    errln(b);
    return 1;
  }
  auto init = r.session.init(r.model, mem, need, opt.session);
  if (init.is_error()) {
    errln(init.error().message);
    return 1;
  }
  uint64_t t2 = platform::clock_ns();
  r.load_us = (t1 - t0) / 1000;
  r.init_us = (t2 - t1) / 1000;
  r.bytes_read = bundle.bytes_read();

  // Sampling and stopping, as the kernel's AI service does them.
  const Generation& g = opt.gen;
  r.how = g;
  r.how.sampling = llm::sampling_from_thousandths(g.temp, g.top_k, g.top_p, g.min_p, g.penalty, g.last_n);
  r.stream = opt.stream || opt.text;
  uint32_t vocab = r.model.config().vocab_size;
  bool constrained = opt.grammar != llm::GrammarKind::None;
  if (r.sampled() || constrained) {
    r.logits = static_cast<float*>(platform::alloc(uint64_t(vocab) * 4));
    r.order = static_cast<uint32_t*>(platform::alloc(uint64_t(vocab) * 4));
    if (opt.spec.kind != llm::SpecKind::None)
      r.spec_logits = static_cast<float*>(platform::alloc(uint64_t(vocab) * 4 * (llm::kMaxSpecDrafts + 1)));
    if (!r.logits || !r.order || (opt.spec.kind != llm::SpecKind::None && !r.spec_logits)) {
      errln("not enough memory for the sampler");
      return 1;
    }
  }
  r.spec = opt.spec;
  if (opt.prediction_file) {
    if (!read_prompt_file(opt.prediction_file, r.prediction, &r.n_prediction)) return 1;
    for (uint32_t i = 0; i < r.n_prediction; i++) {
      if (r.prediction[i] >= vocab) {
        char b[128];
        TextBuf(b, sizeof b).str("--prediction: token ").u64(i).str(": id ").u64(r.prediction[i])
            .str(" out of range (model has ").u64(vocab).str(" tokens)");
        errln(b);
        return 2;
      }
    }
  }
  // The tokenizer (TOK.BIN), for --text, --stop-text and --stop-eos's end ids.
  if (opt.text || g.stop_eos || g.n_stop_text || constrained) {
    char path[512];
    TextBuf(path, sizeof path).str(dir).str("/TOK.BIN");
    int64_t size = platform::file_size(path);
    void* bytes = size > 0 ? platform::alloc(uint64_t(size)) : nullptr;
    if (size > 0 && bytes && platform::read_file(path, bytes, uint64_t(size))) {
      auto tok = llm::load_tokenizer(static_cast<const uint8_t*>(bytes), size_t(size));
      if (tok.is_error()) {
        errln(tok.error().message);
        return 1;
      }
      r.tokenizer = tok.value();
      r.have_tokenizer = true;
      r.n_eos = llm::eos_ids(r.tokenizer, r.eos, 8);
      if (r.n_eos > 8) r.n_eos = 8;
    } else if (opt.text || g.n_stop_text || constrained) {
      if (!opt.text) err(constrained ? "--regex/--json-schema: " : "--stop-text: ");
      err(dir);
      errln(" has no TOK.BIN (no tokenizer: use token ids)");
      return 1;
    }
  }
  for (uint32_t k = 0; k < g.n_stop_text; k++) {
    uint32_t* seq = r.how.stop + r.how.stop_words;   // room for kMaxStopTokens ids after the length word
    auto ids = llm::encode(r.tokenizer, g.stop_text[k], llm::str_len(g.stop_text[k]), seq + 1, llm::kMaxStopTokens);
    if (ids.is_error() || ids.value() == 0) {
      err("--stop-text '");
      err(g.stop_text[k]);
      err("': ");
      errln(ids.is_error() && ids.error().code == llm::ErrorCode::NoMemory ? "more than 8 tokens"
            : ids.is_error() ? ids.error().message : "no tokens");
      return 2;
    }
    seq[0] = ids.value();
    r.how.stop_words += 1 + ids.value();
  }
  if (llm::check_stop_sequences(r.how.stop, r.how.stop_words, vocab) != llm::StopCheck::Ok) {
    char b[96];
    TextBuf(b, sizeof b).str("--stop: a token id is not below the vocabulary size ").u64(vocab);
    errln(b);
    return 2;
  }
  if (opt.text) {
    auto ids = llm::encode_prompt(r.tokenizer, opt.text, llm::str_len(opt.text), prompt, kMaxTokens);
    if (ids.is_error() || ids.value() == 0) {
      err("--text: ");
      errln(ids.is_error() ? ids.error().message : "no tokens");
      return 2;
    }
    n_prompt = ids.value();
    r.text_mode = true;
    r.prompt_text = opt.text;
    r.how.stop_eos = true;
  }

  if (constrained && !compile_constraint(r, opt, vocab)) return 2;

  if (opt.forks && (opt.prompt_file || opt.use_stdin || opt.text || n_prompt > 0)) {
    // The pre-fork server's pattern: the model is loaded (or mapped) once,
    // here; each request runs in a child forked from this process, which
    // shares its pages copy-on-write (kernel/vm.cpp uvm_copy), so a child
    // starts in page-table time and its tokens are the parent's own.
    for (uint32_t k = 0; k < opt.forks; k++) {
      uint64_t before = platform::clock_ns();
      int pid = platform::fork_process();
      if (pid < 0) {
        errln("--forks: fork failed");
        return 1;
      }
      if (pid == 0) {
        r.fork_us = int64_t((platform::clock_ns() - before) / 1000);
        r.vm_start = platform::vm_counts();
        platform::exit_process(r.run(prompt, n_prompt, opt.predict) ? 0 : 1);
      }
      if (platform::wait_process() != 0) {
        errln("--forks: a child failed");
        return 1;
      }
    }
    return 0;
  }
  if (opt.prompt_file || opt.use_stdin || opt.text || n_prompt > 0) return r.run(prompt, n_prompt, opt.predict) ? 0 : 1;

  // Interactive: "<predict> <tok...>" per line.
  bool failed = false;
  while (platform::read_line(text, sizeof text)) {
    char* p = text;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p || *p == '\r') continue;
    if (llm::str_eq(p, "exit") || llm::str_eq(p, "quit") || llm::str_eq(p, "exit\r") || llm::str_eq(p, "quit\r")) break;
    uint32_t n = 0;
    if (!parse_ids(p, prompt, kMaxTokens, &n)) {
      failed = true;
      continue;
    }
    if (n < 1) continue;
    if (!r.run(prompt + 1, n - 1, prompt[0])) failed = true;
  }
  return failed ? 1 : 0;
}
