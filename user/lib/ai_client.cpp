// User-side helpers of the AI service: ai_call, waiting for a model, and
// turning kernel timestamps into the latency figures students report.
#include "kai_ai.h"
#include "kai_string.h"

extern "C" long ai_call(const char* model, const uint32_t* prompt, uint32_t prompt_len,
                        uint32_t n_predict, uint32_t* out, uint32_t capacity,
                        struct kai_ai_result* res) {
  kai_ai_submit req{};
  req.model = model;
  req.prompt = prompt;
  req.prompt_len = prompt_len;
  req.n_predict = n_predict;
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

extern "C" struct ai_latency ai_latency_of(const struct kai_ai_result* r) {
  ai_latency l{};
  auto us = [](uint64_t a, uint64_t b) { return b > a ? (b - a) / 1000 : 0; };
  l.queue_us = us(r->t_submit_ns, r->t_start_ns);
  l.prefill_us = us(r->t_start_ns, r->t_first_token_ns);
  l.ttft_us = us(r->t_submit_ns, r->t_first_token_ns);
  l.total_us = us(r->t_submit_ns, r->t_finish_ns);
  l.tpot_us = r->n_generated > 1 ? us(r->t_first_token_ns, r->t_finish_ns) / (r->n_generated - 1) : 0;
  return l;
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
