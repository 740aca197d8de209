// aibatch MODEL [--clients N] [--speculate SPEC]: batching never changes a token.
//
// First every request runs alone, one after another (the reference); then
// N clients submit the same requests at the same moment, so the kernel's
// workers run them together in batches: different prompt lengths (prefill
// chunks of different sizes), different lengths of output (requests leave
// and others keep going), int8 and float activations mixed, greedy and
// sampled (each sampled request has its own seed). Each client
// compares its tokens with the solo run's, bit for bit. Also checks that
// batching really happened (some request's mean batch size above 1) when
// the service allows batches (ai.max_batch > 1).
// A request passes only with exactly the tokens it asked for, alone and in
// the batch (a service that returned nothing would otherwise be "same").
// Prints the model's vocabulary and length (so a test can rebuild the
// prompts), one line per client with its tokens (so a test can compare them
// with another runner), then "aibatch: N passed, M failed" where N + M is
// the number of clients plus one for the batching check.
// --speculate ngram:K | predicted:K | oracle:K:A (as for `ai`): the batched
// run speculates, the solo reference does not, so speculation never
// changing a token is checked too. predicted drafts from the request's own
// prompt (a client that expects its input back); the oracle from the solo
// answer, each token replaced with probability 1 - A. Each client's line
// says how many tokens were drafted for it and accepted.
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "aitests.h"
#include "llm_speculate.h"

static constexpr uint32_t kMaxClients = 16;
static constexpr uint32_t kMaxPredict = 24;

struct Job {
  uint32_t prompt[64];
  uint32_t prompt_len, n_predict, flags;
  kai_ai_sampling sampling;   // every third client samples, with its own seed
  uint32_t solo[kMaxPredict];
  long solo_n;
  uint32_t prediction[kMaxPredict];   // --speculate oracle: the solo answer, corrupted
};

static Job jobs[kMaxClients];
static char model[KAI_AI_MODEL_NAME_MAX];
static llm::SpecChoice spec;            // --speculate: for the batched run only
static bool speculate = false;

// Client i's request: prompt lengths 1..~60 and outputs 3..~20 tokens,
// spread so that prompts are still prefilling while others decode.
static void make_job(Job& j, uint32_t i, const kai_ai_model_info& mi) {
  j.prompt_len = 1 + (i * 13) % 47;
  j.n_predict = 3 + (i * 7) % 18;
  while (j.prompt_len + j.n_predict > mi.runtime_seq_len && j.prompt_len > 1) j.prompt_len--;
  while (j.prompt_len + j.n_predict > mi.runtime_seq_len && j.n_predict > 1) j.n_predict--;
  for (uint32_t t = 0; t < j.prompt_len; t++) j.prompt[t] = (i * 31 + t * 17 + 1) % mi.vocab_size;
  j.flags = (i % 2) ? KAI_AI_INT8 : 0;   // both activation kinds, mixed in one batch
  j.sampling = kai_ai_sampling{};
  if (i % 3 == 2) {   // sampled: the generator is the request's own, so batching cannot change it
    j.sampling.temperature_milli = 900;
    j.sampling.top_k = 40;
    j.sampling.seed = 1000 + i;
  }
}

static long run(const Job& j, uint32_t* out, kai_ai_result* res, bool speculative = false) {
  kai_ai_submit r = ai_request(model, j.prompt, j.prompt_len, j.n_predict, j.flags);
  r.sampling = j.sampling;
  if (speculative && spec.kind == llm::SpecKind::Oracle)
    ai_apply_speculation(&r, spec, j.prediction, uint32_t(j.solo_n));
  else if (speculative)
    ai_apply_speculation(&r, spec, j.prompt, j.prompt_len);
  int64_t id = ai_submit(&r);
  if (id < 0) return id;
  return ai_wait(id, out, kMaxPredict, res);
}

