// User-side helpers of the AI service: ai_call, waiting for a model (and
// saying why there is none), and
// turning kernel timestamps into the latency figures students report.
#include "kai_ai.h"
#include "kai_string.h"
#include "kai_stdio.h"
#include "kai_stdlib.h"
#include <initializer_list>
#include "llm_sample.h"
#include "llm_speculate.h"

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
    if (name[0] == 0) {
      // Any model: the first ready one, else the first still loading (wait
      // for it), else the first (they all failed).
      for (int want : {KAI_AI_MODEL_READY, KAI_AI_MODEL_LOADING, KAI_AI_MODEL_FAILED}) {
        for (uint32_t i = 0; found < 0 && i < info.n_models; i++)
          if (info.models[i].state == want) found = static_cast<int>(i);
      }
    }
    for (uint32_t i = 0; found < 0 && name[0] && i < info.n_models; i++)
      if (strcmp(info.models[i].name, name) == 0) found = static_cast<int>(i);
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

extern "C" int ai_open_model(const char* prog, const char* name, int timeout_s, char* name_out,
                             struct kai_ai_model_info* mi) {
  int r = ai_wait_model_ready(name, timeout_s, name_out, mi);
  if (r == 0) return 0;
  const char* shown = name[0] ? name : "(any)";
  const char* why = r == -KAI_ENOENT ? (name[0] ? "no such model under /AI" : "no model under /AI")
                    : r == -KAI_ENODEV ? "failed to load (the kernel's boot messages say why)"
                    : r == -KAI_EAGAIN ? "still loading when the wait ran out"
                    : strerror(r);
  fprintf(2, "%s: model %s: %s\n", prog, shown, why);
  return r;
}

