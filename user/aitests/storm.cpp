// aistorm --model M [--clients N] [--seed S]: hostile clients of the AI
// service (docs/ai-service.md, "The rules, and why"):
//   1. a dead owner's request is gone at once: after the owner is killed and
//      reaped, its id is unknown to everyone (ESRCH) and not in flight;
//   2. a cancel lands within one iteration (one forward pass of at most
//      ai.budget tokens), even in a long prefill: counted in iterations, not
//      in time, so a slow or busy host cannot change the verdict;
//   3. a kill storm: N clients killed at random moments (queued, running,
//      finished but uncollected; each of the three must have been seen at
//      some kill, or the storm did not test what it claims); afterwards
//      nothing is in flight and a new request gets the same tokens as before
//      the storm.
// One line per check ("ok ..." / "FAIL ..."), then "N passed, M failed".
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "aitests.h"

namespace {

int passed, failed;
char model[KAI_AI_MODEL_NAME_MAX];
kai_ai_model_info minfo;
uint64_t rng;
uint32_t out[KAI_AI_MAX_OUTPUT];

void check(bool ok, const char* name, const char* fmt = "", long a = 0, long b = 0, long c = 0) {
  (ok ? passed : failed)++;
  printf("%s %s", ok ? "ok" : "FAIL", name);
  if (!ok || *fmt) {
    printf(": ");
    printf(fmt, a, b, c);
  }
  printf("\n");
}

kai_ai_submit request(const uint32_t* prompt, uint32_t n, uint32_t predict, uint32_t flags = 0) {
  return ai_request(model, prompt, n, predict, flags);
}

kai_ai_info info_now() {
  kai_ai_info in{};
  ai_info(&in);
  return in;
}

int32_t state_of(int64_t id) {
  kai_ai_status st{};
  int r = ai_query(id, &st);
  return r < 0 ? r : st.state;
}

const uint32_t kPrompt[] = {1, 2, 3, 4};

void test_dead_owner() {
  uint32_t predict = minfo.runtime_seq_len - 4;
  if (predict > KAI_AI_MAX_OUTPUT) predict = KAI_AI_MAX_OUTPUT;
  int fds[2];
  pipe(fds);
  int pid = fork();
  if (pid == 0) {
    kai_ai_submit r = request(kPrompt, 4, predict);
    int64_t id = ai_submit(&r);
    while (state_of(id) == KAI_AI_QUEUED) sleep(1);
    write(fds[1], &id, sizeof id);
    ai_wait(id, out, KAI_AI_MAX_OUTPUT, nullptr);   // killed while waiting
    exit(7);
  }
  int64_t id = 0;
  read(fds[0], &id, sizeof id);
  bool running = state_of(id) == -KAI_EPERM;   // someone else's, while its owner lives
  kill(pid);
  int status = 0;
  while (wait(&status) != pid) {}
  kai_ai_info in = info_now();
  kai_ai_result res;
  check(running && id > 0, "another process's live request: EPERM");
  check(ai_query(id, nullptr) == -KAI_ESRCH && ai_wait(id, out, KAI_AI_MAX_OUTPUT, &res) == -KAI_ESRCH &&
            ai_cancel(id) == -KAI_ESRCH,
        "a killed owner's running request is unknown at once (ESRCH)");
  // Its slot stays in use (in_flight counts it, as a full table's EAGAIN
  // does) until its worker's next iteration boundary frees it.
  bool consistent = in.queued + in.running <= in.in_flight;
  for (int tick = 0; tick < 6000 && in.in_flight != 0; tick++) {
    sleep(1);
    in = info_now();
  }
  check(consistent && in.in_flight == 0, "... counted in flight until its worker frees it at its next iteration",
        "consistent %d in_flight %ld", int(consistent), long(in.in_flight));
  close(fds[0]);
  close(fds[1]);
}

void test_cancel_in_prefill() {
  static uint32_t prompt[KAI_AI_MAX_PROMPT];
  uint32_t n = 200;
  if (n + 1 > minfo.runtime_seq_len) n = minfo.runtime_seq_len - 1;
  for (uint32_t i = 0; i < n; i++) prompt[i] = (i * 7 + 1) % minfo.vocab_size;
  kai_ai_submit r = request(prompt, n, 1, KAI_AI_INT8);
  kai_ai_result solo{};
  int64_t id = ai_submit(&r);
  bool ok = id > 0 && ai_wait(id, out, KAI_AI_MAX_OUTPUT, &solo) == 1;
  uint64_t prefill_ns = ai_latency_ns_of(&solo).prefill;

  // Another prompt of the same length: the first one's blocks are in the
  // prefix cache now, and a request that reused them would have almost
  // nothing left to cancel.
  for (uint32_t i = 0; i < n; i++) prompt[i] = (i * 7 + 2) % minfo.vocab_size;
  id = ai_submit(&r);
  while (state_of(id) == KAI_AI_QUEUED) {}
  uint64_t t_cancel = clock_ns();
  ok &= ai_cancel(id) == 0;
  // Read after the cancel is posted: the iteration running now may finish
  // (the worker looks at cancels between iterations), no further one may
  // start. This request is the only one in the service, so the service's
  // iteration counter counts its passes.
  kai_ai_info at_cancel = info_now();
  kai_ai_result res{};
  long got = ai_wait(id, out, KAI_AI_MAX_OUTPUT, &res);
  uint64_t after_cancel = info_now().iterations - at_cancel.iterations;
  uint64_t latency_ns = res.t_finish_ns - t_cancel;
  uint32_t budget = at_cancel.budget;
  uint32_t whole = (n + budget - 1) / budget;   // iterations the whole prefill takes
  printf("  cancel of a %u-token prefill (%u iterations of %u tokens): %lu iterations after the cancel, "
         "%u in all; %lu us after the cancel (whole prefill %lu us; real or virtual time, not checked)\n",
         n, whole, budget, after_cancel, res.iterations, latency_ns / 1000, prefill_ns / 1000);
  check(ok && got == 0 && res.state == KAI_AI_CANCELLED && after_cancel <= 1 && res.iterations < whole,
        "a cancel lands within one iteration of the prefill", "%ld iterations after the cancel, %ld in all",
        long(after_cancel), long(res.iterations));
  if (!(ok && got == 0 && res.state == KAI_AI_CANCELLED))
    printf("  (cancel: submit/cancel ok %d, ai_wait returned %ld, state %s)\n", ok, got, ai_state_name(res.state));
}

uint64_t below(uint64_t n) { return kai_rng_next(&rng) % n; }

// A storm client: a few requests, then it waits, idles or collects and idles.
// Mode 0's last request is long, and the client tells the parent (one byte
// on `running`) once that request has left the queue, so the parent's kill
// lands on a running request by construction, not by the luck of timing.
[[noreturn]] void storm_client(uint32_t mode, int running) {
  int64_t ids[3];
  uint32_t n = 1 + uint32_t(below(3));
  uint32_t long_predict = minfo.runtime_seq_len - 4;
  if (long_predict > KAI_AI_MAX_OUTPUT) long_predict = KAI_AI_MAX_OUTPUT;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t predict = mode == 0 && i + 1 == n ? long_predict : 1 + uint32_t(below(12));
    kai_ai_submit r = request(kPrompt, 4, predict, KAI_AI_NONBLOCK | KAI_AI_INT8);
    ids[i] = ai_submit(&r);
  }
  if (mode == 0) {
    while (ids[n - 1] > 0 && state_of(ids[n - 1]) == KAI_AI_QUEUED) sleep(1);
    char one = 1;
    write(running, &one, 1);
    if (ids[n - 1] > 0) ai_wait(ids[n - 1], out, KAI_AI_MAX_OUTPUT, nullptr);   // killed while it runs
  }
  if (mode == 1) {   // finished but never collected
    for (uint32_t i = 0; i < n; i++)
      while (ids[i] > 0 && state_of(ids[i]) <= KAI_AI_RUNNING) sleep(1);
  }
  for (;;) sleep(100);
}

