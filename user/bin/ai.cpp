// ai [--model NAME] [--predict N] [--int8] [--priority P] [--align-tick] [--timing]
//    [--stream] [sampling and stop options] TOK...:
// one request to the kernel's AI service (the warm path). Prints the
// generated ids on one line, then the latency breakdown from the kernel's
// timestamps. --priority: 0 (default, first) .. 15, used by the priority
// policy. --align-tick: submit right after a timer tick, so that in exact
// mode (qemu_run --deterministic) the figures repeat from boot to boot.
// --stream: print each token as the kernel publishes it (ai_read), and say
// when the first one arrived. --text "...": the prompt as text, encoded with
// the bundle's TOK.BIN; it implies --stream (the answer streams as text) and
// --stop-eos (it stops at the model's end-of-sequence id). --prompt-file F /
// --stdin: token ids from a file (text or PMT.BIN) or standard input
// (kai_prompt.h). Sampling (--temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --repeat-last-n, --seed) and stopping (--stop "IDS",
// --stop-text "TEXT" encoded with TOK.BIN, --stop-eos): see
// ai_generation_option() in kai_ai.h; greedy by default.
// --speculate ngram:K | predicted:K | oracle:K:A | none: speculative decoding
// with up to K (1..8) proposed tokens a pass (kai_ai_submit.spec): ngram is
// prompt lookup; predicted drafts from --prediction FILE (token ids, as a
// prompt file), the answer the client expects; oracle (the lab,
// docs/experiments.md) runs the request once, replaces each token of that
// answer with probability 1 - A by another id (deterministic), and runs it
// again with that as its prediction; the figures are the second run's.
// Without --speculate the boot options (ai.drafts, ai.proposer) decide.
// --adaptive: the drafts per pass move in 0..K, the number that pays best
// for the share of drafts kept so far (KAI_AI_SPEC_ADAPTIVE,
// lib/llm_draft_control.h).
// --regex R | --json-schema FILE: constrained decoding (kai_ai_submit.grammar,
// docs/constrained-decoding.md): the kernel compiles the grammar at submit
// (a refused one is named with its position and nothing runs), masks every
// draw, stops at EOS or when nothing may follow (finish=grammar); a request
// cut by --predict before a match says finish=prefix. Not with --speculate.
#include "kai.h"
#include "kai_ai.h"
#include "kai_prompt.h"
#include "kai_text.h"
#include "llm_speculate.h"

static void usage(bool asked = false) {
  fprintf(asked ? 1 : 2, "usage: ai [--model NAME] [--predict N] [--int8] [--priority P] [--align-tick] [--timing] [--stream]\n"
             "          [--temp X] [--top-k N] [--top-p X] [--min-p X] [--repeat-penalty X] [--repeat-last-n N]\n"
             "          [--seed N] [--stop \"ID ...\"] [--stop-text \"TEXT\"] [--stop-eos]\n"
             "          [--speculate ngram:K|predicted:K|oracle:K:A|none] [--adaptive] [--prediction FILE]\n"
             "          [--regex R | --json-schema FILE]\n"
             "          (TOK... | --prompt-file F | --stdin | --text \"...\")\n"
             "  --text implies --stream and --stop-eos; --stop-text is encoded with the model's TOK.BIN\n");
  exit(asked ? 0 : 2);
}