extern "C" struct ai_latency_ns ai_latency_ns_of(const struct kai_ai_result* r) {
  ai_latency_ns l{};
  auto since = [](uint64_t from, uint64_t to) { return to > from ? to - from : 0; };
  // A preempted request waited in the queue again after its start.
  l.queue = since(r->t_submit_ns, r->t_start_ns) + uint64_t(r->requeued_us) * 1000;
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

extern "C" int parse_milli(const char* s, uint32_t max_milli, uint32_t* out) {
  // The runtime's parser, so that a command line means the same everywhere.
  uint32_t v;
  if (!llm::parse_thousandths(s, 0xffffffffu, &v)) return -KAI_EINVAL;
  if (v > max_milli) return -KAI_ERANGE;
  *out = v;
  return 0;
}

namespace {

uint32_t stop_sequences(const struct ai_generation* g) {
  uint32_t seqs = 0;
  for (uint32_t at = 0; at < g->stop_words; at += 1 + g->stop[at]) seqs++;
  return seqs;
}

// "ID ID ..." appended to g->stop as one {len, ids...} sequence (room is
// kept for the --stop-text sequences still to be encoded).
bool add_stop(struct ai_generation* g, const char* text) {
  uint32_t ids[KAI_AI_MAX_STOP_TOKENS];
  uint32_t n = 0;
  const char* p = text;
  while (*p) {
    while (*p == ' ') p++;
    if (!*p) break;
    char word[16];
    uint32_t len = 0;
    while (*p && *p != ' ' && len < sizeof(word) - 1) word[len++] = *p++;
    word[len] = 0;
    if ((*p && *p != ' ') || n == KAI_AI_MAX_STOP_TOKENS) return false;
    if (parse_u32(word, 0xffffffffu, &ids[n]) < 0) return false;
    n++;
  }
  return stop_sequences(g) + g->n_stop_text < KAI_AI_MAX_STOP_SEQS && ai_add_stop_ids(g, ids, n);
}

}  // namespace

extern "C" bool ai_add_stop_ids(struct ai_generation* g, const uint32_t* ids, uint32_t n) {
  if (n == 0 || n > KAI_AI_MAX_STOP_TOKENS || stop_sequences(g) == KAI_AI_MAX_STOP_SEQS) return false;
  g->stop[g->stop_words++] = n;
  for (uint32_t k = 0; k < n; k++) g->stop[g->stop_words++] = ids[k];
  return true;
}

extern "C" int ai_generation_option(const char* prog, int argc, char** argv, int* i,
                                    struct ai_generation* g) {
  const char* opt = argv[*i];
  struct Milli {
    const char* name;
    uint32_t* field;
    uint32_t max;
    const char* what;
  } millis[] = {
      {"--temp", &g->sampling.temperature_milli, KAI_AI_MAX_TEMPERATURE_MILLI, "a temperature from 0 to 10"},
      {"--top-p", &g->sampling.top_p_milli, KAI_AI_MAX_TOP_P_MILLI, "a fraction from 0 to 1"},
      {"--min-p", &g->sampling.min_p_milli, KAI_AI_MAX_MIN_P_MILLI, "a fraction from 0 to 1"},
      {"--repeat-penalty", &g->sampling.repeat_penalty_milli, KAI_AI_MAX_REPEAT_PENALTY_MILLI,
       "a penalty from 0 to 10 (1 = off)"},
  };
  if (strcmp(opt, "--stop-eos") == 0) {
    g->flags |= KAI_AI_STOP_AT_EOS;
    return 1;
  }
  bool known = strcmp(opt, "--top-k") == 0 || strcmp(opt, "--repeat-last-n") == 0 ||
               strcmp(opt, "--seed") == 0 || strcmp(opt, "--stop") == 0 || strcmp(opt, "--stop-text") == 0;
  for (const Milli& m : millis) known |= strcmp(opt, m.name) == 0;
  if (!known) return 0;
  if (*i + 1 >= argc) {
    fprintf(2, "%s: %s needs a value\n", prog, opt);
    return -1;
  }
  const char* v = argv[++*i];
  for (const Milli& m : millis) {
    if (strcmp(opt, m.name) != 0) continue;
    if (parse_milli(v, m.max, m.field) < 0) {
      fprintf(2, "%s: %s: '%s' is not %s\n", prog, opt, v, m.what);
      return -1;
    }
    return 1;
  }
  if (strcmp(opt, "--stop") == 0) {
    if (!add_stop(g, v)) {
      fprintf(2, "%s: --stop: '%s' is not 1 to %d token ids (at most %d --stop and --stop-text options)\n", prog, v,
              KAI_AI_MAX_STOP_TOKENS, KAI_AI_MAX_STOP_SEQS);
      return -1;
    }
    return 1;
  }
  if (strcmp(opt, "--stop-text") == 0) {
    if (*v == 0) {
      fprintf(2, "%s: --stop-text: empty text\n", prog);
      return -1;
    }
    if (stop_sequences(g) + g->n_stop_text == KAI_AI_MAX_STOP_SEQS) {
      fprintf(2, "%s: --stop-text: '%s': at most %d --stop and --stop-text options\n", prog, v,
              KAI_AI_MAX_STOP_SEQS);
      return -1;
    }
    g->stop_text[g->n_stop_text++] = v;
    return 1;
  }
  if (strcmp(opt, "--seed") == 0) {
    // Digit by digit with an overflow check: strtoull would take 2^64 as
    // 2^64 - 1 and say nothing.
    uint64_t seed = 0;
    bool ok = *v != 0;
    for (const char* p = v; ok && *p; p++) {
      uint64_t d = uint64_t(*p - '0');
      ok = *p >= '0' && *p <= '9' && seed <= (~0ull - d) / 10;
      seed = seed * 10 + d;
    }
    if (!ok) {
      fprintf(2, "%s: --seed: '%s' is not a number from 0 to 18446744073709551615\n", prog, v);
      return -1;
    }
    g->sampling.seed = seed;
    return 1;
  }
  // The repetition penalty looks at most KAI_AI_MAX_REPEAT_LAST_N tokens
  // back: a longer window could not take effect, so it is refused rather
  // than silently shortened.
  bool top_k = strcmp(opt, "--top-k") == 0;
  uint32_t* field = top_k ? &g->sampling.top_k : &g->sampling.repeat_last_n;
  uint32_t max = top_k ? 1u << 20 : KAI_AI_MAX_REPEAT_LAST_N;
  if (parse_u32(v, max, field) < 0) {
    fprintf(2, "%s: %s: '%s' is not a number of tokens from 0 to %u\n", prog, opt, v, max);
    return -1;
  }
  return 1;
}

extern "C" void ai_apply_generation(struct kai_ai_submit* req, const struct ai_generation* g) {
  req->sampling = g->sampling;
  req->stop = g->stop_words ? g->stop : nullptr;
  req->stop_words = g->stop_words;
  req->flags |= g->flags;
}

void ai_apply_speculation(struct kai_ai_submit* req, const llm::SpecChoice& spec, const uint32_t* prediction,
                          uint32_t n_prediction) {
  req->spec = kai_ai_speculation{};
  switch (spec.kind) {
    case llm::SpecKind::None: req->spec.proposer = KAI_AI_PROPOSER_NONE; return;
    case llm::SpecKind::Ngram: req->spec.proposer = KAI_AI_PROPOSER_NGRAM; break;
    case llm::SpecKind::Predicted:
    case llm::SpecKind::Oracle:
      req->spec.proposer = KAI_AI_PROPOSER_PREDICTED;
      req->spec.prediction = prediction;
      req->spec.prediction_len = n_prediction;
      break;
  }
  req->spec.max_drafts = spec.drafts;
  if (spec.adaptive) req->spec.flags |= KAI_AI_SPEC_ADAPTIVE;
}

extern "C" const char* ai_finish_name(uint32_t reason) {
  switch (reason) {
    case KAI_AI_FINISH_LENGTH: return "length";
    case KAI_AI_FINISH_EOS: return "eos";
    case KAI_AI_FINISH_STOP: return "stop";
    case KAI_AI_FINISH_CANCELLED: return "cancelled";
    case KAI_AI_FINISH_FAILED: return "failed";
    case KAI_AI_FINISH_GRAMMAR: return "grammar";
    case KAI_AI_FINISH_PREFIX: return "prefix";
    case KAI_AI_FINISH_NO_TOKEN: return "no-token";
    default: return "-";
  }
}

extern "C" int ai_grammar_option(const char* prog, int argc, char** argv, int* i, struct ai_grammar_choice* g) {
  const char* a = argv[*i];
  bool regex = strcmp(a, "--regex") == 0, schema = strcmp(a, "--json-schema") == 0;
  if (!regex && !schema) return 0;
  if (g->kind != KAI_AI_GRAMMAR_NONE) {
    fprintf(2, "%s: give one grammar: --regex or --json-schema, once\n", prog);
    return -1;
  }
  if (*i + 1 >= argc) {
    fprintf(2, "%s: %s needs a value\n", prog, a);
    return -1;
  }
  const char* v = argv[++*i];
  g->kind = regex ? KAI_AI_GRAMMAR_REGEX : KAI_AI_GRAMMAR_JSON;
  if (regex) {
    size_t n = strlen(v);
    if (n == 0 || n > KAI_AI_MAX_GRAMMAR_BYTES) {
      fprintf(2, "%s: --regex: %s\n", prog, n == 0 ? "empty pattern" : "longer than 16384 bytes");
      return -1;
    }
    memcpy(g->text, v, n);
    g->len = uint32_t(n);
    return 1;
  }
  int fd = open(v, O_RDONLY);
  if (fd < 0) {
    fprintf(2, "%s: --json-schema: %s: cannot open (%s)\n", prog, v, strerror(fd));
    return -1;
  }
  uint32_t n = 0;
  for (;;) {
    long got = read(fd, g->text + n, sizeof(g->text) - n);
    if (got < 0) {
      fprintf(2, "%s: --json-schema: %s: %s\n", prog, v, strerror(got));
      close(fd);
      return -1;
    }
    if (got == 0) break;
    n += uint32_t(got);
    if (n == sizeof(g->text)) {
      char extra;
      if (read(fd, &extra, 1) > 0) {
        fprintf(2, "%s: --json-schema: %s: larger than %d bytes\n", prog, v, KAI_AI_MAX_GRAMMAR_BYTES);
        close(fd);
        return -1;
      }
      break;
    }
  }
  close(fd);
  if (n == 0) {
    fprintf(2, "%s: --json-schema: %s: empty file\n", prog, v);
    return -1;
  }
  g->len = n;
  return 1;
}

extern "C" void ai_apply_grammar(struct kai_ai_submit* req, struct ai_grammar_choice* g) {
  if (g->kind == KAI_AI_GRAMMAR_NONE) return;
  req->grammar.kind = g->kind;
  req->grammar.len = g->len;
  req->grammar.text = g->text;
  req->grammar.error_text = g->error;
  req->grammar.error_text_len = sizeof(g->error);
  g->error[0] = 0;
}

extern "C" const char* ai_grammar_option_name(const struct ai_grammar_choice* g) {
  return g->kind == KAI_AI_GRAMMAR_JSON ? "--json-schema" : "--regex";
}
