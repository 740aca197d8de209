// aipreempt [--model M] [--requests N] [--prompt P] [--predict K]:
// requests that outgrow a small KV pool (boot with e.g. ai.kv_blocks=8), and
// what preemption must keep true.
//
// The N requests are submitted one after another, each once the one before
// it has its first token, so they are admitted in submission order (oldest
// first). Together they need more KV blocks than the pool has, so running
// requests are preempted: the rule is that the victim is the youngest running
// request of the model, on whichever worker runs it, so the oldest request is
// never preempted. Checks, each printed as PASS or FAIL:
//   - every request finishes with the tokens it gets alone (run afterwards);
//   - submit <= start <= first <= finish, and the time spent requeued after
//     a preemption fits in start..finish (queue wait + service = end to end);
//   - the oldest request was never preempted, and some younger one was;
//   - afterwards nothing is in flight and no KV block is in use.
// Each request's line ends with the prompt tokens its last admission took
// from the prefix cache ("cached N") and its tokens (a test compares them
// with another runner: make_prompt is (i * 37 + t * 13 + 1) % vocab).
// One summary line: "aipreempt: N requests, P preemptions, oldest preempted 0".
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "aitests.h"

namespace {

constexpr uint32_t kMax = 8;        // one process's default quota (ai.max_per_process)
constexpr uint32_t kMaxPredict = 128;

struct Options {
  char model[KAI_AI_MODEL_NAME_MAX] = "";
  uint32_t requests = 2, prompt = 40, predict = 50;
};

int failures = 0;

void check(bool ok, const char* what) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  failures += !ok;
}

void make_prompt(uint32_t i, uint32_t len, uint32_t vocab, uint32_t* p) {
  for (uint32_t t = 0; t < len; t++) p[t] = (i * 37 + t * 13 + 1) % vocab;
}

}  // namespace

int aipreempt_main(int argc, char** argv) {
  Options o;
  CommandLine args("aipreempt", "aipreempt [--model M] [--requests N] [--prompt P] [--predict K]", argc, argv);
  while (args.next()) {
    if (args.model(o.model) || args.number("--requests", 2, kMax, &o.requests) ||
        args.number("--prompt", 1, KAI_AI_MAX_PROMPT, &o.prompt) || args.number("--predict", 1, kMaxPredict, &o.predict))
      continue;
    args.unknown();
  }
  char name[KAI_AI_MODEL_NAME_MAX];
  kai_ai_model_info mi{};
  if (ai_open_model("aipreempt", o.model, 300, name, &mi) < 0) return 1;
  if (o.prompt + o.predict > mi.runtime_seq_len) {
    fprintf(2, "aipreempt: prompt %u + predict %u does not fit model %s (runtime_seq_len %u)\n", o.prompt,
            o.predict, name, mi.runtime_seq_len);
    return 2;
  }
  static uint32_t prompt[kMax][KAI_AI_MAX_PROMPT];
  static uint32_t out[kMax][kMaxPredict], solo[kMaxPredict];
  kai_ai_result res[kMax] = {};
  int64_t ids[kMax];
  for (uint32_t i = 0; i < o.requests; i++) {
    make_prompt(i, o.prompt, mi.vocab_size, prompt[i]);
    kai_ai_submit r = ai_request(name, prompt[i], o.prompt, o.predict);
    ids[i] = ai_submit(&r);
    if (ids[i] < 0) {
      fprintf(2, "aipreempt: submit %u: %s\n", i, strerror(int(ids[i])));
      return 1;
    }
    // Admitted and generating before the next one arrives: admission order
    // is submission order.
    kai_ai_status st{};
    while (ai_query(ids[i], &st) == 0 && st.n_generated == 0 && st.state <= KAI_AI_RUNNING) sleep(1);
  }
  long got[kMax];
  for (uint32_t i = 0; i < o.requests; i++) got[i] = ai_wait(ids[i], out[i], kMaxPredict, &res[i]);

  bool all_done = true, same = true, ordered = true, sums = true;
  uint32_t preemptions = 0;
  for (uint32_t i = 0; i < o.requests; i++) {
    const kai_ai_result& r = res[i];
    all_done &= got[i] == long(o.predict) && r.state == KAI_AI_DONE;
    long n = ai_call(name, prompt[i], o.prompt, o.predict, solo, kMaxPredict, nullptr);
    same &= n == got[i];
    for (long t = 0; same && t < n; t++) same = solo[t] == out[i][t];
    ordered &= r.t_submit_ns <= r.t_start_ns && r.t_start_ns <= r.t_first_token_ns &&
               r.t_first_token_ns <= r.t_finish_ns;
    uint64_t requeued = uint64_t(r.requeued_us) * 1000;
    sums &= requeued <= r.t_finish_ns - r.t_start_ns;
    ai_latency_ns l = ai_latency_ns_of(&r);
    sums &= l.queue + (r.t_finish_ns - r.t_start_ns - requeued) == l.total;
    preemptions += r.preemptions;
    printf("request %u: worker %u preemptions %u requeued_us %u start-submit_us %lu first-start_us %lu "
           "finish-first_us %lu cached %u tokens:", i, r.worker, r.preemptions, r.requeued_us,
           (unsigned long)((r.t_start_ns - r.t_submit_ns) / 1000),
           (unsigned long)((r.t_first_token_ns - r.t_start_ns) / 1000),
           (unsigned long)((r.t_finish_ns - r.t_first_token_ns) / 1000), r.cached_tokens);
    for (long t = 0; t < got[i]; t++) printf(" %u", out[i][t]);
    printf("\n");
  }
  check(all_done, "every request finished with all its tokens");
  check(same, "every request's tokens equal the same request run alone");
  check(ordered, "submit <= start <= first <= finish for every request");
  check(sums, "queue wait + service = end to end, the requeued time inside start..finish");
  check(res[0].preemptions == 0, "the oldest request was never preempted");
  check(preemptions > 0, "the pool was too small for all: some younger request was preempted");
  kai_ai_info in{};
  ai_info(&in);
  check(in.in_flight == 0 && in.queued == 0 && in.running == 0, "nothing in flight afterwards");
  check(in.kv_blocks_used == 0, "no KV block in use afterwards");
  printf("aipreempt: %u requests, %u preemptions, oldest preempted %u, %s\n", o.requests, preemptions,
         res[0].preemptions, failures ? "FAIL" : "ok");
  return failures ? 1 : 0;
}
