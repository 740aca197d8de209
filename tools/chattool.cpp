// chattool: the guest's chat-template code (lib/llm_chat.cpp) and tokenizer
// on the host, so tests can compare a rendered conversation with Jinja's.
//
//   chattool CHAT.TXT TOK.BIN ids [--generation-prompt] < CONVERSATION
//       the prompt's token ids, on one line
//   chattool CHAT.TXT - text [--generation-prompt] < CONVERSATION
//       the prompt's text, as is
//
// CONVERSATION: one message a line, "ROLE TEXT" with ROLE system, user or
// assistant and TEXT escaped as in CHAT.TXT (\n \r \t \\).
// Exit status 1 with "chattool: MESSAGE" on stderr for any error.
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "llm_chat.h"
#include "llm_tokenizer.h"

namespace {

int fail(const std::string& what) {
  fprintf(stderr, "chattool: %s\n", what.c_str());
  return 1;
}

bool read_file(FILE* f, std::vector<uint8_t>& out) {
  uint8_t buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  return !ferror(f);
}

bool read_path(const char* path, std::vector<uint8_t>& out) {
  FILE* f = fopen(path, "rb");
  if (!f) return false;
  bool ok = read_file(f, out);
  fclose(f);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || (strcmp(argv[3], "ids") != 0 && strcmp(argv[3], "text") != 0) ||
      (argc == 5 && strcmp(argv[4], "--generation-prompt") != 0) || argc > 5)
    return fail("usage: chattool CHAT.TXT TOK.BIN|- ids|text [--generation-prompt] < CONVERSATION");
  const bool want_ids = strcmp(argv[3], "ids") == 0;
  const bool gen = argc == 5;
  std::vector<uint8_t> chat_file, tok_file, input;
  if (!read_path(argv[1], chat_file)) return fail(std::string("cannot read ") + argv[1]);
  static llm::ChatTemplate tpl;
  auto parsed = llm::parse_chat_template(reinterpret_cast<const char*>(chat_file.data()), chat_file.size(), tpl);
  if (parsed.is_error()) return fail(parsed.error().message);
  if (!read_file(stdin, input)) return fail("cannot read the conversation");

  // Messages: their unescaped texts live in `texts` (reserved, so no moves).
  std::vector<llm::ChatMessage> msgs;
  std::vector<std::string> texts;
  texts.reserve(input.size() + 1);
  std::string all(input.begin(), input.end());
  size_t pos = 0;
  for (int line = 1; pos < all.size(); line++) {
    size_t end = all.find('\n', pos);
    if (end == std::string::npos) end = all.size();
    std::string l = all.substr(pos, end - pos);
    pos = end + 1;
    if (l.empty()) continue;
    size_t sp = l.find(' ');
    std::string role = l.substr(0, sp);
    std::string esc = sp == std::string::npos ? "" : l.substr(sp + 1);
    llm::ChatRole r;
    if (role == "system") r = llm::ChatRole::System;
    else if (role == "user") r = llm::ChatRole::User;
    else if (role == "assistant") r = llm::ChatRole::Assistant;
    else return fail("line " + std::to_string(line) + ": unknown role '" + role + "'");
    std::string text(esc.size(), '\0');
    long n = llm::chat_unescape(esc.data(), esc.size(), text.data());
    if (n < 0) return fail("line " + std::to_string(line) + ": bad escape");
    text.resize(size_t(n));
    texts.push_back(text);
    msgs.push_back({r, texts.back().data(), texts.back().size()});
  }
  std::vector<char> out(1 << 20);
  auto rendered = llm::render_chat(tpl, msgs.data(), msgs.size(), gen, out.data(), out.size());
  if (rendered.is_error()) return fail(rendered.error().message);
  if (!want_ids) {
    fwrite(out.data(), 1, rendered.value(), stdout);
    return 0;
  }
  if (!read_path(argv[2], tok_file)) return fail(std::string("cannot read ") + argv[2]);
  auto tok = llm::load_tokenizer(tok_file.data(), tok_file.size());
  if (tok.is_error()) return fail(tok.error().message);
  std::vector<uint32_t> ids(rendered.value() + 1);
  auto n = llm::encode(tok.value(), out.data(), rendered.value(), ids.data(), uint32_t(ids.size()));
  if (n.is_error()) return fail(n.error().message);
  for (uint32_t i = 0; i < n.value(); i++) printf(i ? " %u" : "%u", ids[i]);
  printf("\n");
  return 0;
}
