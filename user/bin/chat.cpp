// chat [--model NAME] [--system TEXT] [--predict N] [--int8] [--timing] [--show-ids]
//      [--temp X] [--top-k N] [--top-p X] [--min-p X] [--repeat-penalty X]
//      [--repeat-last-n N] [--seed N] [--stop "IDS"] [--stop-text "TEXT"] [--json-schema FILE]
// A conversation with a chat model through the kernel's AI service.
//
// Reads one line at a time from standard input (the console, or a file with
// `chat < FILE`); each line is the user's message. Every turn:
//   1. render the whole conversation so far with the bundle's chat template
//      (CHAT.TXT, lib/llm_chat.h), the generation prompt at the end, and
//      encode it with TOK.BIN: the same text, so the same tokens, that the
//      model's own Jinja template gives;
//   2. submit it with streaming (ai_submit, ai_read) and print the answer as
//      its tokens arrive, stopping at the template's end-of-turn id;
//   3. keep the answer's text as the assistant's message.
// The prompt of turn N+1 starts with the prompt of turn N, so the kernel's
// prefix cache serves those tokens from the KV blocks turn N left behind:
// only the answer and the new message are computed (--timing shows it:
// `turn N prompt=P cached=C ttft_us=T tpot_us=U`).
//
// The context: a prompt holds at most KAI_AI_MAX_PROMPT tokens and leaves
// room for --predict tokens of answer within the model's runtime_seq_len.
// When the conversation outgrows it, chat says so and drops the oldest turns
// (a user message and its answer) until it fits; the system message stays.
//
// Commands: /reset forgets the conversation, /quit (or end of input) ends.
// --system TEXT replaces the template's default system message; --int8 asks
// for int8 activations (as `ai --int8`: faster, tokens may differ). --show-ids
// prints each turn's prompt and answer ids (for tests: the same prompt sent
// with `ai` must give the same answer). --json-schema FILE: every answer is
// JSON of that schema (kai_ai_submit.grammar, docs/constrained-decoding.md);
// a schema the kernel refuses is named with its reason before any turn runs.
#include "kai.h"
#include "kai_ai.h"
#include "kai_text.h"
#include "llm_chat.h"

namespace {

constexpr uint32_t kMaxMessages = 64;
constexpr uint32_t kArenaBytes = 16384;     // the conversation's text
constexpr uint32_t kRenderBytes = kArenaBytes + 4096;
constexpr uint32_t kLineBytes = 2048;

void usage() {
  fprintf(2, "usage: chat [--model NAME] [--system TEXT] [--predict N] [--int8] [--timing] [--show-ids]\n"
             "            [--temp X] [--top-k N] [--top-p X] [--min-p X] [--repeat-penalty X]\n"
             "            [--repeat-last-n N] [--seed N] [--stop \"ID ...\"] [--stop-text \"TEXT\"] [--json-schema FILE]\n");
  exit(2);
}

// The conversation: messages whose texts lie one after another in an arena,
// oldest first. Dropping the oldest turn moves the rest down.
struct Conversation {
  llm::ChatMessage msgs[kMaxMessages];
  uint32_t n = 0;
  uint32_t used = 0;
  char arena[kArenaBytes];

  bool add(llm::ChatRole role, const char* text, size_t len) {
    if (n == kMaxMessages || len > kArenaBytes - used) return false;
    memcpy(arena + used, text, len);
    msgs[n++] = {role, arena + used, len};
    used += uint32_t(len);
    return true;
  }
  // Removes the oldest user message and the answer after it. False if only
  // the newest message is left (it cannot go: it is what we answer).
  bool drop_oldest_turn() {
    if (n <= 1) return false;
    uint32_t k = (n >= 3 && msgs[1].role == llm::ChatRole::Assistant) ? 2 : 1;
    size_t bytes = 0;
    for (uint32_t i = 0; i < k; i++) bytes += msgs[i].len;
    memmove(arena, arena + bytes, used - bytes);
    used -= uint32_t(bytes);
    for (uint32_t i = k; i < n; i++) {
      msgs[i - k] = msgs[i];
      msgs[i - k].text -= bytes;
    }
    n -= k;
    return true;
  }
  void drop_newest() {
    n--;
    used -= uint32_t(msgs[n].len);
  }
};

// Whole file into a NUL-terminated heap buffer; null and *err on failure.
char* read_file(const char* path, size_t* size, int* err) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) { *err = fd; return nullptr; }
  struct kai_stat st;
  int r = fstat(fd, &st);
  char* buf = r < 0 ? nullptr : static_cast<char*>(malloc(st.size + 1));
  size_t got = 0;
  while (buf && got < st.size) {
    long k = read(fd, buf + got, st.size - got);
    if (k <= 0) break;
    got += size_t(k);
  }
  close(fd);
  if (!buf || got != st.size) { free(buf); *err = r < 0 ? r : -KAI_EIO; return nullptr; }
  buf[got] = 0;
  *size = got;
  return buf;
}

