// toktool: the runtime's tokenizer (lib/llm_tokenizer.cpp) on the host, so
// tests can compare it with tools/tokenizer.py on any text.
//
//   toktool TOK.BIN info               kind, vocabulary, BOS, EOS ids
//   toktool TOK.BIN encode TEXT|-      ids of TEXT (or of stdin), no BOS
//   toktool TOK.BIN prompt TEXT|-      ids with BOS when the model wants one
//   toktool TOK.BIN decode ID...       the text of the ids
//   toktool TOK.BIN stream ID...       the Decoder's output per token, one hex line each
//
// Exit status 1 with "toktool: MESSAGE" on stderr for any error.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "llm_tokenizer.h"

namespace {

int fail(const char* what) {
  fprintf(stderr, "toktool: %s\n", what);
  return 1;
}

bool read_file(const char* path, std::vector<uint8_t>& out) {
  FILE* f = fopen(path, "rb");
  if (!f) return false;
  uint8_t buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  fclose(f);
  return true;
}

std::string text_arg(const char* arg) {
  if (strcmp(arg, "-") != 0) return arg;
  std::string s;
  int c;
  while ((c = getchar()) != EOF) s.push_back(char(c));
  return s;
}

bool parse_ids(char** argv, int argc, std::vector<uint32_t>& ids) {
  for (int i = 0; i < argc; i++) {
    char* end;
    unsigned long v = strtoul(argv[i], &end, 10);
    if (*end || end == argv[i] || v > 0xFFFFFFFFul) return false;
    ids.push_back(uint32_t(v));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return fail("usage: toktool TOK.BIN info|encode|prompt|decode|stream ...");
  std::vector<uint8_t> file;
  if (!read_file(argv[1], file)) return fail("cannot read the TOK.BIN file");
  auto loaded = llm::load_tokenizer(file.data(), file.size());
  if (loaded.is_error()) return fail(loaded.error().message);
  const llm::Tokenizer& t = loaded.value();
  std::string cmd = argv[2];

  if (cmd == "info") {
    uint32_t eos[llm::kMaxEos];
    uint32_t n = llm::eos_ids(t, eos, llm::kMaxEos);
    printf("kind %u vocab %u bos %d adds_bos %d eos", unsigned(t.kind), t.vocab_size,
           t.bos_id == llm::kNoToken ? -1 : int(t.bos_id), int(llm::adds_bos(t)));
    for (uint32_t i = 0; i < n; i++) printf(" %u", eos[i]);
    uint32_t from_header[llm::kMaxEos];
    auto h = llm::eos_ids_from_header(file.data(), file.size(), from_header, llm::kMaxEos);
    if (h.is_error() || h.value() != n) return fail("eos_ids_from_header disagrees with eos_ids");
    printf("\n");
    return 0;
  }
  if ((cmd == "encode" || cmd == "prompt") && argc == 4) {
    std::string text = text_arg(argv[3]);
    std::vector<uint32_t> ids(text.size() + 2);
    auto r = cmd == "encode" ? llm::encode(t, text.data(), text.size(), ids.data(), uint32_t(ids.size()))
                             : llm::encode_prompt(t, text.data(), text.size(), ids.data(), uint32_t(ids.size()));
    if (r.is_error()) return fail(r.error().message);
    for (uint32_t i = 0; i < r.value(); i++) printf(i ? " %u" : "%u", ids[i]);
    printf("\n");
    return 0;
  }
  if (cmd == "decode" || cmd == "stream") {
    std::vector<uint32_t> ids;
    if (!parse_ids(argv + 3, argc - 3, ids)) return fail("ids must be decimal numbers");
    if (cmd == "decode") {
      std::vector<char> out(ids.size() * llm::Decoder::kMaxPushBytes + 8);
      auto r = llm::decode(t, ids.data(), ids.size(), out.data(), out.size());
      if (r.is_error()) return fail(r.error().message);
      fwrite(out.data(), 1, r.value(), stdout);
      printf("\n");
      return 0;
    }
    llm::Decoder d(t);
    char buf[llm::Decoder::kMaxPushBytes];
    auto hex_line = [](const char* p, size_t n) {
      for (size_t i = 0; i < n; i++) printf("%02x", unsigned(uint8_t(p[i])));
      printf("\n");
    };
    for (uint32_t id : ids) {
      auto r = d.push(id, buf, sizeof buf);
      if (r.is_error()) return fail(r.error().message);
      hex_line(buf, r.value());
    }
    auto r = d.finish(buf, sizeof buf);
    if (r.is_error()) return fail(r.error().message);
    hex_line(buf, r.value());
    return 0;
  }
  return fail("unknown command or wrong arguments (info | encode TEXT | prompt TEXT | decode ID... | stream ID...)");
}
