// User-side helpers of the AI service: ai_call, waiting for a model, and
// turning kernel timestamps into the latency figures students report.
#include "kai_ai.h"
#include "kai_string.h"

extern "C" struct kai_ai_submit ai_request(const char* model, const uint32_t* prompt,
                                          uint32_t prompt_len, uint32_t n_predict, uint32_t flags,
                                          uint32_t priority) {
  kai_ai_submit req{};   // reserved[] stays zero
  req.model = model;
  req.prompt = prompt;
  req.prompt_len = prompt_len;
  req.n_predict = n_predict;
  req.flags = flags;
  req.priority = priority;
  return req;
}

extern "C" long ai_call(const char* model, const uint32_t* prompt, uint32_t prompt_len,
                        uint32_t n_predict, uint32_t* out, uint32_t capacity,
                        struct kai_ai_result* res) {
  kai_ai_submit req = ai_request(model, prompt, prompt_len, n_predict);
  int64_t id = ai_submit(&req);
  if (id < 0) return id;
  return ai_wait(id, out, capacity, res);
}

extern "C" int ai_wait_model_ready(const char* name, int timeout_s, char* name_out,
                                   struct kai_ai_model_info* mi) {
  static kai_ai_info info;   // large-ish: keep it off the small user stack
  for (int waited = 0;; waited++) {
    int r = ai_info(&info);
    if (r < 0) return r;
    int found = -1;
    for (uint32_t i = 0; i < info.n_models; i++)
      if (name[0] == 0 || strcmp(info.models[i].name, name) == 0) { found = static_cast<int>(i); break; }
    if (found >= 0) {
      const kai_ai_model_info& m = info.models[found];
      if (m.state == KAI_AI_MODEL_FAILED) return -KAI_ENODEV;
      if (m.state == KAI_AI_MODEL_READY) {
        if (name_out) strncpy(name_out, m.name, KAI_AI_MODEL_NAME_MAX);
        if (mi) *mi = m;
        return 0;
      }
    } else if (waited > 20) {
      return -KAI_ENOENT;   // the loader had two seconds to list /AI
    }
    if (waited >= timeout_s * 10) return -KAI_EAGAIN;
    sleep(10);
  }
}

extern "C" struct ai_latency_ns ai_latency_ns_of(const struct kai_ai_result* r) {
  ai_latency_ns l{};
  auto since = [](uint64_t from, uint64_t to) { return to > from ? to - from : 0; };
  l.queue = since(r->t_submit_ns, r->t_start_ns);
  l.prefill = since(r->t_start_ns, r->t_first_token_ns);
  l.ttft = since(r->t_submit_ns, r->t_first_token_ns);
  l.total = since(r->t_submit_ns, r->t_finish_ns);
  l.tpot = r->n_generated > 1 ? since(r->t_first_token_ns, r->t_finish_ns) / (r->n_generated - 1) : 0;
  return l;
}

// floor(floor(x / k) / 1000) == floor(x / (1000 k)): converting after the
// division gives the same microseconds as dividing microseconds.
extern "C" struct ai_latency ai_latency_of(const struct kai_ai_result* r) {
  ai_latency_ns ns = ai_latency_ns_of(r);
  return ai_latency{ns.queue / 1000, ns.prefill / 1000, ns.ttft / 1000, ns.tpot / 1000, ns.total / 1000};
}

extern "C" const char* ai_state_name(int32_t state) {
  switch (state) {
    case KAI_AI_QUEUED: return "queued";
    case KAI_AI_RUNNING: return "running";
    case KAI_AI_DONE: return "done";
    case KAI_AI_FAILED: return "failed";
    case KAI_AI_CANCELLED: return "cancelled";
    default: return "?";
  }
}
