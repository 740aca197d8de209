// tok: a model's tokenizer (its bundle's TOK.BIN) from the shell.
//
//   tok MODEL info                 kind, vocabulary size, BOS, EOS ids
//   tok MODEL encode [-x] TEXT...  the ids of TEXT (words joined by one space), no BOS
//   tok MODEL prompt [-x] TEXT...  the same with BOS when the model's prompts carry one
//   tok MODEL decode [-x] ID...    the text of the ids
//
// -x: TEXT is given, or the text printed, as hex bytes (newlines, tabs and
// any UTF-8 through a console line). MODEL is a name under /AI or a path.
#include "kai.h"
#include "kai_text.h"

namespace {

constexpr uint32_t kMaxIds = 4096;
constexpr size_t kMaxText = 4096;
uint32_t g_ids[kMaxIds];
char g_text[kMaxText + 1];

int usage() {
  fprintf(2, "usage: tok MODEL info | encode [-x] TEXT... | prompt [-x] TEXT... | decode [-x] ID...\n");
  return 2;
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Joins argv[0..n) with single spaces into g_text, decoding hex if asked.
bool gather_text(char** argv, int n, bool hex) {
  size_t len = 0;
  for (int i = 0; i < n; i++) {
    const char* s = argv[i];
    if (i && !hex) {
      if (len == kMaxText) return false;
      g_text[len++] = ' ';
    }
    for (size_t k = 0; s[k]; k += hex ? 2 : 1) {
      if (len == kMaxText) return false;
      if (hex) {
        int hi = hexval(s[k]), lo = s[k + 1] ? hexval(s[k + 1]) : -1;
        if (hi < 0 || lo < 0) {
          fprintf(2, "tok: '%s' is not hex bytes\n", s);
          return false;
        }
        g_text[len++] = char(hi << 4 | lo);
      } else {
        g_text[len++] = s[k];
      }
    }
  }
  g_text[len] = 0;
  if (strlen(g_text) != len) {
    fprintf(2, "tok: text contains a NUL byte\n");
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const char* model = argv[1];
  const char* cmd = argv[2];
  int rest = 3;
  bool hex = argc > 3 && strcmp(argv[3], "-x") == 0;
  if (hex) rest++;
  // The command line is checked before the model is opened.
  bool known = false;
  for (const char* c : {"info", "encode", "prompt", "decode"}) known |= strcmp(cmd, c) == 0;
  if (!known) {
    fprintf(2, "tok: unknown command '%s'\n", cmd);
    return usage();
  }
  if (strcmp(cmd, "info") == 0 && argc > 3) {
    fprintf(2, "tok: unexpected argument '%s' (info takes none)\n", argv[3]);
    return 2;
  }
  if (strcmp(cmd, "decode") == 0 && rest == argc) {
    fprintf(2, "tok: decode: no token ids\n");
    return 2;
  }
  KaiText text;
  char err[160];
  if (text.open(model, err, sizeof err) < 0) {
    fprintf(2, "tok: %s\n", err);
    return 1;
  }
  const llm::Tokenizer& t = text.tokenizer();

  if (strcmp(cmd, "info") == 0) {
    uint32_t eos[llm::kMaxEos];
    uint32_t n = llm::eos_ids(t, eos, llm::kMaxEos);
    printf("kind %u vocab %u bos %d adds_bos %d eos", unsigned(t.kind), t.vocab_size,
           t.bos_id == llm::kNoToken ? -1 : int(t.bos_id), int(llm::adds_bos(t)));
    for (uint32_t i = 0; i < n; i++) printf(" %u", eos[i]);
    printf("\n");
    return 0;
  }
  if (strcmp(cmd, "encode") == 0 || strcmp(cmd, "prompt") == 0) {
    if (!gather_text(argv + rest, argc - rest, hex)) {
      fprintf(2, "tok: text too long or malformed (at most %u bytes)\n", unsigned(kMaxText));
      return 1;
    }
    long n = text.encode(g_text, g_ids, kMaxIds, cmd[0] == 'p', err, sizeof err);
    if (n < 0) {
      fprintf(2, "tok: %s\n", err);
      return 1;
    }
    for (long i = 0; i < n; i++) printf(i ? " %u" : "%u", g_ids[i]);
    printf("\n");
    return 0;
  }
  if (strcmp(cmd, "decode") == 0) {
    llm::Decoder d = text.decoder();
    char buf[llm::Decoder::kMaxPushBytes];
    for (int i = rest; i < argc; i++) {
      uint32_t id;
      if (parse_u32(argv[i], 0xFFFFFFFEu, &id) < 0) {
        fprintf(2, "tok: token %d: '%s' is not a token id\n", i - rest, argv[i]);
        return 2;
      }
      auto r = d.push(id, buf, sizeof buf);
      if (r.is_error()) {
        fprintf(2, "tok: %s\n", r.error().message);
        return 1;
      }
      size_t n = r.value();
      if (i == argc - 1) {   // flush a split character at the end
        auto tail = d.finish(buf + n, sizeof buf - n);
        if (!tail.is_error()) n += tail.value();
      }
      if (hex) {
        for (size_t k = 0; k < n; k++) printf("%02x", unsigned(uint8_t(buf[k])));
      } else {
        write(1, buf, n);
      }
    }
    printf("\n");
    return 0;
  }
  return usage();
}
