// aihol [--model M] [--clients K] [--predict N] [--long L] [--int8]:
// head-of-line blocking, measured with the kernel's own clock.
//
// K clients each stream one request (a 4-token prompt, N tokens) and record
// when every token was published (the kernel's times from ai_read). While they
// are generating, a long request arrives: an L-token prompt (default 255)
// that needs one token. With chunked prefill its prompt is spread over
// several iterations and the running requests keep getting tokens; with an
// iteration budget as large as the prompt, everyone waits for the whole
// prefill. The program prints the running requests' gaps between two tokens
// outside the long prefill (their normal TPOT) and during it:
//   aihol: solo_p50_us=A during_p50_us=B during_p95_us=C during_max_us=D
//          gaps_during=G long_prefill_us=P budget=T ratio_p95=R
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "kai_stats.h"

namespace {

constexpr uint32_t kMaxClients = 8;
constexpr uint32_t kMaxTokens = 256;

struct Options {
  char model[KAI_AI_MODEL_NAME_MAX] = "";
  uint32_t clients = 4, predict = 48, long_len = 255, flags = 0;
};

// A streaming client: writes the publication time of each of its tokens
// (one uint64 each, then a 0) into its pipe.
[[noreturn]] void client(const Options& o, uint32_t i, int fd) {
  static const uint32_t prompt[4] = {1, 2, 3, 4};
  uint32_t p[4];
  for (uint32_t k = 0; k < 4; k++) p[k] = prompt[k] + i;
  kai_ai_submit r = ai_request(o.model, p, 4, o.predict, o.flags);
  int64_t id = ai_submit(&r);
  if (id < 0) exit(1);
  static uint32_t out[kMaxTokens];
  static uint64_t times[kMaxTokens];
  uint32_t from = 0;
  for (;;) {
    long k = ai_read(id, from, out + from, o.predict - from, nullptr, times + from);
    if (k <= 0) break;
    write(fd, times + from, uint64_t(k) * sizeof(uint64_t));
    from += uint32_t(k);
  }
  uint64_t end = 0;
  write(fd, &end, sizeof end);
  ai_wait(id, out, kMaxTokens, nullptr);
  exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CommandLine args("aihol", "aihol [--model M] [--clients K] [--predict N] [--long L] [--int8]", argc, argv);
  while (args.next()) {
    if (args.model(o.model) || args.number("--clients", 1, kMaxClients, &o.clients) ||
        args.number("--predict", 1, kMaxTokens - 1, &o.predict) ||
        args.number("--long", 1, KAI_AI_MAX_PROMPT, &o.long_len) || args.flag_bits("--int8", KAI_AI_INT8, &o.flags))
      continue;
    args.unknown();
  }
  char name[KAI_AI_MODEL_NAME_MAX];
  kai_ai_model_info mi{};
  if (ai_open_model("aihol", o.model, 300, name, &mi) < 0) return 1;
  strlcpy(o.model, name, sizeof o.model);
  if (o.long_len + 1 > mi.runtime_seq_len) o.long_len = mi.runtime_seq_len - 1;
  if (o.predict + 4 > mi.runtime_seq_len) o.predict = mi.runtime_seq_len - 4;

  int fds[kMaxClients];
  for (uint32_t i = 0; i < o.clients; i++) {
    int p[2];
    if (pipe(p) < 0) return 1;
    if (fork() == 0) {
      close(p[0]);
      client(o, i, p[1]);
    }
    close(p[1]);
    fds[i] = p[0];
  }
  // Let the clients reach their decode phase: all admitted (running),
  // then six more iterations of the engine, so that each has a few gaps
  // between tokens to compare with. Then the long prompt.
  static kai_ai_info info;
  for (int tick = 0; tick < 30000; tick++) {
    if (ai_info(&info) == 0 && info.running >= o.clients) break;
    sleep(1);
  }
  uint64_t it0 = info.iterations;
  for (int tick = 0; tick < 30000 && info.iterations < it0 + 6; tick++) {
    sleep(1);
    ai_info(&info);
  }
  static uint32_t long_prompt[KAI_AI_MAX_PROMPT];
  for (uint32_t t = 0; t < o.long_len; t++) long_prompt[t] = (t * 11 + 5) % mi.vocab_size;
  kai_ai_submit lr = ai_request(o.model, long_prompt, o.long_len, 1, o.flags);
  kai_ai_result long_res{};
  uint32_t one[1];
  int64_t long_id = ai_submit(&lr);
  if (long_id < 0 || ai_wait(long_id, one, 1, &long_res) < 0) {
    fprintf(2, "aihol: the long request failed\n");
    return 1;
  }
  uint64_t w0 = long_res.t_start_ns, w1 = long_res.t_first_token_ns;

  // Gaps between two consecutive tokens of one client: "during" when the
  // later token came while the long prompt was being prefilled.
  static uint64_t solo[kMaxClients * kMaxTokens], during[kMaxClients * kMaxTokens];
  uint32_t n_solo = 0, n_during = 0;
  for (uint32_t i = 0; i < o.clients; i++) {
    uint64_t prev = 0, t;
    while (read(fds[i], &t, sizeof t) == sizeof t && t != 0) {
      if (prev && t > prev) {
        bool in_window = t > w0 && prev < w1;
        (in_window ? during[n_during++] : solo[n_solo++]) = t - prev;
      }
      prev = t;
    }
    close(fds[i]);
  }
  for (uint32_t i = 0; i < o.clients; i++) wait(nullptr);
  ai_info(&info);
  sort_u64(solo, n_solo);
  sort_u64(during, n_during);
  uint64_t solo_p50 = percentile(solo, n_solo, 50);
  uint64_t d_max = n_during ? during[n_during - 1] : 0;
  uint64_t d_p50 = percentile(during, n_during, 50), d_p95 = percentile(during, n_during, 95);
  uint64_t ratio_x100 = solo_p50 ? d_p95 * 100 / solo_p50 : 0;
  printf("aihol: solo_p50_us=%lu during_p50_us=%lu during_p95_us=%lu during_max_us=%lu gaps_during=%u "
         "long_prefill_us=%lu budget=%u ratio_p95=%lu.%02lu\n",
         (unsigned long)(solo_p50 / 1000), (unsigned long)(d_p50 / 1000), (unsigned long)(d_p95 / 1000),
         (unsigned long)(d_max / 1000), n_during, (unsigned long)((w1 - w0) / 1000), info.budget,
         (unsigned long)(ratio_x100 / 100), (unsigned long)(ratio_x100 % 100));
  return 0;
}