void test_kill_storm(uint32_t clients) {
  kai_ai_submit r = request(kPrompt, 4, 8);
  static uint32_t before[8];
  int64_t id = ai_submit(&r);
  bool ok = id > 0 && ai_wait(id, before, 8, nullptr) == 8;
  uint64_t seen_queued = 0, seen_running = 0, seen_finished = 0;
  uint32_t killed = 0, unstarted = 0;
  int running[2];
  if (pipe(running) < 0) ok = false;
  for (uint32_t c = 0; c < clients; c++) {
    int pid = fork();
    if (pid == 0) storm_client(c % 3, running[1]);
    if (pid < 0) {
      unstarted++;
      continue;
    }
    if (c % 3 == 0) {   // its long request is running now (see storm_client)
      char one;
      read(running[0], &one, 1);
    } else {
      sleep(int(below(15)));
    }
    kai_ai_info in = info_now();
    seen_queued += in.queued;
    seen_running += in.running;
    // The counts are read one after another, not as one snapshot, so a
    // request can move between them: never let the difference go below 0.
    uint64_t live = uint64_t(in.queued) + in.running;
    seen_finished += in.in_flight > live ? in.in_flight - live : 0;
    kill(pid);
    int status;
    while (wait(&status) != pid) {}
    killed++;
  }
  close(running[0]);
  close(running[1]);
  kai_ai_info in = info_now();
  // The last killed client's running requests hold their slots until their
  // worker's next iteration boundary.
  for (int tick = 0; tick < 6000 && in.in_flight != 0; tick++) {
    sleep(1);
    in = info_now();
  }
  printf("  kill storm: %u clients killed, %u could not start; at the kills the service held "
         "%lu queued, %lu running, %lu finished-uncollected requests\n",
         killed, unstarted, seen_queued, seen_running, seen_finished);
  check(ok && in.in_flight == 0 && in.queued == 0, "after the kill storm nothing is in flight",
        "in_flight %ld queued %ld", long(in.in_flight), long(in.queued));
  // Running requests are there by construction (every third client's long
  // one), finished-uncollected ones pile up from the others. Queued ones
  // only when the clients' requests outnumber the batch slots at that
  // moment, which the scheduler's quick admission makes a matter of timing:
  // they are reported above, not required.
  check(seen_running > 0 && seen_finished > 0,
        "the kills hit running and finished-uncollected requests",
        "queued %ld, running %ld, finished %ld", long(seen_queued), long(seen_running), long(seen_finished));
  uint32_t after[8];
  long got = ai_call(model, kPrompt, 4, 8, after, 8, nullptr);
  bool same = got == 8;
  for (int i = 0; same && i < 8; i++) same = after[i] == before[i];
  check(same && killed == clients, "... and a new request gets the same tokens as before",
        "got %ld tokens, %ld of %ld clients killed", got, long(killed), long(clients));
}


}  // namespace

int aistorm_main(int argc, char** argv) {
  const char* want = nullptr;
  uint32_t clients = 100, seed = 1;
  CommandLine args("aistorm", "aistorm --model M [--clients N] [--seed S]", argc, argv);
  while (args.next()) {
    if (args.model(&want) || args.number("--clients", 1, 100000, &clients) || args.number("--seed", 0, 100000, &seed))
      continue;
    args.unknown();
  }
  if (!want) {
    fprintf(2, "aistorm: --model is required\n");
    return 2;
  }
  if (ai_open_model("aistorm", want, 300, model, &minfo) < 0) return 1;
  rng = kai_rng_seed(seed);
  test_dead_owner();
  test_cancel_in_prefill();
  test_kill_storm(clients);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
