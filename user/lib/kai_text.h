// Text in and out of user programs: a model's tokenizer (TOK.BIN in its
// bundle directory, docs/model-format.md) loaded from the file system, with
// lib/llm_tokenizer.h doing the work. For `tok`, and for `ai --text` /
// `llmrun --text`, which encode a prompt and stream the answer's text.
//
//   KaiText text;
//   char err[128];
//   if (int r = text.open("STORIES", err, sizeof err); r < 0) { ... err says why ... }
//   uint32_t ids[256];
//   long n = text.encode("Once upon a time", ids, 256, /*prompt=*/true, err, sizeof err);
//   llm::Decoder d = text.decoder();           // one per stream of tokens
//   kai_text_put(d, id, 1);                    // for each token as it arrives
//   kai_text_end(d, 1);                        // flushes a split character
//
// A bundle without TOK.BIN (every course bundle) gives -KAI_ENOENT and the
// message "MODEL has no TOK.BIN (no tokenizer: use token ids)".
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "llm_tokenizer.h"

class KaiText {
 public:
  KaiText() = default;
  KaiText(const KaiText&) = delete;
  KaiText& operator=(const KaiText&) = delete;
  ~KaiText();

  // model: a name under /AI ("STORIES" -> /AI/STORIES/TOK.BIN) or a bundle
  // directory path ("/AI/SMOL"). 0, or -KAI_Exxx with a message in err.
  int open(const char* model, char* err, size_t errcap);
  bool is_open() const { return file_ != nullptr; }
  const llm::Tokenizer& tokenizer() const { return tok_; }

  // The ids of text (NUL-terminated) into ids[0..cap); prompt=true adds the
  // BOS id when the model's prompts carry one. Count, or -KAI_EINVAL /
  // -KAI_E2BIG (cap too small) with a message in err.
  long encode(const char* text, uint32_t* ids, uint32_t cap, bool prompt, char* err, size_t errcap) const;
  llm::Decoder decoder(llm::DecodeOptions opt = {}) const { return llm::Decoder(tok_, opt); }

 private:
  uint8_t* file_ = nullptr;
  size_t size_ = 0;
  llm::Tokenizer tok_;
};

// --stop-text: encodes each of g's recorded stop texts with t (no BOS) and
// appends it to g's stop sequences, exactly as --stop with those ids would.
// 0, or -1 after printing why on stderr ("PROG: --stop-text 'X': ...").
struct ai_generation;
int kai_text_add_stops(const char* prog, const KaiText& t, struct ai_generation* g);

// Writes token id's text to fd through the decoder (whole characters only).
// 0, or -KAI_EINVAL for an id outside the vocabulary, or a write error.
int kai_text_put(llm::Decoder& d, uint32_t id, int fd);
// Writes what the decoder still holds (an incomplete character as U+FFFD).
int kai_text_end(llm::Decoder& d, int fd);
