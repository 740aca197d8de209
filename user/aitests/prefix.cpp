// aiprefix [--model M] [--requests N] [--prefix P] [--tail T] [--predict K]
//          [--concurrent] [--int8] [--seed S]: shared prompt prefixes (the
//          prefix cache).
//
// N requests share a P-token prefix (a "system prompt") and differ in a
// T-token tail (--tail 0: the same prompt N times). --seed S: every request
// samples (temperature 0.9, top_k 40) with generator seed S. The first runs alone, so it computes the prefix and leaves
// its full blocks in the cache; then the others run, one after another or
// (--concurrent) all at once. Prints each request's tokens, TTFT and how
// many prompt tokens it took from the cache (after a first line naming the
// model and its vocabulary size), then one summary line:
//   aiprefix: first_ttft_us=A later_ttft_p50_us=B ratio=R cached_tokens=C
// and a verdict: "aiprefix: N requests, M failed". A request fails when it
// returns an error, gives other than exactly K tokens, or (--concurrent) its
// client never reports; its line then starts with FAIL, and aiprefix exits 1.
// With the cache off (ai.prefix_cache=0) the tokens must be the same: the
// integration tests compare them across boots and with the host runner.
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "kai_stats.h"
#include "aitests.h"

namespace {

constexpr uint32_t kMax = 12;   // --concurrent keeps a pipe per client: 11 + stdio < NOFILE

struct Options {
  char model[KAI_AI_MODEL_NAME_MAX] = "";
  uint32_t requests = 8, prefix = 128, tail = 8, predict = 8, flags = 0, seed = 0;
  bool concurrent = false, sampled = false;
};

void make_prompt(const Options& o, uint32_t i, uint32_t vocab, uint32_t* p) {
  for (uint32_t t = 0; t < o.prefix; t++) p[t] = (t * 7 + 3) % vocab;
  for (uint32_t t = 0; t < o.tail; t++) p[o.prefix + t] = (i * 31 + t * 11 + 5) % vocab;
}

// Runs request i; writes its line to fd; returns its TTFT in ns, 0 when it
// failed (an error, or not exactly o.predict tokens).
uint64_t run_one(const Options& o, uint32_t i, uint32_t vocab, uint32_t* cached, int fd = 1) {
  static uint32_t prompt[KAI_AI_MAX_PROMPT];
  make_prompt(o, i, vocab, prompt);
  kai_ai_submit r = ai_request(o.model, prompt, o.prefix + o.tail, o.predict, o.flags);
  if (o.sampled) {
    r.sampling.temperature_milli = 900;
    r.sampling.top_k = 40;
    r.sampling.seed = o.seed;
  }
  uint32_t out[64];
  kai_ai_result res{};
  int64_t id = ai_submit(&r);
  long n = id < 0 ? id : ai_wait(id, out, 64, &res);
  if (n < 0) {
    fprintf(fd, "FAIL request %u: %s\n", i, strerror(int(n)));
    return 0;
  }
  if (n != long(o.predict)) {
    fprintf(fd, "FAIL request %u: %ld tokens, asked for %u\n", i, n, o.predict);
    return 0;
  }
  ai_latency l = ai_latency_of(&res);
  char line[1024];
  int len = snprintf(line, sizeof line, "request %u: ttft_us=%lu cached=%u tokens:", i, l.ttft_us, res.cached_tokens);
  for (long t = 0; t < n && len < int(sizeof line) - 16; t++) len += snprintf(line + len, sizeof line - len, " %u", out[t]);
  fprintf(fd, "%s\n", line);
  *cached = res.cached_tokens;
  return l.ttft_us * 1000 + 1;   // never 0: 0 means failed
}

}  // namespace