int main(int argc, char** argv) {
  const char* model = "";
  uint32_t predict = 16;
  bool timing = false;
  uint32_t flags = 0, priority = 0;
  bool align_tick = false, stream = false;
  const char* text = nullptr;          // --text: the prompt as text, the answer as text
  const char* prompt_file = nullptr;   // --prompt-file F: token ids from a file (kai_prompt.h)
  bool use_stdin = false;              // --stdin: token ids from standard input
  static ai_generation gen;
  static ai_grammar_choice grammar;
  static uint32_t prompt[KAI_AI_MAX_PROMPT + 1];
  uint32_t n = 0;
  const char* speculate = nullptr;     // --speculate: as given, for the messages
  const char* prediction_file = nullptr;
  llm::SpecChoice spec;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    bool has = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) usage(true);
    else if (strcmp(a, "--timing") == 0) timing = true;
    else if (strcmp(a, "--stream") == 0) stream = true;
    else if (strcmp(a, "--int8") == 0) flags |= KAI_AI_INT8;
    else if (strcmp(a, "--align-tick") == 0) align_tick = true;
    else if (strcmp(a, "--adaptive") == 0) spec.adaptive = true;
    else if (strcmp(a, "--stdin") == 0) use_stdin = true;
    else if (int taken = ai_generation_option("ai", argc, argv, &i, &gen); taken != 0) {
      if (taken < 0) return 2;
    }
    else if (int took = ai_grammar_option("ai", argc, argv, &i, &grammar); took != 0) {
      if (took < 0) return 2;
    }
    else if (strcmp(a, "--model") == 0 || strcmp(a, "--predict") == 0 || strcmp(a, "--priority") == 0 ||
             strcmp(a, "--text") == 0 || strcmp(a, "--prompt-file") == 0 || strcmp(a, "--speculate") == 0 ||
             strcmp(a, "--prediction") == 0) {
      if (!has) {
        fprintf(2, "ai: %s needs a value\n", a);
        return 2;
      }
      const char* v = argv[++i];
      if (strcmp(a, "--model") == 0) {
        if (strlen(v) >= KAI_AI_MODEL_NAME_MAX) {
          fprintf(2, "ai: --model: '%s' is longer than %d characters\n", v, KAI_AI_MODEL_NAME_MAX - 1);
          return 2;
        }
        model = v;
      }
      else if (strcmp(a, "--predict") == 0) predict = number_option("ai", a, v, 1, KAI_AI_MAX_OUTPUT);
      else if (strcmp(a, "--priority") == 0) priority = number_option("ai", a, v, 0, KAI_AI_MAX_PRIORITY);
      else if (strcmp(a, "--text") == 0) text = v;
      else if (strcmp(a, "--speculate") == 0) {
        if (!llm::parse_speculate(v, &spec)) {
          fprintf(2, "ai: --speculate: '%s' is not ngram:K, predicted:K, oracle:K:A or none (K 1..8, A 0..1)\n", v);
          return 2;
        }
        speculate = v;
      }
      else if (strcmp(a, "--prediction") == 0) prediction_file = v;
      else prompt_file = v;
    }
    else if (a[0] == '-' && a[1] == '-') {
      fprintf(2, "ai: unknown option %s\n", a);
      usage();
    }
    else if (n < KAI_AI_MAX_PROMPT) {
      if (!parse_prompt_token("ai", n, a, &prompt[n])) return 2;
      n++;
    }
    else {
      fprintf(2, "ai: more than %d prompt tokens\n", KAI_AI_MAX_PROMPT);
      return 2;
    }
  }
  int ways = (n > 0) + (text != nullptr) + (prompt_file != nullptr) + use_stdin;
  if (ways > 1) {
    fprintf(2, "ai: give the prompt one way: token ids, --prompt-file, --stdin or --text\n");
    return 2;
  }
  if (ways == 0) usage();
  if (spec.adaptive && (speculate == nullptr || spec.kind == llm::SpecKind::None)) {
    fprintf(2, "ai: --adaptive needs --speculate ngram:K, predicted:K or oracle:K:A\n");
    return 2;
  }
  if (grammar.kind != KAI_AI_GRAMMAR_NONE && speculate) {
    fprintf(2, "ai: --speculate cannot be combined with %s (drafts are not checked against the grammar)\n",
            ai_grammar_option_name(&grammar));
    return 2;
  }
  if ((spec.kind == llm::SpecKind::Predicted) != (prediction_file != nullptr)) {
    fprintf(2, "ai: %s\n", prediction_file ? "--prediction needs --speculate predicted:K"
                                           : "--speculate predicted:K needs --prediction FILE");
    return 2;
  }
  if (text && text[0] == 0) {
    fprintf(2, "ai: --text: empty prompt (nothing to encode)\n");
    return 2;
  }
  if (prompt_file || use_stdin) {
    long got = read_prompt_ids("ai", prompt_file, prompt, KAI_AI_MAX_PROMPT);
    if (got < 0) return 2;
    n = uint32_t(got);
  }
  char name[KAI_AI_MODEL_NAME_MAX];
  kai_ai_model_info mi{};
  if (ai_open_model("ai", model, 600, name, &mi) < 0) return 1;
  // Text mode: the bundle's tokenizer (TOK.BIN) turns the prompt into ids
  // (with BOS when the model's prompts start with one) and the answer back
  // into text as it streams; generation stops at the end-of-sequence id.
  static KaiText tokenizer;
  if (text || gen.n_stop_text) {
    char err[160];
    if (tokenizer.open(name, err, sizeof err) < 0) {
      fprintf(2, "ai: %s%s\n", text ? "" : "--stop-text: ", err);
      return 1;
    }
    if (kai_text_add_stops("ai", tokenizer, &gen) < 0) return 2;
  }
  if (text) {
    char err[160];
    long got = tokenizer.encode(text, prompt, KAI_AI_MAX_PROMPT, true, err, sizeof err);
    if (got <= 0) {
      fprintf(2, "ai: --text: %s\n", got == 0 ? "no tokens" : err);
      return 2;
    }
    n = uint32_t(got);
    stream = true;
    gen.flags |= KAI_AI_STOP_AT_EOS;
  }
  // Everything the model can refuse is checked here, so that a bad
  // argument is named and nothing is submitted.
  if (!prompt_ids_in_vocab("ai", prompt, n, name, mi.vocab_size)) return 2;
  for (uint32_t at = 0; at < gen.stop_words; at += 1 + gen.stop[at]) {
    for (uint32_t k = 1; k <= gen.stop[at]; k++) {
      if (gen.stop[at + k] >= mi.vocab_size) {
        fprintf(2, "ai: --stop: id %u out of range (model %s has %u tokens)\n", gen.stop[at + k], name,
                mi.vocab_size);
        return 2;
      }
    }
  }
  if (n + predict > mi.runtime_seq_len) {
    fprintf(2, "ai: prompt (%u tokens) + --predict %u exceeds model %s's runtime_seq_len %u\n", n, predict, name,
            mi.runtime_seq_len);
    return 2;
  }
  static uint32_t prediction[KAI_AI_MAX_PREDICTION];
  uint32_t n_prediction = 0;
  if (prediction_file) {
    long got = read_prompt_ids("ai", prediction_file, prediction, KAI_AI_MAX_PREDICTION);
    if (got < 0) return 2;
    n_prediction = uint32_t(got);
    for (uint32_t i = 0; i < n_prediction; i++) {
      if (prediction[i] >= mi.vocab_size) {
        fprintf(2, "ai: --prediction: token %u: id %u out of range (model %s has %u tokens)\n", i, prediction[i],
                name, mi.vocab_size);
        return 2;
      }
    }
  }
  llm::Decoder decoder = tokenizer.decoder();   // used in text mode only
  decoder.set_at_start(false);   // the prompt's text is printed as given, before the answer
  uint32_t* out = static_cast<uint32_t*>(malloc(predict * sizeof(uint32_t) + 4));
  kai_ai_result res{};
  kai_ai_submit req = ai_request(name, prompt, n, predict, flags, priority);
  ai_apply_generation(&req, &gen);
  ai_apply_grammar(&req, &grammar);
  if (spec.kind == llm::SpecKind::Oracle) {
    // The oracle's first run: the answer, without speculation; the second
    // run's prediction is that answer, corrupted (llm_speculate.h).
    kai_ai_submit plain = req;
    plain.spec.proposer = KAI_AI_PROPOSER_NONE;
    int64_t first = ai_submit(&plain);
    long got = first < 0 ? first : ai_wait(first, out, predict, nullptr);
    if (got < 0) {
      fprintf(2, "ai: --speculate %s: the oracle's first run: %s\n", speculate, strerror(got));
      return 1;
    }
    n_prediction = uint32_t(got) < KAI_AI_MAX_PREDICTION ? uint32_t(got) : KAI_AI_MAX_PREDICTION;
    // Which ids are replaced follows --seed (as llmrun's oracle does), so a
    // lab can average over several corruption patterns of one acceptance.
    llm::corrupt_prediction(out, n_prediction, spec.acceptance_milli, 1 + req.sampling.seed, mi.vocab_size,
                            prediction);
  }
  if (speculate) ai_apply_speculation(&req, spec, prediction, n_prediction);
  // sleep() returns in a timer interrupt's wake-up: what follows starts at
  // the same phase of the 10 ms tick in every boot. Three ticks, so that the
  // console has finished sending the echo of our command line (the UART's
  // interrupts come at the serial line's pace, ~87 us a character).
  if (align_tick) sleep(3);
  uint64_t t_submit = clock_ns();
  int64_t id = ai_submit(&req);
  // Streaming: tokens as they come; the client's own clock says when the
  // first one reached it (the kernel's t_first_token_ns says when it was known).
  uint64_t t_first_seen = 0;
  if (stream && id > 0) {
    uint32_t from = 0;
    for (;;) {
      kai_ai_status st{};
      long k = ai_read(id, from, out + from, predict - from, &st, nullptr);
      if (k <= 0) break;
      if (from == 0) {
        t_first_seen = clock_ns();
        if (text) printf("%s", text);
      }
      for (long j = 0; j < k; j++) {
        if (text) kai_text_put(decoder, out[from + j], 1);
        else printf(from + j ? " %u" : "%u", out[from + j]);
      }
      from += uint32_t(k);
    }
    if (text) kai_text_end(decoder, 1);
    printf("\n");
  }
  long got = id < 0 ? id : ai_wait(id, out, predict, &res);
  if (got < 0) {
    // Say which argument was wrong, not only the error's name.
    if (got == -KAI_ERANGE) {
      for (uint32_t i = 0; i < n; i++)
        if (prompt[i] >= mi.vocab_size)
          fprintf(2, "ai: prompt token %u: id %u out of range (model %s has %u tokens)\n", i, prompt[i],
                  name, mi.vocab_size);
    } else if (got == -KAI_EFBIG) {
      fprintf(2, "ai: prompt (%u tokens) + --predict %u exceeds model %s's runtime_seq_len %u\n", n,
              predict, name, mi.runtime_seq_len);
    } else if (grammar.kind != KAI_AI_GRAMMAR_NONE && grammar.error[0]) {
      fprintf(2, "ai: %s: %s\n", ai_grammar_option_name(&grammar), grammar.error);   // nothing was submitted
      return 2;
    } else {
      fprintf(2, "ai: %s\n", strerror(got));
    }
    return 1;
  }
  if (!stream) {
    for (long i = 0; i < got; i++) printf(i ? " %u" : "%u", out[i]);
    printf("\n");
  }
  if (res.finish_reason == KAI_AI_FINISH_NO_TOKEN) {
    fprintf(2, "ai: request failed: %s: no token can continue the match (the vocabulary cannot spell what the grammar needs)\n",
            ai_grammar_option_name(&grammar));
    return 1;
  }
  if (res.state != KAI_AI_DONE) {
    fprintf(2, "ai: request %s (%s)\n", ai_state_name(res.state), strerror(res.error));
    return 1;
  }
  ai_latency l = ai_latency_of(&res);
  // Mean batch size over the iterations this request took part in, x100.
  uint32_t batch_x100 = res.iterations ? uint32_t(uint64_t(res.batch_sum) * 100 / res.iterations) : 0;
  if (timing) {
    printf("timing model=%s path=warm prompt=%u gen=%u queue_us=%lu ttft_us=%lu prefill_us=%lu tpot_us=%lu total_us=%lu iterations=%u mean_batch=%u.%02u finish=%s drafted=%u accepted=%u\n",
           name, res.n_prompt, res.n_generated, l.queue_us, l.ttft_us, l.prefill_us, l.tpot_us, l.total_us,
           res.iterations, batch_x100 / 100, batch_x100 % 100, ai_finish_name(res.finish_reason), res.drafted,
           res.accepted);
  } else {
    printf("model %s: queue wait %lu us, TTFT %lu us (prefill %lu us), TPOT %lu us, end-to-end %lu us (worker %u, queue depth at submit %u, %u iterations, mean batch %u.%02u)\n",
           name, l.queue_us, l.ttft_us, l.prefill_us, l.tpot_us, l.total_us, res.worker, res.queue_depth_at_submit,
           res.iterations, batch_x100 / 100, batch_x100 % 100);
  }
  if (speculate && !timing)
    printf("speculate %s: drafted %u, accepted %u\n", speculate, res.drafted, res.accepted);
  if (stream && t_first_seen) {
    // Both clocks are the same `time` CSR: comparable directly.
    printf("stream: first token reached ai %lu us after submit; the request finished %lu us after submit\n",
           (unsigned long)((t_first_seen - t_submit) / 1000),
           (unsigned long)((res.t_finish_ns > t_submit ? res.t_finish_ns - t_submit : 0) / 1000));
  }
  free(out);
  return 0;
}
