// read_prompt_ids and friends: see kai_prompt.h.
#include "kai_prompt.h"
#include "kai.h"

namespace {

constexpr uint32_t kMaxPromptBytes = 64 * 1024;   // a 255-id prompt in text is under 3 KiB

bool is_separator(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ','; }

uint32_t load_u32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// Reads all of fd (at most cap - 1 bytes, NUL-terminated); the length, or
// -KAI_E2BIG if there is more, or a read error.
long read_all(int fd, char* buf, uint32_t cap) {
  uint32_t got = 0;
  for (;;) {
    if (got + 1 >= cap) {
      char extra;
      long r = read(fd, &extra, 1);
      if (r > 0) return -KAI_E2BIG;
      break;
    }
    long r = read(fd, buf + got, cap - 1 - got);
    if (r < 0) return r;
    if (r == 0) break;
    got += uint32_t(r);
  }
  buf[got] = 0;
  return got;
}

long parse_text(const char* prog, const char* where, char* text, uint32_t* ids, uint32_t cap) {
  uint32_t n = 0;
  char* p = text;
  for (;;) {
    while (is_separator(*p)) p++;
    if (!*p) break;
    char* word = p;
    while (*p && !is_separator(*p)) p++;
    char saved = *p;
    *p = 0;
    if (n == cap) {
      fprintf(2, "%s: %s: more than %u prompt tokens\n", prog, where, cap);
      return -KAI_E2BIG;
    }
    if (int e = parse_u32(word, 0xffffffffu, &ids[n]); e < 0) {
      fprintf(2, "%s: %s: prompt token %u: '%s' is not a token id (%s)\n", prog, where, n, word,
              e == -KAI_ERANGE ? "larger than 32 bits" : "not a number");
      return -KAI_EINVAL;
    }
    *p = saved;
    n++;
  }
  return n;
}

}  // namespace

extern "C" long read_prompt_ids(const char* prog, const char* path, uint32_t* ids, uint32_t cap) {
  const char* where = path ? path : "standard input";
  int fd = 0;
  if (path) {
    fd = open(path, O_RDONLY);
    if (fd < 0) {
      fprintf(2, "%s: %s: cannot open (%s)\n", prog, path, strerror(fd));
      return fd;
    }
  }
  char* buf = static_cast<char*>(malloc(kMaxPromptBytes));
  if (!buf) {
    if (path) close(fd);
    fprintf(2, "%s: %s: out of memory\n", prog, where);
    return -KAI_ENOMEM;
  }
  long len = read_all(fd, buf, kMaxPromptBytes);
  if (path) close(fd);
  long n;
  if (len < 0) {
    fprintf(2, "%s: %s: %s\n", prog, where,
            len == -KAI_E2BIG ? "larger than 64 KiB: not a prompt" : strerror(len));
    n = len;
  } else if (len >= 4 && len % 4 == 0 && load_u32(reinterpret_cast<uint8_t*>(buf)) == uint32_t(len / 4 - 1)) {
    // Binary (PMT.BIN): a count that matches the file's size exactly.
    uint32_t count = uint32_t(len / 4 - 1);
    if (count > cap) {
      fprintf(2, "%s: %s: more than %u prompt tokens\n", prog, where, cap);
      n = -KAI_E2BIG;
    } else {
      for (uint32_t i = 0; i < count; i++) ids[i] = load_u32(reinterpret_cast<uint8_t*>(buf) + 4 + 4 * i);
      n = count;
    }
  } else if (memchr(buf, 0, size_t(len)) != nullptr) {
    fprintf(2, "%s: %s: neither token ids in text nor a PMT.BIN-style binary prompt\n", prog, where);
    n = -KAI_EINVAL;
  } else {
    n = parse_text(prog, where, buf, ids, cap);
  }
  free(buf);
  if (n == 0) {
    fprintf(2, "%s: %s: empty prompt (no token ids)\n", prog, where);
    n = -KAI_EINVAL;
  }
  return n;
}

extern "C" bool prompt_ids_in_vocab(const char* prog, const uint32_t* ids, uint32_t n, const char* model,
                                    uint32_t vocab) {
  for (uint32_t i = 0; i < n; i++) {
    if (ids[i] >= vocab) {
      fprintf(2, "%s: prompt token %u: id %u out of range (model %s has %u tokens)\n", prog, i, ids[i], model,
              vocab);
      return false;
    }
  }
  return true;
}

extern "C" bool parse_prompt_token(const char* prog, uint32_t position, const char* arg, uint32_t* id) {
  if (int e = parse_u32(arg, 0xffffffffu, id); e < 0) {
    fprintf(2, "%s: prompt token %u: '%s' is not a token id (%s)\n", prog, position, arg,
            e == -KAI_ERANGE ? "larger than 32 bits" : "not a number");
    return false;
  }
  return true;
}
