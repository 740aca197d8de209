// aigrammar MODEL PREDICT PATTERN...: constrained and unconstrained requests
// together never change a token (tests/qemu/test_grammar_warm.py).
//
// One request per PATTERN ("-": no grammar; otherwise a --regex pattern),
// all with the prompt "1 2 3" and PREDICT tokens at most; request i is
// greedy when i is even and sampled (T 0.8, seed i + 1) when odd. First
// each runs alone, one after another; then all are submitted at once, so a
// worker batches them. Prints one line per request and run:
//   solo I finish=REASON IDS...
//   batch I finish=REASON IDS...
// and, for a request with a grammar, its kernel memory (kai_ai_result):
//   solo I grammar_bytes=N dfa_bytes=N mask_bytes=N masks=N
// The test compares the two and checks each output against its pattern on
// the host; this program judges nothing itself.
#include "kai.h"
#include "kai_ai.h"
#include "aitests.h"

namespace {

constexpr uint32_t kMaxRequests = 8;
constexpr uint32_t kMaxPredict = 64;

ai_grammar_choice grammars[kMaxRequests];
uint32_t out[kMaxPredict];

kai_ai_submit request_for(const char* model, uint32_t i, const char* pattern, uint32_t predict) {
  static const uint32_t prompt[3] = {1, 2, 3};
  kai_ai_submit req = ai_request(model, prompt, 3, predict);
  if (i % 2 == 1) {
    req.sampling.temperature_milli = 800;
    req.sampling.seed = i + 1;
  }
  if (strcmp(pattern, "-") != 0) {
    ai_grammar_choice& g = grammars[i];
    g.kind = KAI_AI_GRAMMAR_REGEX;
    g.len = uint32_t(strlen(pattern));
    memcpy(g.text, pattern, g.len);
    ai_apply_grammar(&req, &g);
  }
  return req;
}

void print_result(const char* run, uint32_t i, long got, const kai_ai_result& res) {
  if (got < 0) {
    printf("%s %u error=%s\n", run, i, strerror(got));
    return;
  }
  printf("%s %u finish=%s", run, i, ai_finish_name(res.finish_reason));
  for (long k = 0; k < got; k++) printf(" %u", out[k]);
  printf("\n");
  if (res.grammar_bytes != 0)
    printf("%s %u grammar_bytes=%u dfa_bytes=%u mask_bytes=%u masks=%u\n", run, i, res.grammar_bytes,
           res.grammar_dfa_bytes, res.grammar_mask_bytes, res.grammar_masks);
}

}  // namespace

int aigrammar_main(int argc, char** argv) {
  if (argc < 4 || uint32_t(argc - 3) > kMaxRequests) {
    fprintf(2, "usage: aigrammar MODEL PREDICT PATTERN... (1..%u patterns; '-': no grammar)\n", kMaxRequests);
    return 2;
  }
  const char* model = argv[1];
  uint32_t predict = number_option("aigrammar", "PREDICT", argv[2], 1, kMaxPredict);
  uint32_t n = uint32_t(argc - 3);
  for (uint32_t i = 0; i < n; i++) {
    kai_ai_submit req = request_for(model, i, argv[3 + i], predict);
    int64_t id = ai_submit(&req);
    kai_ai_result res{};
    long got = id < 0 ? id : ai_wait(id, out, kMaxPredict, &res);
    print_result("solo", i, got, res);
  }
  int64_t ids[kMaxRequests];
  for (uint32_t i = 0; i < n; i++) {
    kai_ai_submit req = request_for(model, i, argv[3 + i], predict);
    ids[i] = ai_submit(&req);
  }
  for (uint32_t i = 0; i < n; i++) {
    kai_ai_result res{};
    long got = ids[i] < 0 ? ids[i] : ai_wait(ids[i], out, kMaxPredict, &res);
    print_result("batch", i, got, res);
    if (got >= 0) printf("batch %u mean_batch_x100=%u\n", i, res.iterations ? res.batch_sum * 100 / res.iterations : 0);
  }
  return 0;
}
