// coldwarm: cold start against warm start, measured side by side.
//
//   coldwarm [--model NAME] [--runs K] [--predict N] [--int8] [--csv] [--disk LABEL]
//            [TOK... | --prompt-file F | --stdin]
//
// Cold path: fork + exec of `llmrun --timing` on /AI/NAME, which reads and
// checks the whole bundle before it can compute; the page cache is dropped
// first (dropcaches()), so each cold run reads the disk, provided the kernel
// was booted with mem.share_models=0: by default the loaded model's pages are
// the bundle's cached pages, pinned, and a cold run copies them from memory
// (docs/virtual-memory.md, "One copy of a model"). Warm path: ai_submit +
// ai_wait to the kernel service, whose copy of the model is resident. The two
// alternate K times each (so drift on a noisy host hits both alike), must
// produce identical tokens, and are summarised as median [min..max].
//
// Launch TTFT is the time to first token as the launching process sees it:
// from fork (cold) or ai_submit (warm) to the first generated token (not
// llmrun's own ttft_us, which starts after its loading: docs/timing.md).
// llmrun prints its tokens only at the end, so the cold first-token time is
// "tokens received" minus the decode time llmrun reports; the process exit
// after that is not counted. Prefill is the first forward pass(es) alone;
// launch TTFT - prefill is what starting costs (cold: fork, exec, reading the
// model, setup; warm: the system calls and the queue).
//
// --csv adds lines  coldwarm,RUN,PATH,E2E_US,LOAD_US,LAUNCH_TTFT_US,TPOT_US,PREFILL_US
// After the first run it prints llmrun's own timing line, as
//   llmrun-timing: timing model=... load_us=... (and the counted work, when llmrun reports it)
// The prompt: token ids on the command line, or from a file (text or
// PMT.BIN) or standard input (kai_prompt.h); token 1 alone if none is given.
// --disk LABEL only names the disk model in the summary (the disk is QEMU's
// business, tools/disk_models.py: the guest cannot tell).
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "kai_prompt.h"
#include "kai_stats.h"