int aiprefix_main(int argc, char** argv) {
  Options o;
  CommandLine args("aiprefix", "aiprefix [--model M] [--requests N] [--prefix P] [--tail T] [--predict K] "
                   "[--concurrent] [--int8] [--seed S]", argc, argv);
  while (args.next()) {
    if (args.number("--seed", 0, 1000000, &o.seed)) o.sampled = true;
    else if (args.model(o.model) || args.number("--requests", 1, kMax, &o.requests) ||
             args.number("--prefix", 1, KAI_AI_MAX_PROMPT, &o.prefix) ||
             args.number("--tail", 0, KAI_AI_MAX_PROMPT, &o.tail) || args.number("--predict", 1, 64, &o.predict) ||
             args.flag("--concurrent", &o.concurrent) || args.flag_bits("--int8", KAI_AI_INT8, &o.flags))
      continue;
    else args.unknown();
  }
  char name[KAI_AI_MODEL_NAME_MAX];
  kai_ai_model_info mi{};
  if (ai_open_model("aiprefix", o.model, 300, name, &mi) < 0) return 1;
  strlcpy(o.model, name, sizeof o.model);
  if (o.prefix + o.tail > KAI_AI_MAX_PROMPT || o.prefix + o.tail + o.predict > mi.runtime_seq_len) {
    fprintf(2, "aiprefix: prefix %u + tail %u + predict %u does not fit model %s (runtime_seq_len %u, prompts <= %d)\n",
            o.prefix, o.tail, o.predict, name, mi.runtime_seq_len, KAI_AI_MAX_PROMPT);
    return 2;
  }
  // The vocabulary size lets a test rebuild the prompts (make_prompt) and
  // run them on another runner.
  printf("aiprefix: model %s vocab %u\n", name, mi.vocab_size);
  uint32_t cached = 0, total_cached = 0;
  uint64_t first = run_one(o, 0, mi.vocab_size, &cached);
  uint32_t n_failed = first ? 0 : 1;
  static uint64_t later[kMax];
  uint32_t n_later = 0;
  if (o.concurrent) {
    // Each client sends its line through its own pipe and the parent prints
    // them in order: writes of several processes to the console can mix.
    int fds[kMax];
    for (uint32_t i = 1; i < o.requests; i++) {
      int p[2];
      if (pipe(p) < 0) return 1;
      if (fork() == 0) {
        close(p[0]);
        uint32_t c = 0;
        exit(run_one(o, i, mi.vocab_size, &c, p[1]) ? 0 : 1);
      }
      close(p[1]);
      fds[i] = p[0];
    }
    for (uint32_t i = 1; i < o.requests; i++) {
      char line[1024];
      long n = getline(fds[i], line, sizeof line);
      if (n > 0) printf("%s", line);
      else printf("FAIL request %u: its client printed nothing\n", i);
      close(fds[i]);
    }
    // A client's exit status says whether its request passed; one that
    // crashed after printing a good line still counts as failed.
    for (uint32_t i = 1; i < o.requests; i++) {
      int status = 1;
      if (wait(&status) < 0 || status != 0) n_failed++;
    }
    printf("aiprefix: first_ttft_us=%lu concurrent=%u\n", (unsigned long)(first / 1000), o.requests - 1);
    printf("aiprefix: %u requests, %u failed\n", o.requests, n_failed);
    return n_failed ? 1 : 0;
  }
  for (uint32_t i = 1; i < o.requests; i++) {
    uint64_t ttft = run_one(o, i, mi.vocab_size, &cached);
    if (ttft) later[n_later++] = ttft;
    else n_failed++;
    total_cached += cached;
    cached = 0;
  }
  sort_u64(later, n_later);
  uint64_t p50 = percentile(later, n_later, 50);
  uint64_t ratio_x100 = first ? p50 * 100 / first : 0;
  printf("aiprefix: first_ttft_us=%lu later_ttft_p50_us=%lu ratio=%lu.%02lu cached_tokens=%u\n",
         (unsigned long)(first / 1000), (unsigned long)(p50 / 1000), (unsigned long)(ratio_x100 / 100),
         (unsigned long)(ratio_x100 % 100), total_cached);
  printf("aiprefix: %u requests, %u failed\n", o.requests, n_failed);
  return n_failed ? 1 : 0;
}
