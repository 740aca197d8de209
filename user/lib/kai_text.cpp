// KaiText: TOK.BIN from the file system (see kai_text.h).
#include "kai_text.h"
#include "kai.h"
#include "kai_ai.h"
#include "kai_file.h"

namespace {

void set_err(char* err, size_t cap, const char* a, const char* b = "", const char* c = "") {
  if (cap) snprintf(err, cap, "%s%s%s", a, b, c);
}

int write_all(int fd, const char* p, size_t n) {
  while (n) {
    long w = write(fd, p, n);
    if (w < 0) return int(w);
    p += w;
    n -= size_t(w);
  }
  return 0;
}

}  // namespace

KaiText::~KaiText() { free(file_); }

int KaiText::open(const char* model, char* err, size_t errcap) {
  char path[160];
  bool is_dir = strchr(model, '/') != nullptr;
  if (snprintf(path, sizeof path, "%s%s/TOK.BIN", is_dir ? "" : "/AI/", model) >= int(sizeof path)) {
    set_err(err, errcap, "model name too long: ", model);
    return -KAI_ENAMETOOLONG;
  }
  size_t got = 0;
  int r = 0;
  uint8_t* buf = read_whole_file(path, &got, &r);
  if (!buf) {
    struct kai_stat dir_st;
    char dir[160];
    snprintf(dir, sizeof dir, "%s%s", is_dir ? "" : "/AI/", model);
    if (r == -KAI_ENOENT && stat(dir, &dir_st) < 0)
      set_err(err, errcap, "no model ", model, is_dir ? " (no such directory)" : " under /AI");
    else if (r == -KAI_ENOENT) set_err(err, errcap, model, " has no TOK.BIN (no tokenizer: use token ids)");
    else set_err(err, errcap, path, ": ", r == -KAI_EIO ? "short read" : r == -KAI_ENOMEM ? "out of memory" : strerror(r));
    return r;
  }
  auto loaded = llm::load_tokenizer(buf, got);
  if (loaded.is_error()) {
    free(buf);
    set_err(err, errcap, path, ": ", loaded.error().message);
    return -KAI_EINVAL;
  }
  free(file_);
  file_ = buf;
  size_ = got;
  tok_ = loaded.value();
  return 0;
}

long KaiText::encode(const char* text, uint32_t* ids, uint32_t cap, bool prompt, char* err, size_t errcap) const {
  size_t len = strlen(text);
  auto r = prompt ? llm::encode_prompt(tok_, text, len, ids, cap) : llm::encode(tok_, text, len, ids, cap);
  if (r.is_error()) {
    set_err(err, errcap, r.error().message);
    return r.error().code == llm::ErrorCode::NoMemory ? -KAI_E2BIG : -KAI_EINVAL;
  }
  return long(r.value());
}

int kai_text_add_stops(const char* prog, const KaiText& t, struct ai_generation* g) {
  for (uint32_t k = 0; k < g->n_stop_text; k++) {
    const char* s = g->stop_text[k];
    uint32_t ids[KAI_AI_MAX_STOP_TOKENS];
    char err[96] = "no tokens";
    long n = t.encode(s, ids, KAI_AI_MAX_STOP_TOKENS, false, err, sizeof err);
    if (n == -KAI_E2BIG) snprintf(err, sizeof err, "more than %d tokens", KAI_AI_MAX_STOP_TOKENS);
    if (n <= 0 || !ai_add_stop_ids(g, ids, uint32_t(n))) {
      fprintf(2, "%s: --stop-text '%s': %s\n", prog, s, n <= 0 ? err : "too many stop sequences");
      return -1;
    }
  }
  g->n_stop_text = 0;
  return 0;
}

int kai_text_put(llm::Decoder& d, uint32_t id, int fd) {
  char buf[llm::Decoder::kMaxPushBytes];
  auto r = d.push(id, buf, sizeof buf);
  if (r.is_error()) return -KAI_EINVAL;
  return write_all(fd, buf, r.value());
}

int kai_text_end(llm::Decoder& d, int fd) {
  char buf[8];
  auto r = d.finish(buf, sizeof buf);
  if (r.is_error()) return -KAI_EINVAL;
  return write_all(fd, buf, r.value());
}
