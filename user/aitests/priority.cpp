// aipriority [--model M] [--requests N] [--prompt P] [--predict K] [--int8]:
// checks that priority preemption never changes a token.
//
// Needs ai.policy=priority and ai.max_batch=N (so N requests fill a batch).
//   1. solo: each of N + 1 requests runs alone (half of the N greedy, half
//      sampled with their own seeds; the last one, the urgent one, greedy);
//   2. together: the N requests are submitted at priority 10; once all of
//      them run and have tokens, the urgent one comes at priority 0 and
//      takes a running request's place (the victim is recomputed later);
//   3. every request's tokens must equal its solo tokens, and at least one
//      request must have been preempted for priority
//      (kai_ai_result.priority_preemptions).
// Prints one line per request and then
//   aipriority: ok: N+1 requests equal solo, P preempted for priority, urgent ttft_us=T
// or FAIL lines; exit status 0 only when everything holds.
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "aitests.h"

namespace {

constexpr uint32_t kMaxRequests = 7;   // + the urgent one: within ai.max_per_process (8)

struct Options {
  char model[KAI_AI_MODEL_NAME_MAX] = "";
  uint32_t requests = 4, prompt = 16, predict = 24, flags = 0;
};

struct Job {
  uint32_t prompt[KAI_AI_MAX_PROMPT];
  kai_ai_submit req;
  uint32_t solo[KAI_AI_MAX_OUTPUT];
  long solo_n;
  uint32_t out[KAI_AI_MAX_OUTPUT];
  int64_t id;
};

Options opt;
Job jobs[kMaxRequests + 1];

void make_job(uint32_t i, uint32_t vocab) {
  Job& j = jobs[i];
  for (uint32_t t = 0; t < opt.prompt; t++) j.prompt[t] = (i * 131 + t * 17 + 7) % vocab;
  bool urgent = i == opt.requests;
  j.req = ai_request(opt.model, j.prompt, opt.prompt, opt.predict, opt.flags, urgent ? 0 : 10);
  if (!urgent && i % 2 == 1) {   // sampled: temperature 0.8, top-k 40, its own seed
    j.req.sampling.temperature_milli = 800;
    j.req.sampling.top_k = 40;
    j.req.sampling.seed = 1000 + i;
  }
}

bool all_running_with_tokens() {
  for (uint32_t i = 0; i < opt.requests; i++) {
    kai_ai_status st{};
    if (ai_query(jobs[i].id, &st) < 0) return true;   // finished or gone: no point waiting
    if (st.state == KAI_AI_QUEUED || st.n_generated == 0) return false;
  }
  return true;
}

}  // namespace

int aipriority_main(int argc, char** argv) {
  CommandLine args("aipriority", "aipriority [--model M] [--requests N] [--prompt P] [--predict K] [--int8]", argc,
                   argv);
  while (args.next()) {
    if (args.flag_bits("--int8", KAI_AI_INT8, &opt.flags) || args.model(opt.model) ||
        args.number("--requests", 2, kMaxRequests, &opt.requests) ||
        args.number("--prompt", 1, KAI_AI_MAX_PROMPT, &opt.prompt) || args.number("--predict", 2, 512, &opt.predict))
      continue;
    args.unknown();
  }
  char name[KAI_AI_MODEL_NAME_MAX];
  kai_ai_model_info mi{};
  if (ai_open_model("aipriority", opt.model, 300, name, &mi) < 0) return 1;
  strlcpy(opt.model, name, sizeof opt.model);
  static kai_ai_info info;
  if (ai_info(&info) < 0 || info.policy != KAI_AI_POLICY_PRIORITY || info.max_batch != opt.requests) {
    fprintf(2, "aipriority: needs ai.policy=priority and ai.max_batch=%u (policy %u, max_batch %u)\n",
            opt.requests, info.policy, info.max_batch);
    return 2;
  }
  uint32_t n = opt.requests + 1;
  for (uint32_t i = 0; i < n; i++) make_job(i, mi.vocab_size);

  // 1. Solo.
  for (uint32_t i = 0; i < n; i++) {
    Job& j = jobs[i];
    int64_t id = ai_submit(&j.req);
    j.solo_n = id < 0 ? id : ai_wait(id, j.solo, KAI_AI_MAX_OUTPUT, nullptr);
    if (j.solo_n < 0) {
      printf("aipriority: FAIL: solo request %u: %s\n", i, strerror(j.solo_n));
      return 1;
    }
  }

  // 2. Together: fill the batch, then the urgent one.
  for (uint32_t i = 0; i < opt.requests; i++) {
    jobs[i].id = ai_submit(&jobs[i].req);
    if (jobs[i].id < 0) {
      printf("aipriority: FAIL: submit %u: %s\n", i, strerror(jobs[i].id));
      return 1;
    }
  }
  while (!all_running_with_tokens()) sleep(1);
  Job& urgent = jobs[opt.requests];
  urgent.id = ai_submit(&urgent.req);

  // 3. Compare.
  bool ok = true;
  uint32_t preempted = 0;
  uint64_t urgent_ttft = 0;
  for (uint32_t i = 0; i < n; i++) {
    Job& j = jobs[i];
    kai_ai_result res{};
    long got = j.id < 0 ? j.id : ai_wait(j.id, j.out, KAI_AI_MAX_OUTPUT, &res);
    bool same = got == j.solo_n;
    for (long t = 0; same && t < got; t++) same = j.out[t] == j.solo[t];
    preempted += res.priority_preemptions > 0;
    if (i == opt.requests) urgent_ttft = ai_latency_of(&res).ttft_us;
    printf("request %u: priority %u %s preemptions=%u priority_preemptions=%u tokens=%ld %s\n", i,
           j.req.priority, j.req.sampling.temperature_milli ? "sampled" : "greedy", res.preemptions,
           res.priority_preemptions, got, same ? "= solo" : "DIFFER from solo");
    if (!same) {
      printf("aipriority: FAIL: request %u: tokens differ from its solo run\n", i);
      ok = false;
    }
  }
  if (preempted == 0) {
    printf("aipriority: FAIL: no request was preempted for priority\n");
    ok = false;
  }
  if (ok)
    printf("aipriority: ok: %u requests equal solo, %u preempted for priority, urgent ttft_us=%lu\n", n, preempted,
           (unsigned long)urgent_ttft);
  return ok ? 0 : 1;
}