// Why a model is FAILED (ai_info's per-model error).
const char* load_error(const char* model) {
  static kai_ai_info info;
  if (ai_info(&info) < 0) return "unknown error";
  for (uint32_t i = 0; i < info.n_models; i++)
    if (model[0] == 0 || strcmp(info.models[i].name, model) == 0) return strerror(info.models[i].error);
  return "unknown error";
}

void print_ids(const char* what, uint32_t turn, const uint32_t* ids, uint32_t n) {
  printf("turn %u %s:", turn, what);
  for (uint32_t i = 0; i < n; i++) printf(" %u", ids[i]);
  printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const char* model = "";
  const char* system = nullptr;
  uint32_t predict = 128;
  bool predict_given = false, timing = false, show_ids = false;
  uint32_t flags = 0;
  static ai_generation gen;
  static ai_grammar_choice grammar;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) model = argv[++i];
    else if (strcmp(argv[i], "--system") == 0 && i + 1 < argc) system = argv[++i];
    else if (strcmp(argv[i], "--predict") == 0 && i + 1 < argc) {
      predict = number_option("chat", "--predict", argv[++i], 1, KAI_AI_MAX_OUTPUT);
      predict_given = true;
    }
    else if (strcmp(argv[i], "--timing") == 0) timing = true;
    else if (strcmp(argv[i], "--show-ids") == 0) show_ids = true;
    else if (strcmp(argv[i], "--int8") == 0) flags |= KAI_AI_INT8;
    else if (strcmp(argv[i], "--stop-eos") == 0) { fprintf(2, "chat: --stop-eos is always on\n"); return 2; }
    else if (int taken = ai_generation_option("chat", argc, argv, &i, &gen); taken != 0) {
      if (taken < 0) return 2;
    }
    else if (strcmp(argv[i], "--json-schema") == 0) {
      if (ai_grammar_option("chat", argc, argv, &i, &grammar) < 0) return 2;
    }
    else if (argv[i][0] == '-') {
      fprintf(2, "chat: unknown option '%s'\n", argv[i]);
      usage();
    }
    else {
      fprintf(2, "chat: unexpected argument '%s' (messages come from standard input)\n", argv[i]);
      usage();
    }
  }

  // The model: it must exist, have loaded, and carry a chat template and a tokenizer.
  char name[KAI_AI_MODEL_NAME_MAX];
  kai_ai_model_info mi{};
  if (int r = ai_wait_model_ready(model, 600, name, &mi); r < 0) {
    if (r == -KAI_ENOENT && model[0]) fprintf(2, "chat: no model named '%s' (models are the directories under /AI)\n", model);
    else if (r == -KAI_ENOENT) fprintf(2, "chat: no model under /AI\n");
    else if (r == -KAI_ENODEV) fprintf(2, "chat: model %s failed to load: %s\n", model[0] ? model : "(first)", load_error(model));
    else fprintf(2, "chat: model %s: %s\n", model[0] ? model : "(first)", strerror(r));
    return 1;
  }
  static llm::ChatTemplate tpl;
  {
    char path[64];
    snprintf(path, sizeof path, "/AI/%s/CHAT.TXT", name);
    size_t size = 0;
    int err = 0;
    char* text = read_file(path, &size, &err);
    if (!text) {
      if (err == -KAI_ENOENT)
        fprintf(2, "chat: model %s has no chat template (%s missing: export a model whose tokenizer_config.json has a chat_template)\n", name, path);
      else fprintf(2, "chat: %s: %s\n", path, strerror(err));
      return 1;
    }
    auto parsed = llm::parse_chat_template(text, size, tpl);
    free(text);
    if (parsed.is_error()) {
      fprintf(2, "chat: %s: %s\n", path, parsed.error().message);
      return 1;
    }
  }
  static KaiText tokenizer;
  char err[160];
  if (tokenizer.open(name, err, sizeof err) < 0) {
    fprintf(2, "chat: %s\n", err);
    return 1;
  }
  for (uint32_t i = 0; i < tpl.n_end_of_turn; i++) {
    if (tpl.end_of_turn[i] >= mi.vocab_size) {
      fprintf(2, "chat: /AI/%s/CHAT.TXT: end_of_turn id %u out of range (model has %u tokens)\n", name,
              tpl.end_of_turn[i], mi.vocab_size);
      return 1;
    }
  }
  if (!predict_given && predict > mi.runtime_seq_len / 2) predict = mi.runtime_seq_len / 2;
  if (predict + 8 > mi.runtime_seq_len) {
    fprintf(2, "chat: --predict %u leaves no room for a prompt in model %s's context of %u tokens\n", predict, name,
            mi.runtime_seq_len);
    return 2;
  }
  const uint32_t context = mi.runtime_seq_len - predict < KAI_AI_MAX_PROMPT ? mi.runtime_seq_len - predict
                                                                           : KAI_AI_MAX_PROMPT;

  // Stop at every end-of-turn id, after the user's own --stop sequences.
  if (kai_text_add_stops("chat", tokenizer, &gen) < 0) return 2;
  for (uint32_t i = 0; i < tpl.n_end_of_turn; i++) {
    if (!ai_add_stop_ids(&gen, &tpl.end_of_turn[i], 1)) {
      fprintf(2, "chat: too many --stop sequences: the end-of-turn ids need %u of the %d\n", tpl.n_end_of_turn,
              KAI_AI_MAX_STOP_SEQS);
      return 2;
    }
  }
  gen.flags |= KAI_AI_STOP_AT_EOS;

  static Conversation conv;
  static char line[kLineBytes];
  static char rendered[kRenderBytes];
  static char answer[kArenaBytes - kLineBytes];
  static uint32_t prompt[KAI_AI_MAX_PROMPT + 1];
  uint32_t* out = static_cast<uint32_t*>(malloc((predict + 1) * sizeof(uint32_t)));
  if (!out) { fprintf(2, "chat: out of memory\n"); return 1; }
  // The messages handed to the renderer: the --system one first, if given.
  static llm::ChatMessage msgs[kMaxMessages + 1];
  printf("chat: model %s, template %s, context %u tokens; /reset, /quit\n", name, tpl.name, context);

  for (uint32_t turn = 1;;) {
    printf("> ");
    long len = getline(0, line, sizeof line);
    if (len <= 0) { printf("\n"); break; }   // end of input: end the "> " line
    if (line[len - 1] != '\n' && len == long(sizeof line) - 1) {
      while (len > 0 && line[len - 1] != '\n') len = getline(0, line, sizeof line);
      fprintf(2, "chat: message longer than %u bytes: ignored\n", kLineBytes - 2);
      continue;
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (len == 0) continue;
    if (strcmp(line, "/quit") == 0) { printf("\n"); break; }
    if (strcmp(line, "/reset") == 0) {
      conv.n = conv.used = 0;
      printf("chat: conversation cleared\n");
      continue;
    }
    // The conversation's memory (kMaxMessages, kArenaBytes) is larger than
    // any context, so making room here drops only turns the context has lost.
    bool added = conv.add(llm::ChatRole::User, line, size_t(len));
    while (!added && conv.n > 0) {
      if (!conv.drop_oldest_turn()) conv.n = conv.used = 0;
      added = conv.add(llm::ChatRole::User, line, size_t(len));
    }

    // Render and encode; drop the oldest turns while it does not fit.
    uint32_t n_prompt = 0;
    uint32_t dropped = 0;
    bool fits = false;
    for (;;) {
      uint32_t k = 0;
      if (system) msgs[k++] = {llm::ChatRole::System, system, strlen(system)};
      for (uint32_t i = 0; i < conv.n; i++) msgs[k++] = conv.msgs[i];
      auto text = llm::render_chat(tpl, msgs, k, true, rendered, sizeof rendered - 1);
      long got = -KAI_E2BIG;
      if (!text.is_error()) {
        rendered[text.value()] = 0;
        got = tokenizer.encode(rendered, prompt, KAI_AI_MAX_PROMPT + 1, false, err, sizeof err);
        if (got < 0 && got != -KAI_E2BIG) {
          fprintf(2, "chat: cannot encode the conversation: %s\n", err);
          break;
        }
      }
      if (got >= 0 && uint32_t(got) <= context) { n_prompt = uint32_t(got); fits = true; break; }
      if (!conv.drop_oldest_turn()) {
        fprintf(2, "chat: this message does not fit in the context of %u tokens: ignored\n", context);
        break;
      }
      dropped++;
    }
    if (!fits) { conv.drop_newest(); continue; }
    if (dropped)
      printf("chat: the conversation no longer fits in %u tokens: dropped the oldest %u turn%s\n", context, dropped,
             dropped == 1 ? "" : "s");

    // Submit, stream the answer, keep its text.
    kai_ai_submit req = ai_request(name, prompt, n_prompt, predict, flags);
    ai_apply_generation(&req, &gen);
    ai_apply_grammar(&req, &grammar);
    int64_t id = ai_submit(&req);
    if (id < 0 && grammar.error[0]) {   // the schema was refused: no turn can run
      fprintf(2, "chat: --json-schema: %s\n", grammar.error);
      free(out);
      return 2;
    }
    llm::Decoder decoder = tokenizer.decoder();
    decoder.set_at_start(false);
    size_t answer_len = 0;
    uint32_t from = 0;
    auto keep = [&](const char* p, size_t k) {
      write(1, p, k);
      if (k > sizeof answer - answer_len) k = sizeof answer - answer_len;
      memcpy(answer + answer_len, p, k);
      answer_len += k;
    };
    while (id > 0 && from < predict) {
      kai_ai_status st{};
      long k = ai_read(id, from, out + from, predict - from, &st, nullptr);
      if (k <= 0) break;
      for (long j = 0; j < k; j++) {
        uint32_t t = out[from + j];
        if (llm::is_end_of_turn(tpl, t) || llm::is_eos(tokenizer.tokenizer(), t)) continue;
        char buf[llm::Decoder::kMaxPushBytes];
        auto r = decoder.push(t, buf, sizeof buf);
        if (!r.is_error()) keep(buf, r.value());
      }
      from += uint32_t(k);
    }
    {
      char buf[8];
      auto r = decoder.finish(buf, sizeof buf);
      if (!r.is_error()) keep(buf, r.value());
    }
    printf("\n");
    kai_ai_result res{};
    long got = id < 0 ? id : ai_wait(id, out, predict, &res);
    if (got < 0 || res.state != KAI_AI_DONE) {
      fprintf(2, "chat: the request failed: %s\n", strerror(got < 0 ? int(got) : res.error));
      conv.drop_newest();
      continue;
    }
    if (show_ids) {
      print_ids("prompt", turn, prompt, n_prompt);
      print_ids("answer", turn, out, uint32_t(got));
      printf("turn %u finish=%s\n", turn, ai_finish_name(res.finish_reason));
    }
    if (timing) {
      ai_latency l = ai_latency_of(&res);
      printf("turn %u prompt=%u cached=%u ttft_us=%lu tpot_us=%lu\n", turn, res.n_prompt, res.cached_tokens,
             (unsigned long)l.ttft_us, (unsigned long)l.tpot_us);
    }
    // The answer buffer is small enough that the user's message and the
    // answer always fit once the older turns are gone.
    while (!conv.add(llm::ChatRole::Assistant, answer, answer_len)) conv.drop_oldest_turn();
    turn++;
  }
  free(out);
  return 0;
}
