// aisched MODEL: checks the AI service's scheduling policies with one
// worker: while a blocker request keeps the worker busy, requests queue up,
// and the order in which they start (t_start) shows which policy chose.
//   fcfs: arrival order; sjf: least work first; priority: lowest number
//   first; aging: an overdue request runs before younger ones under any
//   policy; only the console's foreground process may change the policy.
// Must run in the foreground (it calls ai_control). Restores fcfs and the
// aging bound it found. One line per check, then "N passed, M failed".
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "aitests.h"

namespace {

int passed, failed;
char model[KAI_AI_MODEL_NAME_MAX];
const uint32_t kPrompt[] = {1, 2, 3, 4};
uint32_t out[KAI_AI_MAX_OUTPUT];

void check(bool ok, const char* name) {
  (ok ? passed : failed)++;
  printf("%s %s\n", ok ? "ok" : "FAIL", name);
}

int64_t submit(uint32_t predict, uint32_t priority = 0) {
  kai_ai_submit r = ai_request(model, kPrompt, 4, predict, 0, priority);
  return ai_submit(&r);
}

uint64_t started(int64_t id) {
  kai_ai_result res{};
  return ai_wait(id, out, KAI_AI_MAX_OUTPUT, &res) >= 0 ? res.t_start_ns : 0;
}

// Submits a blocker and returns once the worker is running it, so that the
// requests submitted next all wait in the queue together.
int64_t occupy_worker(uint32_t predict) {
  int64_t id = submit(predict);
  kai_ai_status st{};
  while (ai_query(id, &st) == 0 && st.state == KAI_AI_QUEUED) {}
  return id;
}

bool still_running(int64_t id) {
  kai_ai_status st{};
  return ai_query(id, &st) == 0 && st.state == KAI_AI_RUNNING;
}

enum class Order { FirstFirst, SecondFirst, Unknown };

// Two requests queued behind a blocker; which one started first. main()
// sets max_batch to 1, so the worker admits nobody while the blocker runs
// and the policy chooses between the two only when it ends, both waiting.
// (With room in the batch the worker would admit `first` at its next
// iteration, maybe before `second` arrives, and the order would show the
// timing, not the policy.) `gap_ticks` sleeps between the two submits.
// Unknown when the blocker ended before `second` was queued: then no
// choice between the two was made.
Order order_once(uint32_t predict_1, uint32_t prio_1, uint32_t predict_2, uint32_t prio_2,
                 uint32_t blocker, int gap_ticks) {
  int64_t b = occupy_worker(blocker);
  int64_t first = submit(predict_1, prio_1);
  if (gap_ticks) sleep(gap_ticks);
  int64_t second = submit(predict_2, prio_2);
  bool together = still_running(b);
  started(b);
  uint64_t t1 = started(first), t2 = started(second);
  if (!together || !t1 || !t2) return Order::Unknown;
  return t2 < t1 ? Order::SecondFirst : Order::FirstFirst;
}

// order_once() until the order is known. A host that stalls this program
// until the blocker is done leaves it unknown; a check that gets Unknown fails.
Order queued_order(uint32_t predict_1, uint32_t prio_1, uint32_t predict_2, uint32_t prio_2,
                   uint32_t blocker, int gap_ticks = 0) {
  for (int attempt = 0; attempt < 5; attempt++) {
    Order o = order_once(predict_1, prio_1, predict_2, prio_2, blocker, gap_ticks);
    if (o != Order::Unknown) return o;
    printf("aisched: the blocker ended before both requests were queued; again\n");
  }
  return Order::Unknown;
}

}  // namespace

int aisched_main(int argc, char** argv) {
  const char* want = nullptr;
  CommandLine args("aisched", "aisched MODEL", argc, argv);
  while (args.next())
    if (!args.positional(&want)) args.unknown();
  if (want == nullptr) {
    fprintf(2, "usage: aisched MODEL\n");
    return 2;
  }
  kai_ai_model_info mi;
  if (ai_open_model("aisched", want, 300, model, &mi) < 0) return 1;
  kai_ai_info info;
  ai_info(&info);
  if (info.n_workers != 1) {
    printf("aisched: needs exactly one worker (boot with ai.workers=1); skipped\n");
    return 0;
  }
  uint32_t aging_before = info.aging_ms, batch_before = info.max_batch;
  uint32_t longest = mi.runtime_seq_len - 4 < 64 ? mi.runtime_seq_len - 4 : 64;
  // The blocker must outlast the two submits; a long request of the model.
  uint32_t blocker = longest;

  check(ai_control(KAI_AI_CTL_SET_POLICY, KAI_AI_POLICY_FCFS) == 0, "the foreground process may set the policy");
  int pid = fork();
  if (pid == 0) exit(ai_control(KAI_AI_CTL_SET_POLICY, KAI_AI_POLICY_SJF) == -KAI_EPERM ? 0 : 1);
  int status = -1;
  wait(&status);
  check(status == 0, "a process that does not hold the console may not (EPERM)");
  check(ai_control(KAI_AI_CTL_SET_POLICY, KAI_AI_POLICY_FAIR + 1) == -KAI_EINVAL && ai_control(99, 0) == -KAI_EINVAL,
        "unknown policy or command: EINVAL");

  ai_control(KAI_AI_CTL_SET_MAX_BATCH, 1);   // see order_once()
  check(Order::FirstFirst == queued_order(longest, 0, 2, 0, blocker), "fcfs: a long request queued first runs first");
  ai_control(KAI_AI_CTL_SET_POLICY, KAI_AI_POLICY_SJF);
  check(Order::SecondFirst == queued_order(longest, 0, 2, 0, blocker), "sjf: a short request overtakes a long one");
  check(Order::FirstFirst == queued_order(2, 0, longest, 0, blocker), "sjf: ... but a long one does not overtake a short one");
  ai_control(KAI_AI_CTL_SET_POLICY, KAI_AI_POLICY_PRIORITY);
  check(Order::SecondFirst == queued_order(2, 5, 2, 0, blocker), "priority: priority 0 overtakes priority 5");
  check(Order::FirstFirst == queued_order(2, 0, 2, 0, blocker), "priority: equal priorities run in arrival order");
  // Aging: with a 1 ms bound and a tick (10 ms) between the two submits,
  // the long one has waited past the bound when the worker frees up, so it
  // runs first although SJF alone would pick the short one.
  ai_control(KAI_AI_CTL_SET_POLICY, KAI_AI_POLICY_SJF);
  ai_control(KAI_AI_CTL_SET_AGING, 1);
  check(Order::FirstFirst == queued_order(longest, 0, 2, 0, blocker, 1), "aging: an overdue long request runs before a younger short one");
  ai_control(KAI_AI_CTL_SET_AGING, aging_before);
  ai_control(KAI_AI_CTL_SET_MAX_BATCH, batch_before);
  ai_control(KAI_AI_CTL_SET_POLICY, KAI_AI_POLICY_FCFS);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
