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
#include "kai_file.h"
#include "kai_options.h"
#include "kai_text.h"
#include "llm_chat.h"

namespace {

constexpr uint32_t kMaxMessages = 64;
constexpr uint32_t kArenaBytes = 16384;     // the conversation's text
constexpr uint32_t kRenderBytes = kArenaBytes + 4096;
constexpr uint32_t kLineBytes = 2048;

constexpr const char* kUsage =
    "chat [--model NAME] [--system TEXT] [--predict N] [--int8] [--timing] [--show-ids]\n"
    "            [--temp X] [--top-k N] [--top-p X] [--min-p X] [--repeat-penalty X]\n"
    "            [--repeat-last-n N] [--seed N] [--stop \"ID ...\"] [--stop-text \"TEXT\"] [--json-schema FILE]\n"
    "  the messages come from standard input, one a line";

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

// The command line, as given.
struct Options {
  const char* model = "";
  const char* system = nullptr;
  uint32_t predict = 0;   // 0: not given (half the model's context, at most 128)
  bool timing = false, show_ids = false;
  uint32_t flags = 0;
  ai_generation gen;
  ai_grammar_choice grammar;
};

// Reads the command line into o, or exits with status 2 naming what is wrong.
void parse_options(int argc, char** argv, Options& o) {
  CommandLine args("chat", kUsage, argc, argv);
  while (args.next()) {
    if (args.flag("--stop-eos")) {
      fprintf(2, "chat: --stop-eos is always on\n");
      exit(2);
    }
    if (args.help() || args.model(&o.model) || args.text("--system", &o.system) ||
        args.number("--predict", 1, KAI_AI_MAX_OUTPUT, &o.predict) || args.timing(&o.timing) ||
        args.flag("--show-ids", &o.show_ids) || args.flag_bits("--int8", KAI_AI_INT8, &o.flags) ||
        args.generation(&o.gen) || (!args.flag("--regex") && args.grammar(&o.grammar)))
      continue;
    args.unknown();
  }
}

// The model: it must exist, have loaded, and carry a chat template (read
// into tpl) and a tokenizer. False after saying why.
bool open_chat_model(const char* model, char (&name)[KAI_AI_MODEL_NAME_MAX], kai_ai_model_info* mi,
                     llm::ChatTemplate& tpl, KaiText& tokenizer) {
  if (int r = ai_wait_model_ready(model, 600, name, mi); r < 0) {
    if (r == -KAI_ENOENT && model[0]) fprintf(2, "chat: no model named '%s' (models are the directories under /AI)\n", model);
    else if (r == -KAI_ENOENT) fprintf(2, "chat: no model under /AI\n");
    else if (r == -KAI_ENODEV) fprintf(2, "chat: model %s failed to load: %s\n", model[0] ? model : "(first)", load_error(model));
    else fprintf(2, "chat: model %s: %s\n", model[0] ? model : "(first)", strerror(r));
    return false;
  }
  char path[64];
  snprintf(path, sizeof path, "/AI/%s/CHAT.TXT", name);
  size_t size = 0;
  int error = 0;
  char* text = reinterpret_cast<char*>(read_whole_file(path, &size, &error));
  if (!text) {
    if (error == -KAI_ENOENT)
      fprintf(2, "chat: model %s has no chat template (%s missing: export a model whose tokenizer_config.json has a chat_template)\n", name, path);
    else fprintf(2, "chat: %s: %s\n", path, strerror(error));
    return false;
  }
  auto parsed = llm::parse_chat_template(text, size, tpl);
  free(text);
  if (parsed.is_error()) {
    fprintf(2, "chat: %s: %s\n", path, parsed.error().message);
    return false;
  }
  char err[160];
  if (tokenizer.open(name, err, sizeof err) < 0) {
    fprintf(2, "chat: %s\n", err);
    return false;
  }
  for (uint32_t i = 0; i < tpl.n_end_of_turn; i++) {
    if (tpl.end_of_turn[i] >= mi->vocab_size) {
      fprintf(2, "chat: /AI/%s/CHAT.TXT: end_of_turn id %u out of range (model has %u tokens)\n", name,
              tpl.end_of_turn[i], mi->vocab_size);
      return false;
    }
  }
  return true;
}

// What every turn works with: the model, its template and tokenizer, the
// room in its context, and the conversation with its buffers.
struct Chat {
  Options o;
  char name[KAI_AI_MODEL_NAME_MAX];
  kai_ai_model_info mi;
  llm::ChatTemplate tpl;
  KaiText tokenizer;
  uint32_t context;   // prompt tokens at most: what --predict leaves of runtime_seq_len
  Conversation conv;
  char line[kLineBytes];
  char rendered[kRenderBytes];
  char answer[kArenaBytes - kLineBytes];
  uint32_t prompt[KAI_AI_MAX_PROMPT + 1];
  uint32_t* out;      // predict + 1 ids
  // The messages handed to the renderer: the --system one first, if given.
  llm::ChatMessage msgs[kMaxMessages + 1];
};

// Fits --predict into the model's context, and stops at every end-of-turn
// id (after the user's own --stop sequences). False after saying why.
bool plan_answers(Chat& c) {
  Options& o = c.o;
  const uint32_t seq_len = c.mi.runtime_seq_len;
  if (o.predict == 0) o.predict = 128 < seq_len / 2 ? 128 : seq_len / 2;
  if (o.predict + 8 > seq_len) {
    fprintf(2, "chat: --predict %u leaves no room for a prompt in model %s's context of %u tokens\n", o.predict,
            c.name, seq_len);
    return false;
  }
  c.context = seq_len - o.predict < KAI_AI_MAX_PROMPT ? seq_len - o.predict : KAI_AI_MAX_PROMPT;
  if (kai_text_add_stops("chat", c.tokenizer, &o.gen) < 0) return false;
  for (uint32_t i = 0; i < c.tpl.n_end_of_turn; i++) {
    if (!ai_add_stop_ids(&o.gen, &c.tpl.end_of_turn[i], 1)) {
      fprintf(2, "chat: too many --stop sequences: the end-of-turn ids need %u of the %d\n", c.tpl.n_end_of_turn,
              KAI_AI_MAX_STOP_SEQS);
      return false;
    }
  }
  o.gen.flags |= KAI_AI_STOP_AT_EOS;
  return true;
}

enum class Input { Message, Handled, End };

// Reads one line into c.line; a command (/reset, /quit), an empty or too
// long line is handled here. *len: the message's length.
Input read_message(Chat& c, long* len_out) {
  char* line = c.line;
  printf("> ");
  long len = getline(0, line, sizeof c.line);
  if (len <= 0) { printf("\n"); return Input::End; }   // end of input: end the "> " line
  if (line[len - 1] != '\n' && len == long(sizeof c.line) - 1) {
    while (len > 0 && line[len - 1] != '\n') len = getline(0, line, sizeof c.line);
    fprintf(2, "chat: message longer than %u bytes: ignored\n", kLineBytes - 2);
    return Input::Handled;
  }
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
  if (len == 0) return Input::Handled;
  if (strcmp(line, "/quit") == 0) { printf("\n"); return Input::End; }
  if (strcmp(line, "/reset") == 0) {
    c.conv.n = c.conv.used = 0;
    printf("chat: conversation cleared\n");
    return Input::Handled;
  }
  *len_out = len;
  return Input::Message;
}

// Renders the conversation and encodes it into c.prompt, dropping the
// oldest turns while it does not fit. The number of ids, or -1 (the newest
// message alone does not fit, or cannot be encoded: said why).
long encode_conversation(Chat& c) {
  uint32_t dropped = 0;
  for (;;) {
    uint32_t k = 0;
    if (c.o.system) c.msgs[k++] = {llm::ChatRole::System, c.o.system, strlen(c.o.system)};
    for (uint32_t i = 0; i < c.conv.n; i++) c.msgs[k++] = c.conv.msgs[i];
    auto text = llm::render_chat(c.tpl, c.msgs, k, true, c.rendered, sizeof c.rendered - 1);
    long got = -KAI_E2BIG;
    if (!text.is_error()) {
      c.rendered[text.value()] = 0;
      char err[160];
      got = c.tokenizer.encode(c.rendered, c.prompt, KAI_AI_MAX_PROMPT + 1, false, err, sizeof err);
      if (got < 0 && got != -KAI_E2BIG) {
        fprintf(2, "chat: cannot encode the conversation: %s\n", err);
        return -1;
      }
    }
    if (got >= 0 && uint32_t(got) <= c.context) {
      if (dropped)
        printf("chat: the conversation no longer fits in %u tokens: dropped the oldest %u turn%s\n", c.context,
               dropped, dropped == 1 ? "" : "s");
      return got;
    }
    if (!c.conv.drop_oldest_turn()) {
      fprintf(2, "chat: this message does not fit in the context of %u tokens: ignored\n", c.context);
      return -1;
    }
    dropped++;
  }
}

enum class Turn { Answered, Failed, SchemaRefused };

// Submits the prompt, prints the answer's text as its tokens arrive and
// keeps it in c.answer (*answer_len bytes); then the --show-ids and
// --timing lines.
Turn answer_turn(Chat& c, uint32_t turn, uint32_t n_prompt, size_t* answer_len) {
  const Options& o = c.o;
  kai_ai_submit req = ai_request(c.name, c.prompt, n_prompt, o.predict, o.flags);
  ai_apply_generation(&req, &o.gen);
  ai_apply_grammar(&req, &c.o.grammar);
  int64_t id = ai_submit(&req);
  if (id < 0 && o.grammar.error[0]) {   // the schema was refused: no turn can run
    fprintf(2, "chat: --json-schema: %s\n", o.grammar.error);
    return Turn::SchemaRefused;
  }
  llm::Decoder decoder = c.tokenizer.decoder();
  decoder.set_at_start(false);
  *answer_len = 0;
  auto keep = [&](const char* p, size_t k) {
    write(1, p, k);
    if (k > sizeof c.answer - *answer_len) k = sizeof c.answer - *answer_len;
    memcpy(c.answer + *answer_len, p, k);
    *answer_len += k;
  };
  uint32_t from = 0;
  while (id > 0 && from < o.predict) {
    kai_ai_status st{};
    long k = ai_read(id, from, c.out + from, o.predict - from, &st, nullptr);
    if (k <= 0) break;
    for (long j = 0; j < k; j++) {
      uint32_t t = c.out[from + j];
      if (llm::is_end_of_turn(c.tpl, t) || llm::is_eos(c.tokenizer.tokenizer(), t)) continue;
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
  long got = id < 0 ? id : ai_wait(id, c.out, o.predict, &res);
  if (got < 0 || res.state != KAI_AI_DONE) {
    fprintf(2, "chat: the request failed: %s\n", strerror(got < 0 ? int(got) : res.error));
    return Turn::Failed;
  }
  if (o.show_ids) {
    print_ids("prompt", turn, c.prompt, n_prompt);
    print_ids("answer", turn, c.out, uint32_t(got));
    printf("turn %u finish=%s\n", turn, ai_finish_name(res.finish_reason));
  }
  if (o.timing) {
    ai_latency l = ai_latency_of(&res);
    printf("turn %u prompt=%u cached=%u ttft_us=%lu tpot_us=%lu\n", turn, res.n_prompt, res.cached_tokens,
           (unsigned long)l.ttft_us, (unsigned long)l.tpot_us);
  }
  return Turn::Answered;
}

}  // namespace

int main(int argc, char** argv) {
  static Chat c;
  parse_options(argc, argv, c.o);
  if (!open_chat_model(c.o.model, c.name, &c.mi, c.tpl, c.tokenizer)) return 1;
  if (!plan_answers(c)) return 2;
  c.out = static_cast<uint32_t*>(malloc((c.o.predict + 1) * sizeof(uint32_t)));
  if (!c.out) { fprintf(2, "chat: out of memory\n"); return 1; }
  printf("chat: model %s, template %s, context %u tokens; /reset, /quit\n", c.name, c.tpl.name, c.context);

  for (uint32_t turn = 1;;) {
    long len = 0;
    Input in = read_message(c, &len);
    if (in == Input::End) break;
    if (in == Input::Handled) continue;
    // The conversation's memory (kMaxMessages, kArenaBytes) is larger than
    // any context, so making room here drops only turns the context has lost.
    bool added = c.conv.add(llm::ChatRole::User, c.line, size_t(len));
    while (!added && c.conv.n > 0) {
      if (!c.conv.drop_oldest_turn()) c.conv.n = c.conv.used = 0;
      added = c.conv.add(llm::ChatRole::User, c.line, size_t(len));
    }
    long n_prompt = encode_conversation(c);
    if (n_prompt < 0) { c.conv.drop_newest(); continue; }
    size_t answer_len = 0;
    Turn t = answer_turn(c, turn, uint32_t(n_prompt), &answer_len);
    if (t == Turn::SchemaRefused) { free(c.out); return 2; }
    if (t == Turn::Failed) { c.conv.drop_newest(); continue; }
    // The answer buffer is small enough that the user's message and the
    // answer always fit once the older turns are gone.
    while (!c.conv.add(llm::ChatRole::Assistant, c.answer, answer_len)) c.conv.drop_oldest_turn();
    turn++;
  }
  free(c.out);
  return 0;
}
