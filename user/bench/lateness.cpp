// lateness [--seconds S] [--load MODEL] [--int8] [--predict N]: how late does
// a process wake up when it asks to sleep one timer tick (10 ms), while the
// AI service computes? With --load, a child submits requests to MODEL back
// to back (one at a time) for the whole measurement.
//
// Each sample: t0 = clock_ns(); sleep(1); lateness = clock_ns() - t0 - 10 ms.
// sleep(1) ends at the first timer interrupt after the 10 ms deadline, so up
// to one tick of lateness is the clock's granularity, not unfairness. A kernel
// thread that kept its hart (computing with interrupts off, or never
// preempted) would show up as lateness of whole requests: seconds.
//
// Prints one line:
//   lateness: samples=N max_us=A p99_us=B mean_us=C over_2_ticks=K requests=R
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"

namespace {

constexpr uint64_t kTickNs = 10000000;
constexpr uint32_t kMaxSamples = 60000;
uint32_t lateness_us[kMaxSamples];

int cmp_u32(const void* a, const void* b) {
  uint32_t x = *static_cast<const uint32_t*>(a), y = *static_cast<const uint32_t*>(b);
  return x < y ? -1 : x > y;
}

// The load: requests one after the other until killed. Its exit status is
// the number of requests completed (at most 255 counted).
[[noreturn]] void load_loop(const char* model, bool int8, uint32_t predict, int report_fd) {
  static const uint32_t prompt[] = {1, 2, 3, 4, 5};
  static uint32_t out[4096];
  uint32_t done = 0;
  for (;;) {
    kai_ai_submit req = ai_request(model, prompt, 5, predict, int8 ? KAI_AI_INT8 : 0);
    int64_t id = ai_submit(&req);
    if (id < 0) {
      printf("lateness: load submit failed: %s\n", strerror(static_cast<int>(id)));
      exit(1);
    }
    if (ai_wait(id, out, 4096, nullptr) < 0) exit(1);
    done++;
    write(report_fd, "r", 1);   // one byte per completed request
  }
}


}  // namespace

int main(int argc, char** argv) {
  uint32_t seconds = 10, predict = 8;
  const char* model = nullptr;
  bool int8 = false;
  CommandLine args("lateness", "lateness [--seconds S] [--load MODEL] [--int8] [--predict N]", argc, argv);
  while (args.next()) {
    if (args.number("--seconds", 1, 3600, &seconds) || args.number("--predict", 1, KAI_AI_MAX_OUTPUT, &predict) ||
        args.model(&model, "--load") || args.flag("--int8", &int8))
      continue;
    args.unknown();
  }
  int fds[2] = {-1, -1};
  int loader = -1;
  if (model) {
    kai_ai_model_info mi;
    char name[KAI_AI_MODEL_NAME_MAX];
    if (ai_open_model("lateness", model, 300, name, &mi) < 0) return 1;
    pipe(fds);
    loader = fork();
    if (loader == 0) {
      close(fds[0]);
      load_loop(model, int8, predict, fds[1]);
    }
    close(fds[1]);
    sleep(20);   // let the first request get going
  }
  uint64_t end = clock_ns() + uint64_t(seconds) * 1000000000ull;
  uint32_t n = 0;
  uint64_t sum = 0;
  while (clock_ns() < end && n < kMaxSamples) {
    uint64_t t0 = clock_ns();
    sleep(1);
    uint64_t slept = clock_ns() - t0;
    uint64_t late = slept > kTickNs ? slept - kTickNs : 0;
    lateness_us[n++] = static_cast<uint32_t>(late / 1000 > 0xffffffffull ? 0xffffffffull : late / 1000);
    sum += late / 1000;
  }
  uint32_t requests = 0;
  if (loader > 0) {
    kill(loader);
    wait(nullptr);
    char buf[64];
    long got;
    while ((got = read(fds[0], buf, sizeof buf)) > 0) requests += static_cast<uint32_t>(got);
    close(fds[0]);
  }
  qsort(lateness_us, n, sizeof(uint32_t), cmp_u32);
  uint32_t over = 0;
  for (uint32_t i = 0; i < n; i++) over += lateness_us[i] > 2 * kTickNs / 1000;
  printf("lateness: samples=%u max_us=%u p99_us=%u mean_us=%lu over_2_ticks=%u requests=%u\n", n,
         n ? lateness_us[n - 1] : 0, n ? lateness_us[(n * 99) / 100] : 0, n ? sum / n : 0, over,
         requests);
  return 0;
}