namespace {

constexpr int kMaxRuns = 32;
constexpr int kMaxGen = 1024;

struct Sample {
  uint64_t e2e_us, load_us, launch_ttft_us, tpot_us;   // launch TTFT: from the client's start
  uint64_t prefill_us, startup_us;                     // startup = launch TTFT - prefill
};

char model[KAI_AI_MODEL_NAME_MAX] = "";
const char* disk_label = nullptr;
char first_timing[512];   // llmrun's timing line of the first cold run
int runs = 3;
uint32_t predict = 16;
bool int8 = false, csv = false;
uint32_t prompt[KAI_AI_MAX_PROMPT];
uint32_t n_prompt;

uint64_t field(const char* line, const char* key) {
  const char* p = strstr(line, key);
  return p ? strtoull(p + strlen(key), nullptr, 10) : 0;
}

// Parses "id id id ..." into out; returns the count.
int parse_ids(const char* line, uint32_t* out) {
  int n = 0;
  while (*line && *line != '\n' && n < kMaxGen) {
    while (*line == ' ') line++;
    if (*line < '0' || *line > '9') break;
    out[n++] = static_cast<uint32_t>(strtoul(line, const_cast<char**>(&line), 10));
  }
  return n;
}

// One cold run: the child's stdout+stderr come back through a pipe.
bool run_cold(Sample* s, uint32_t* ids, int* n_ids) {
  static char buf[16384];
  char dir[64], pred[16];
  snprintf(dir, sizeof(dir), "/AI/%s", model);
  snprintf(pred, sizeof(pred), "%u", predict);
  const char* argv[8 + KAI_AI_MAX_PROMPT];
  int a = 0;
  argv[a++] = "llmrun";
  argv[a++] = "--asset-dir";
  argv[a++] = dir;
  argv[a++] = "--predict";
  argv[a++] = pred;
  argv[a++] = "--timing";
  if (int8) argv[a++] = "--int8";
  static char tok_text[KAI_AI_MAX_PROMPT][12];
  for (uint32_t i = 0; i < n_prompt; i++) {
    snprintf(tok_text[i], sizeof(tok_text[i]), "%u", prompt[i]);
    argv[a++] = tok_text[i];
  }
  argv[a] = nullptr;

  int fds[2];
  if (pipe(fds) < 0) return false;
  dropcaches();   // cold: llmrun and the bundle from the disk (but a loaded model's pinned pages)
  uint64_t t0 = clock_ns();
  int pid = fork();
  if (pid == 0) {
    close(1);
    dup(fds[1]);
    close(2);
    dup(fds[1]);
    close(fds[0]);
    close(fds[1]);
    execvp("llmrun", argv);
    fprintf(2, "coldwarm: exec llmrun failed\n");
    exit(127);
  }
  close(fds[1]);
  long len = 0, got;
  uint64_t t_output = 0;   // when the tokens (llmrun's first output) arrived
  while (len < long(sizeof(buf)) - 1 && (got = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0) {
    if (len == 0) t_output = clock_ns();
    len += got;
  }
  buf[len] = 0;
  close(fds[0]);
  int status = -1;
  while (wait(&status) != pid) {}
  uint64_t t1 = clock_ns();
  const char* timing = strstr(buf, "timing ");
  if (pid < 0 || status != 0 || timing == nullptr) {
    fprintf(2, "coldwarm: llmrun failed (status %d):\n%s\n", status, buf);
    return false;
  }
  // The ids line is the first line that starts with a digit.
  const char* line = buf;
  while (*line && (*line < '0' || *line > '9')) {
    const char* nl = strchr(line, '\n');
    line = nl ? nl + 1 : line + strlen(line);
  }
  *n_ids = parse_ids(line, ids);
  if (first_timing[0] == 0) {
    const char* end = strchr(timing, '\n');
    size_t n = end ? size_t(end - timing) : strlen(timing);
    if (n >= sizeof(first_timing)) n = sizeof(first_timing) - 1;
    memcpy(first_timing, timing, n);
    first_timing[n] = 0;
  }
  s->e2e_us = (t1 - t0) / 1000;
  s->load_us = field(timing, "load_us=");
  s->tpot_us = field(timing, "tpot_us=");
  // First token as the launching process sees it: everything before the
  // output but the decode.
  uint64_t decode_us = field(timing, "total_us=") - field(timing, "ttft_us=");
  uint64_t output_us = (t_output ? t_output - t0 : t1 - t0) / 1000;
  s->launch_ttft_us = output_us > decode_us ? output_us - decode_us : 0;
  s->prefill_us = field(timing, "prefill_us=");
  s->startup_us = s->launch_ttft_us > s->prefill_us ? s->launch_ttft_us - s->prefill_us : 0;
  return true;
}

bool run_warm(Sample* s, uint32_t* ids, int* n_ids) {
  kai_ai_submit req = ai_request(model, prompt, n_prompt, predict, int8 ? KAI_AI_INT8 : 0);
  kai_ai_result res{};
  uint64_t t0 = clock_ns();
  int64_t id = ai_submit(&req);
  long n = id < 0 ? id : ai_wait(id, ids, kMaxGen, &res);
  uint64_t t1 = clock_ns();
  if (n < 0 || res.state != KAI_AI_DONE) {
    fprintf(2, "coldwarm: warm request failed: %s\n", strerror(n < 0 ? n : res.error));
    return false;
  }
  *n_ids = static_cast<int>(n);
  ai_latency l = ai_latency_of(&res);
  s->e2e_us = (t1 - t0) / 1000;
  s->load_us = 0;   // the model is already in kernel memory
  s->launch_ttft_us = (res.t_first_token_ns > t0 ? res.t_first_token_ns - t0 : 0) / 1000;
  s->tpot_us = l.tpot_us;
  s->prefill_us = (res.t_first_token_ns - res.t_start_ns) / 1000;
  s->startup_us = s->launch_ttft_us > s->prefill_us ? s->launch_ttft_us - s->prefill_us : 0;
  return true;
}

struct Summary {
  uint64_t median, min, max;
};

Summary summarize(const Sample* s, int n, uint64_t Sample::*member) {
  uint64_t v[kMaxRuns];
  for (int i = 0; i < n; i++) v[i] = s[i].*member;
  sort_u64(v, n);
  uint64_t median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v[0], v[n - 1]};
}

void row(const char* name, const Sample* cold, const Sample* warm, int n, uint64_t Sample::*m) {
  Summary c = summarize(cold, n, m), w = summarize(warm, n, m);
  printf("%-14s %9lu [%lu..%lu]  %9lu [%lu..%lu]", name, (unsigned long)c.median, (unsigned long)c.min,
         (unsigned long)c.max, (unsigned long)w.median, (unsigned long)w.min, (unsigned long)w.max);
  if (w.median > 0) printf("  %8.2fx\n", double(c.median) / double(w.median));
  else printf("         -\n");
}

}  // namespace

