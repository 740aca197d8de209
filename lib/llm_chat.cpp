// CHAT.TXT: parsing and rendering (see llm_chat.h).
//
// The file is text, one field per line, "NAME VALUE": the value is everything
// after the first space, with \n \r \t \\ escaped so a field is one line. The
// first line is "kai-chat 1". Every field but default_system is required.
#include "llm_chat.h"
#include "llm_util.h"

namespace llm {
namespace {

constexpr char kMagic[] = "kai-chat 1";

bool same(const char* a, size_t n, const char* b) {
  size_t m = str_len(b);
  if (n != m) return false;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

Error line_error(uint32_t line, const char* what, const char* key = nullptr, size_t key_len = 0) {
  Error e = Error::make(ErrorCode::BadField);
  e.str("CHAT.TXT: line ").num(line).str(": ").str(what);
  if (key) {
    char k[40];
    size_t n = key_len < sizeof k - 1 ? key_len : sizeof k - 1;
    for (size_t i = 0; i < n; i++) k[i] = key[i];
    k[n] = 0;
    e.str(" '").str(k).str("'");
  }
  return e;
}

// The text fields in a fixed order: begin, generation_prompt, then each
// role's prefix and suffix. -1 for a name that is none of them.
constexpr uint32_t kPieces = 2 + 2 * kChatRoles;
constexpr const char* kPieceNames[kPieces] = {
    "begin", "generation_prompt", "system_prefix", "system_suffix",
    "user_prefix", "user_suffix", "assistant_prefix", "assistant_suffix"};
int piece_index(const char* key, size_t n) {
  for (uint32_t i = 0; i < kPieces; i++)
    if (same(key, n, kPieceNames[i])) return int(i);
  return -1;
}
ChatPiece& piece_at(ChatTemplate& t, uint32_t i) {
  if (i == 0) return t.begin;
  if (i == 1) return t.generation_prompt;
  uint32_t role = (i - 2) / 2;
  return (i - 2) % 2 == 0 ? t.prefix[role] : t.suffix[role];
}

Result<uint32_t> parse_ids(const char* v, size_t n, uint32_t line, uint32_t* out) {
  uint32_t count = 0;
  size_t i = 0;
  while (i < n) {
    if (v[i] == ' ') { i++; continue; }
    uint64_t x = 0;
    size_t start = i;
    while (i < n && v[i] >= '0' && v[i] <= '9' && x <= 0xffffffffu) x = x * 10 + uint64_t(v[i++] - '0');
    if (i == start || (i < n && v[i] != ' ') || x > 0xffffffffu)
      return line_error(line, "end_of_turn: not a list of token ids");
    if (count == kChatMaxEndOfTurn) return line_error(line, "end_of_turn: more than 4 ids");
    out[count++] = uint32_t(x);
  }
  if (count == 0) return line_error(line, "end_of_turn: no ids");
  return count;
}

bool append(char* out, size_t cap, size_t& at, const char* p, size_t n) {
  if (n > cap - at) return false;
  for (size_t i = 0; i < n; i++) out[at + i] = p[i];
  at += n;
  return true;
}

}  // namespace

long chat_unescape(const char* in, size_t n, char* out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (in[i] != '\\') { out[k++] = in[i]; continue; }
    if (++i == n) return -1;
    switch (in[i]) {
      case 'n': out[k++] = '\n'; break;
      case 'r': out[k++] = '\r'; break;
      case 't': out[k++] = '\t'; break;
      case '\\': out[k++] = '\\'; break;
      default: return -1;
    }
  }
  return long(k);
}

Result<void> parse_chat_template(const char* text, size_t len, ChatTemplate& t) {
  t = ChatTemplate{};
  // Which required fields were seen: the 9 text fields, then end_of_turn.
  bool seen_name = false, seen_eot = false;
  bool seen_piece[kPieces] = {};
  size_t pos = 0;
  uint32_t line = 0;
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    const char* s = text + pos;
    size_t n = end - pos;
    pos = end + 1;
    line++;
    if (line == 1) {
      if (!same(s, n, kMagic)) return line_error(1, "not a CHAT.TXT (the first line must be 'kai-chat 1')");
      continue;
    }
    if (n == 0) continue;
    size_t sp = 0;
    while (sp < n && s[sp] != ' ') sp++;
    const char* v = s + (sp < n ? sp + 1 : n);
    size_t vn = sp < n ? n - sp - 1 : 0;
    if (int pi = piece_index(s, sp); pi >= 0) {
      // An escaped value is never shorter than its bytes, so vn bounds them.
      if (vn > kChatPieceMax) return line_error(line, "value longer than 128 bytes in", s, sp);
      ChatPiece& p = piece_at(t, uint32_t(pi));
      long k = chat_unescape(v, vn, p.text);
      if (k < 0) return line_error(line, "bad escape in", s, sp);
      p.len = uint32_t(k);
      seen_piece[pi] = true;
    } else if (same(s, sp, "name")) {
      if (vn >= kChatNameMax) return line_error(line, "name longer than 31 bytes");
      for (size_t i = 0; i < vn; i++) t.name[i] = v[i];
      seen_name = true;
    } else if (same(s, sp, "default_system")) {
      if (vn > kChatSystemMax) return line_error(line, "default_system longer than 1024 bytes");
      long k = chat_unescape(v, vn, t.default_system);
      if (k < 0) return line_error(line, "bad escape in", s, sp);
      t.default_system_len = uint32_t(k);
      t.has_default_system = true;
    } else if (same(s, sp, "end_of_turn")) {
      t.n_end_of_turn = TRY(parse_ids(v, vn, line, t.end_of_turn));
      seen_eot = true;
    } else {
      return line_error(line, "unknown field", s, sp);
    }
  }
  if (line == 0) return line_error(1, "empty file");
  auto missing = [](const char* field) {
    return Error::make(ErrorCode::BadField).str("CHAT.TXT: missing field '").str(field).str("'");
  };
  if (!seen_name) return missing("name");
  if (!seen_eot) return missing("end_of_turn");
  for (uint32_t i = 0; i < kPieces; i++)
    if (!seen_piece[i]) return missing(kPieceNames[i]);
  return {};
}

Result<size_t> render_chat(const ChatTemplate& t, const ChatMessage* msgs, size_t n, bool generation_prompt,
                           char* out, size_t cap) {
  size_t at = 0;
  bool ok = append(out, cap, at, t.begin.text, t.begin.len);
  auto message = [&](ChatRole role, const char* text, size_t len) {
    const uint32_t r = uint32_t(role);
    ok = ok && append(out, cap, at, t.prefix[r].text, t.prefix[r].len) && append(out, cap, at, text, len) &&
         append(out, cap, at, t.suffix[r].text, t.suffix[r].len);
  };
  if (t.has_default_system && (n == 0 || msgs[0].role != ChatRole::System))
    message(ChatRole::System, t.default_system, t.default_system_len);
  for (size_t i = 0; i < n; i++) message(msgs[i].role, msgs[i].text, msgs[i].len);
  if (generation_prompt) ok = ok && append(out, cap, at, t.generation_prompt.text, t.generation_prompt.len);
  if (!ok) return Error::make(ErrorCode::NoMemory).str("chat: the conversation's text is longer than ").num(cap).str(" bytes");
  return at;
}

bool is_end_of_turn(const ChatTemplate& t, uint32_t id) {
  for (uint32_t i = 0; i < t.n_end_of_turn; i++)
    if (t.end_of_turn[i] == id) return true;
  return false;
}

}  // namespace llm
