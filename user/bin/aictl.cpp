// aictl: shows or changes how the AI service schedules requests.
//   aictl                      policy, aging bound, quota, queue
//   aictl policy fcfs|sjf|priority|fair
//   aictl aging MS             a request queued MS ms runs before younger ones
// Changing needs the console: run it in the foreground (not with &), or from
// /etc/rc; otherwise the kernel answers EPERM (docs/ai-service.md).
#include "kai.h"

// Indexed by KAI_AI_POLICY_* (<kai/ai_abi.h>).
static const char* const kPolicies[] = {"fcfs", "sjf", "priority", "fair"};
static constexpr int kNumPolicies = sizeof kPolicies / sizeof kPolicies[0];
static_assert(kNumPolicies == KAI_AI_POLICY_FAIR + 1, "one name per KAI_AI_POLICY_*");

static int usage(const char* bad) {
  if (bad) fprintf(2, "aictl: bad argument '%s'\n", bad);
  fprintf(2, "usage: aictl [policy fcfs|sjf|priority|fair] [aging MS]\n");
  return 2;
}

static int show() {
  kai_ai_info info;
  if (int r = ai_info(&info); r < 0) {
    printf("aictl: ai_info: %s\n", strerror(r));
    return 1;
  }
  const char* name = info.policy < kNumPolicies ? kPolicies[info.policy] : "?";
  printf("policy=%s aging_ms=%u max_per_process=%u workers=%u queued=%u running=%u\n", name,
         info.aging_ms, info.max_per_process, info.n_workers, info.queued, info.running);
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
    char* end;
    unsigned long ms = strtoul(argv[2], &end, 10);
    if (!*argv[2] || *end || ms < 1 || ms > 3600000) return usage(argv[2]);
    r = ai_control(KAI_AI_CTL_SET_AGING, ms);
  } else {
    return usage(argv[1]);
  }
  if (r < 0) {
    printf("aictl: %s %s: %s%s\n", argv[1], argv[2], strerror(int(r)),
           r == -KAI_EPERM ? " (only init or the console's foreground process may)" : "");
    return 1;
  }
  return show();
}
