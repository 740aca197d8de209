// aictl: shows or changes how the AI service schedules requests.
//   aictl                      policy, aging bound, quota, queue, batch, harts
//   aictl policy fcfs|sjf|priority|fair
//   aictl aging MS             a request queued MS ms runs before younger ones
//   aictl max_batch N          requests one worker runs together (1..16, at most ai.budget)
//   aictl harts H              harts each worker's row team may use (1..ai.harts),
//                              from its next forward pass: one hart against
//                              two, in one boot
// Changing needs the console: run it in the foreground (not with &), or from
// /etc/rc; otherwise the kernel answers EPERM (docs/ai-service.md).
#include "kai.h"

// Indexed by KAI_AI_POLICY_* (<kai/ai_abi.h>).
static const char* const kPolicies[] = {"fcfs", "sjf", "priority", "fair"};
static constexpr int kNumPolicies = sizeof kPolicies / sizeof kPolicies[0];
static_assert(kNumPolicies == KAI_AI_POLICY_FAIR + 1, "one name per KAI_AI_POLICY_*");

static int usage(const char* bad) {
  if (bad) fprintf(2, "aictl: bad argument '%s'\n", bad);
  fprintf(2, "usage: aictl [policy fcfs|sjf|priority|fair | aging MS | max_batch N | harts H]\n");
  return 2;
}

// A whole decimal number in lo..hi.
static bool number(const char* s, unsigned long lo, unsigned long hi, unsigned long* out) {
  char* end;
  *out = strtoul(s, &end, 10);
  return *s && !*end && *out >= lo && *out <= hi;
}

static int show() {
  kai_ai_info info;
  if (int r = ai_info(&info); r < 0) {
    printf("aictl: ai_info: %s\n", strerror(r));
    return 1;
  }
  const char* name = info.policy < kNumPolicies ? kPolicies[info.policy] : "?";
  printf("policy=%s aging_ms=%u max_per_process=%u workers=%u queued=%u running=%u max_batch=%u harts=%u\n",
         name, info.aging_ms, info.max_per_process, info.n_workers, info.queued, info.running, info.max_batch,
         info.harts);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 1) return show();
  if (argc != 3) return usage(argc > 3 ? argv[3] : nullptr);
  long r;
  if (!strcmp(argv[1], "policy")) {
    int p = -1;
    for (int i = 0; i < kNumPolicies; i++)
      if (!strcmp(argv[2], kPolicies[i])) p = i;
    if (p < 0) return usage(argv[2]);
    r = ai_control(KAI_AI_CTL_SET_POLICY, uint64_t(p));
  } else if (!strcmp(argv[1], "aging")) {
    unsigned long ms;
    if (!number(argv[2], 1, 3600000, &ms)) return usage(argv[2]);
    r = ai_control(KAI_AI_CTL_SET_AGING, ms);
  } else if (!strcmp(argv[1], "max_batch")) {
    unsigned long n;
    if (!number(argv[2], 1, 16, &n)) return usage(argv[2]);
    r = ai_control(KAI_AI_CTL_SET_MAX_BATCH, n);
  } else if (!strcmp(argv[1], "harts")) {
    unsigned long n;
    if (!number(argv[2], 1, 64, &n)) return usage(argv[2]);
    r = ai_control(KAI_AI_CTL_SET_HARTS, n);
  } else {
    return usage(argv[1]);
  }
  if (r < 0) {
    printf("aictl: %s %s: %s%s\n", argv[1], argv[2], strerror(int(r)),
           r == -KAI_EPERM   ? " (only init or the console's foreground process may)"
           : r == -KAI_EINVAL ? " (out of range for this boot: aistat shows ai.harts and ai.budget)"
                              : "");
    return 1;
  }
  return show();
}