int main(int argc, char** argv) {
  PromptChoice choice;
  CommandLine args("coldwarm", "coldwarm [--model NAME] [--runs K] [--predict N] [--int8] [--csv] [--disk LABEL]\n"
                               "                [TOK... | --prompt-file F | --stdin]", argc, argv);
  while (args.next()) {
    if (args.flag("--int8", &int8) || args.flag("--csv", &csv) || args.model(model) ||
        args.number("--runs", 1, kMaxRuns, &runs) || args.number("--predict", 1, kMaxGen, &predict) ||
        args.text("--disk", &disk_label) || args.prompt(&choice, prompt, KAI_AI_MAX_PROMPT))
      continue;
    args.unknown();
  }
  long got = read_prompt_choice("coldwarm", choice, prompt, KAI_AI_MAX_PROMPT, "token ids, --prompt-file or --stdin");
  if (got < 0) return 2;
  n_prompt = uint32_t(got);
  kai_ai_model_info mi{};
  if (ai_open_model("coldwarm", model, 600, model, &mi) < 0) return 1;
  if (n_prompt == 0) prompt[n_prompt++] = 1;
  // Both paths would refuse these; saying so here names the argument.
  if (!prompt_ids_in_vocab("coldwarm", prompt, n_prompt, model, mi.vocab_size)) return 2;
  if (n_prompt + predict > mi.runtime_seq_len) {
    fprintf(2, "coldwarm: prompt (%u tokens) + --predict %u exceeds model %s's runtime_seq_len %u\n", n_prompt,
            predict, model, mi.runtime_seq_len);
    return 2;
  }

  static Sample cold[kMaxRuns], warm[kMaxRuns];
  static uint32_t cold_ids[kMaxGen], warm_ids[kMaxGen];
  bool identical = true;
  for (int k = 0; k < runs; k++) {
    int nc = 0, nw = 0;
    if (!run_cold(&cold[k], cold_ids, &nc) || !run_warm(&warm[k], warm_ids, &nw)) return 1;
    bool same = nc == nw;
    for (int i = 0; same && i < nc; i++) same = cold_ids[i] == warm_ids[i];
    identical &= same;
    if (csv) {
      for (int w = 0; w < 2; w++) {
        const Sample& x = w ? warm[k] : cold[k];
        printf("coldwarm,%d,%s,%lu,%lu,%lu,%lu,%lu\n", k, w ? "warm" : "cold", (unsigned long)x.e2e_us,
               (unsigned long)x.load_us, (unsigned long)x.launch_ttft_us, (unsigned long)x.tpot_us,
               (unsigned long)x.prefill_us);
      }
    }
    if (k == 0) {
      printf("llmrun-timing: %s\n", first_timing);
      printf("tokens:");
      for (int i = 0; i < nc; i++) printf(" %u", cold_ids[i]);
      printf("\n");
    }
  }
  printf("coldwarm: model %s, prompt %u tokens, %u generated, %d runs each (alternating)%s%s%s\n", model,
         n_prompt, predict, runs, int8 ? ", int8 activations" : "", disk_label ? ", disk model " : "",
         disk_label ? disk_label : "");
  printf("%-14s %-24s %-24s %s\n", "(us)", "cold median [range]", "warm median [range]", "cold/warm");
  row("end-to-end", cold, warm, runs, &Sample::e2e_us);
  row("loading", cold, warm, runs, &Sample::load_us);
  row("launch TTFT", cold, warm, runs, &Sample::launch_ttft_us);
  row("  prefill", cold, warm, runs, &Sample::prefill_us);
  row("  start-up", cold, warm, runs, &Sample::startup_us);
  row("TPOT", cold, warm, runs, &Sample::tpot_us);
  printf("(launch TTFT: from fork (cold) or ai_submit (warm) to the first token; start-up = launch TTFT - prefill;\n"
         " loading is part of the cold start-up; docs/timing.md defines each row)\n");
  printf("tokens identical: %s\n", identical ? "yes" : "NO");
  return identical ? 0 : 1;
}