// Exit status of a client: 0 same tokens, batched; 1 different tokens or
// an error; 2 same tokens, but it never shared an iteration. Its line goes
// to the parent through out_fd in one write (at most KAI_PIPE_BUF bytes, so
// it arrives whole): clients printing to the console at once would mix
// their lines.
[[noreturn]] static void client(uint32_t i, int start_fd, int out_fd) {
  char go;
  if (read(start_fd, &go, 1) != 1) exit(1);
  const Job& j = jobs[i];
  uint32_t out[kMaxPredict];
  kai_ai_result res{};
  long n = run(j, out, &res, speculate);
  bool same = n == long(j.n_predict) && n == j.solo_n;
  for (long t = 0; same && t < n; t++) same = out[t] == j.solo[t];
  uint32_t batch_x100 = res.iterations ? uint32_t(uint64_t(res.batch_sum) * 100 / res.iterations) : 0;
  static_assert(KAI_PIPE_BUF >= 512, "a client's line must reach the parent in one piece");
  char line[512];
  int len = snprintf(line, sizeof line, "%sclient %u: prompt %u, %u tokens, got %ld, %s%s, %s solo, %u iterations, "
                     "mean batch %u.%02u, drafted %u, accepted %u, tokens:", same ? "" : "FAIL ", i,
                     j.prompt_len, j.n_predict, n, (j.flags & KAI_AI_INT8) ? "int8" : "float",
                     j.sampling.temperature_milli ? " sampled" : "", same ? "same tokens as" : "DIFFERENT tokens from",
                     res.iterations, batch_x100 / 100, batch_x100 % 100, res.drafted, res.accepted);
  for (long t = 0; t < n && len < int(sizeof line) - 16; t++) len += snprintf(line + len, sizeof line - len, " %u", out[t]);
  line[len++] = '\n';
  write(out_fd, line, len);
  exit(!same ? 1 : (batch_x100 > 100 ? 0 : 2));
}

int aibatch_main(int argc, char** argv) {
  uint32_t clients = 8;
  const char* name = nullptr;
  CommandLine args("aibatch", "aibatch MODEL [--clients N] [--speculate SPEC]", argc, argv);
  while (args.next()) {
    const char* v = nullptr;
    if (args.number("--clients", 1, kMaxClients, &clients) || args.positional(&name)) continue;
    if (!args.text("--speculate", &v)) args.unknown();
    if (!llm::parse_speculate(v, &spec)) {
      fprintf(2, "aibatch: --speculate: '%s' is not ngram:K, predicted:K, oracle:K:A or none\n", v);
      return 2;
    }
    speculate = true;
  }
  kai_ai_model_info mi{};
  if (ai_open_model("aibatch", name ? name : "", 300, model, &mi) < 0) return 1;
  printf("aibatch: model %s vocab %u runtime_seq_len %u\n", model, mi.vocab_size, mi.runtime_seq_len);
  for (uint32_t i = 0; i < clients; i++) {
    make_job(jobs[i], i, mi);
    jobs[i].solo_n = run(jobs[i], jobs[i].solo, nullptr);
    if (jobs[i].solo_n != long(jobs[i].n_predict)) {
      if (jobs[i].solo_n < 0) printf("FAIL solo request %u: %s\n", i, strerror(int(jobs[i].solo_n)));
      else printf("FAIL solo request %u: %ld tokens, asked for %u\n", i, jobs[i].solo_n, jobs[i].n_predict);
      printf("aibatch: 0 passed, 1 failed\n");
      return 1;
    }
    llm::corrupt_prediction(jobs[i].solo, uint32_t(jobs[i].solo_n), spec.acceptance_milli, 1000 + i, mi.vocab_size,
                            jobs[i].prediction);
  }
  static kai_ai_info info;
  ai_info(&info);

  // All clients block on one pipe; one byte each releases them together.
  int start[2], lines[2];
  if (pipe(start) < 0 || pipe(lines) < 0) return 1;
  for (uint32_t i = 0; i < clients; i++) {
    int pid = fork();
    if (pid == 0) {
      close(start[1]);
      close(lines[0]);
      client(i, start[0], lines[1]);
    }
    if (pid < 0) {
      fprintf(2, "aibatch: fork: %s\n", strerror(pid));
      return 1;
    }
  }
  close(start[0]);
  close(lines[1]);
  char go[kMaxClients] = {};
  write(start[1], go, clients);
  close(start[1]);
  // Each client's line, whole, in the order they finish; the end of the
  // pipe comes when every client has exited.
  char line[600];
  while (getline(lines[0], line, sizeof line) > 0) printf("%s", line);
  close(lines[0]);
  int passed = 0, failed = 0, batched = 0;
  for (uint32_t i = 0; i < clients; i++) {
    int status = 1;
    wait(&status);
    if (status == 0 || status == 2) passed++;
    else failed++;
    batched += status == 0;
  }
  if (info.max_batch > 1 && clients > 1) {
    bool ok = batched > 0;
    printf("%s some requests shared iterations (%d of %u clients, ai.max_batch=%u)\n",
           ok ? "ok" : "FAIL", batched, clients, info.max_batch);
    (ok ? passed : failed)++;
  }
  printf("aibatch: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
