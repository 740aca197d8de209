// Chat templates: how a conversation becomes one prompt (CHAT.TXT in a
// bundle, docs/model-format.md). A chat model was trained on conversations
// laid out in one fixed way, e.g. ChatML:
//
//   <|im_start|>system\nYou are helpful.<|im_end|>\n
//   <|im_start|>user\nHi!<|im_end|>\n
//   <|im_start|>assistant\n            <- the generation prompt: the model goes on from here
//
// Hugging Face models describe that layout as a Jinja program; the exporter
// (tools/chat_template.py) turns it into the declarative form below, which
// renders a conversation by concatenation only:
//
//   begin, then per message prefix[role] + content + suffix[role], then the
//   generation prompt; a default system message goes first when the
//   conversation has none.
//
//   parse_chat_template   CHAT.TXT's text -> ChatTemplate (checks every line)
//   render_chat           messages -> the prompt's text (encode it with llm::encode)
//   is_end_of_turn        does this generated id end the assistant's turn?
//   chat_unescape         CHAT.TXT's "\n" escapes -> bytes (also for test input)
//
// Fixed sizes, no allocation: a ChatTemplate lives in static storage.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "llm_error.h"

namespace llm {

enum class ChatRole : uint8_t { System = 0, User = 1, Assistant = 2 };
inline constexpr uint32_t kChatRoles = 3;
inline constexpr uint32_t kChatPieceMax = 128;    // bytes of begin, a prefix, a suffix, the generation prompt
inline constexpr uint32_t kChatSystemMax = 1024;  // bytes of the default system message
inline constexpr uint32_t kChatNameMax = 32;
inline constexpr uint32_t kChatMaxEndOfTurn = 4;

struct ChatPiece {
  uint32_t len = 0;
  char text[kChatPieceMax] = {};
};

struct ChatTemplate {
  char name[kChatNameMax] = {};      // the template's family, e.g. "chatml"
  ChatPiece begin;                   // once, at the start of every conversation
  ChatPiece prefix[kChatRoles];      // indexed by ChatRole
  ChatPiece suffix[kChatRoles];
  ChatPiece generation_prompt;       // after the last message, when the assistant answers next
  bool has_default_system = false;   // false: no system message unless the conversation has one
  uint32_t default_system_len = 0;
  char default_system[kChatSystemMax] = {};
  uint32_t n_end_of_turn = 0;        // 1..kChatMaxEndOfTurn ids
  uint32_t end_of_turn[kChatMaxEndOfTurn] = {};
};

struct ChatMessage {
  ChatRole role;
  const char* text;
  size_t len;
};

// Errors name the line: "CHAT.TXT: line 4: unknown field 'users_prefix'".
Result<void> parse_chat_template(const char* text, size_t len, ChatTemplate& out);

// The whole prompt's text of msgs (a system message among them replaces the
// default one only when it is msgs[0]) into out[0..cap). Length, or NoMemory.
Result<size_t> render_chat(const ChatTemplate& t, const ChatMessage* msgs, size_t n, bool generation_prompt,
                           char* out, size_t cap);

bool is_end_of_turn(const ChatTemplate& t, uint32_t id);

// "a\\nb" -> "a\nb" (escapes \n \r \t \\) into out (at least n bytes); the
// length, or -1 for an unknown escape or a lone backslash at the end.
long chat_unescape(const char* in, size_t n, char* out);

}  // namespace llm
