// aitest [MODEL]: checks the AI service's semantics (docs/ai-service.md):
// results, ownership, one-time collection, every submit error, cancellation,
// a full queue, batches, concurrent clients, and cleanup when clients exit
// or are killed. One line per check, then "N passed, M failed".
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "aitests.h"

static int passed, failed;
static char model[KAI_AI_MODEL_NAME_MAX];
static kai_ai_model_info minfo;
static uint32_t prompt[4] = {1, 2, 3, 4};
static constexpr uint32_t kPromptLen = 4;
static uint32_t predict;           // tokens per normal request
static uint32_t expected[KAI_AI_MAX_OUTPUT];    // the single-request reference answer

static void check(bool ok, const char* name, const char* fmt = "", long a = 0, long b = 0) {
  if (ok) {
    passed++;
    printf("ok %s\n", name);
  } else {
    failed++;
    printf("FAIL %s: ", name);
    printf(fmt, a, b);
    printf("\n");
  }
}

static kai_ai_submit request(const uint32_t* p, uint32_t n, uint32_t pred, uint32_t flags = 0) {
  return ai_request(model, p, n, pred, flags);
}

static int64_t submit(uint32_t pred = 0, uint32_t flags = 0) {
  kai_ai_submit r = request(prompt, kPromptLen, pred ? pred : predict, flags);
  return ai_submit(&r);
}

static kai_ai_info info_now() {
  static kai_ai_info info;
  ai_info(&info);
  return info;
}

// Waits up to ~timeout_s for the service to have nothing in flight.
static bool drained(int timeout_s) {
  for (int i = 0; i < timeout_s * 10; i++) {
    kai_ai_info in = info_now();
    if (in.in_flight == 0 && in.queued == 0 && in.running == 0) return true;
    sleep(10);
  }
  return false;
}

static bool same_tokens(const uint32_t* a, const uint32_t* b, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

// Reads a u32-count-prefixed token file (PMT.BIN / EXP.BIN) of the bundle.
static long read_tokens(const char* file, uint32_t* out, uint32_t max) {
  char path[64];
  snprintf(path, sizeof(path), "/AI/%s/%s", model, file);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return fd;
  uint32_t count = 0;
  long n = read(fd, &count, 4);
  if (n != 4 || count > max || read(fd, out, count * 4) != long(count * 4)) {
    close(fd);
    return -KAI_EIO;
  }
  close(fd);
  return count;
}

static void test_basic() {
  kai_ai_result res{};
  long n = ai_call(model, prompt, kPromptLen, predict, expected, predict, &res);
  check(n == long(predict), "call returns n_predict tokens", "got %ld, want %ld", n, predict);
  check(res.state == KAI_AI_DONE, "call state is done", "state %ld", res.state);
  bool ordered = res.t_submit_ns <= res.t_start_ns && res.t_start_ns <= res.t_first_token_ns &&
                 res.t_first_token_ns <= res.t_finish_ns && res.t_submit_ns > 0;
  check(ordered, "timestamps submit <= start <= first <= finish");
  check(res.n_prompt == kPromptLen && res.n_generated == predict, "result counts");
  bool in_vocab = true;
  for (uint32_t i = 0; i < predict; i++) in_vocab = in_vocab && expected[i] < minfo.vocab_size;
  check(in_vocab, "generated ids are in the vocabulary");

  uint32_t again[KAI_AI_MAX_OUTPUT];
  long m = ai_call(model, prompt, kPromptLen, predict, again, predict, nullptr);
  check(m == n && same_tokens(again, expected, predict), "same request, same tokens");
}

static void test_reference() {
  static uint32_t pmt[256], exp_tokens[KAI_AI_MAX_OUTPUT], out[KAI_AI_MAX_OUTPUT];
  long np = read_tokens("PMT.BIN", pmt, 255);
  long ne = read_tokens("EXP.BIN", exp_tokens, KAI_AI_MAX_OUTPUT);
  // Every bundle aitest runs on carries its reference answer; without it
  // the service's tokens would go unchecked, which is a failure, not a skip.
  if (np <= 0 || ne <= 0) {
    check(false, "the bundle's PMT.BIN and EXP.BIN are readable", "PMT.BIN %ld, EXP.BIN %ld", np, ne);
    return;
  }
  if (np + ne > long(minfo.runtime_seq_len)) ne = minfo.runtime_seq_len - np;
  long n = ai_call(model, pmt, np, ne, out, KAI_AI_MAX_OUTPUT, nullptr);
  check(n == ne && same_tokens(out, exp_tokens, ne), "tokens match the bundle's EXP.BIN",
        "got %ld tokens of %ld", n, ne);
}

static void test_collect_once_and_ids() {
  int64_t id = submit();
  uint32_t out[KAI_AI_MAX_OUTPUT];
  kai_ai_result res{};
  check(ai_wait(id, out, predict, &res) == long(predict), "wait collects the result");
  check(ai_wait(id, out, predict, &res) == -KAI_ESRCH, "second wait on the same id fails (ESRCH)");
  check(ai_query(id, nullptr) == -KAI_ESRCH, "query of a collected id fails (ESRCH)");
  check(ai_wait(999999, out, predict, &res) == -KAI_ESRCH, "never-issued id fails (ESRCH)");
  check(ai_wait(-5, out, predict, &res) == -KAI_ESRCH, "negative id fails (ESRCH)");
  check(ai_cancel(0) == -KAI_ESRCH, "cancel of id 0 fails (ESRCH)");
}

// kai_ai_submit.spec: each malformed speculation request is refused with
// its own code, before anything is queued (counted by test_submit_errors).
static void test_speculation_errors() {
  static uint32_t long_prediction[KAI_AI_MAX_PREDICTION + 1];
  uint32_t bad_id[2] = {1, minfo.vocab_size};
  kai_ai_submit r = request(prompt, kPromptLen, 1);
  r.spec.proposer = 99;
  r.spec.max_drafts = 1;
  check(ai_submit(&r) == -KAI_EINVAL, "unknown proposer: EINVAL");
  r = request(prompt, kPromptLen, 1);
  r.spec.proposer = KAI_AI_PROPOSER_NGRAM;
  r.spec.max_drafts = KAI_AI_MAX_DRAFTS + 1;
  check(ai_submit(&r) == -KAI_EINVAL, "more drafts than KAI_AI_MAX_DRAFTS: EINVAL");
  r.spec.max_drafts = 0;
  check(ai_submit(&r) == -KAI_EINVAL, "a proposer with 0 drafts: EINVAL");
  r.spec.max_drafts = 2;
  r.spec.ngram_max = KAI_AI_MAX_NGRAM + 1;
  check(ai_submit(&r) == -KAI_EINVAL, "n-gram above KAI_AI_MAX_NGRAM: EINVAL");
  r.spec.ngram_max = 0;
  r.spec.flags = 0x2;
  check(ai_submit(&r) == -KAI_EINVAL, "unknown speculation flag: EINVAL");
  r.spec.flags = 0;
  r.spec.reserved = 1;
  check(ai_submit(&r) == -KAI_EINVAL, "non-zero speculation reserved field: EINVAL");
  r = request(prompt, kPromptLen, 1);
  r.spec.max_drafts = 2;   // with the default proposer: a field it does not use
  check(ai_submit(&r) == -KAI_EINVAL, "drafts without a proposer: EINVAL");
  r = request(prompt, kPromptLen, 1);
  r.spec.proposer = KAI_AI_PROPOSER_NGRAM;
  r.spec.max_drafts = 2;
  r.spec.prediction = prompt;
  r.spec.prediction_len = 1;
  check(ai_submit(&r) == -KAI_EINVAL, "a prediction for ngram: EINVAL");
  r.spec.proposer = KAI_AI_PROPOSER_PREDICTED;
  r.spec.prediction_len = 0;
  check(ai_submit(&r) == -KAI_EINVAL, "an empty prediction: EINVAL");
  r.spec.prediction = long_prediction;
  r.spec.prediction_len = KAI_AI_MAX_PREDICTION + 1;
  check(ai_submit(&r) == -KAI_EINVAL, "a prediction above KAI_AI_MAX_PREDICTION: EINVAL");
  r.spec.prediction = (const uint32_t*)0x1;
  r.spec.prediction_len = 4;
  check(ai_submit(&r) == -KAI_EFAULT, "bad prediction pointer: EFAULT");
  r.spec.prediction = (const uint32_t*)0x80200000UL;
  check(ai_submit(&r) == -KAI_EFAULT, "kernel prediction pointer: EFAULT");
  r.spec.prediction = bad_id;
  r.spec.prediction_len = 2;
  check(ai_submit(&r) == -KAI_ERANGE, "prediction id = vocab_size: ERANGE");
}

// The longest prediction is accepted, and its request runs.
static void test_longest_prediction() {
  static uint32_t long_prediction[KAI_AI_MAX_PREDICTION];
  for (uint32_t i = 0; i < KAI_AI_MAX_PREDICTION; i++) long_prediction[i] = i % minfo.vocab_size;
  kai_ai_submit r = request(prompt, kPromptLen, 4);
  r.spec.proposer = KAI_AI_PROPOSER_PREDICTED;
  r.spec.max_drafts = KAI_AI_MAX_DRAFTS;
  r.spec.prediction = long_prediction;
  r.spec.prediction_len = KAI_AI_MAX_PREDICTION;
  int64_t id = ai_submit(&r);
  uint32_t out[4];
  kai_ai_result res{};
  check(id > 0 && ai_wait(id, out, 4, &res) == 4 && res.accepted <= res.drafted,
        "a prediction of KAI_AI_MAX_PREDICTION ids runs");
}

static void test_submit_errors() {
  kai_ai_info before = info_now();
  uint32_t big[KAI_AI_MAX_PROMPT + 1];
  for (auto& t : big) t = 1;
  uint32_t bad_token[2] = {1, minfo.vocab_size};

  kai_ai_submit r = request(prompt, kPromptLen, predict);
  r.model = "NO_SUCH_MODEL";
  check(ai_submit(&r) == -KAI_ENOENT, "unknown model: ENOENT");
  r = request(prompt, 0, predict);
  check(ai_submit(&r) == -KAI_EINVAL, "empty prompt: EINVAL");
  r = request(prompt, kPromptLen, 0);
  check(ai_submit(&r) == -KAI_EINVAL, "zero tokens to predict: EINVAL");
  r = request(big, KAI_AI_MAX_PROMPT + 1, 1);
  check(ai_submit(&r) == -KAI_E2BIG, "KAI_AI_MAX_PROMPT + 1 prompt tokens: E2BIG");
  r = request(bad_token, 2, 1);
  check(ai_submit(&r) == -KAI_ERANGE, "token id = vocab_size: ERANGE");
  r = request(prompt, kPromptLen, minfo.runtime_seq_len - kPromptLen + 1);
  check(ai_submit(&r) == -KAI_EFBIG, "prompt + predict > runtime_seq_len: EFBIG");
  check(ai_submit(nullptr) == -KAI_EFAULT, "null request pointer: EFAULT");
  check(ai_submit((kai_ai_submit*)0x80200000UL) == -KAI_EFAULT, "kernel request pointer: EFAULT");
  r = request((uint32_t*)0x1, kPromptLen, 1);
  check(ai_submit(&r) == -KAI_EFAULT, "bad prompt pointer: EFAULT");
  r = request(prompt, kPromptLen, 1);
  r.model = (const char*)0xffffffffffff0000UL;
  check(ai_submit(&r) == -KAI_EFAULT, "bad model-name pointer: EFAULT");
  check(ai_info((kai_ai_info*)0x10) == -KAI_EFAULT, "ai_info with a bad pointer: EFAULT");
  r = request(prompt, kPromptLen, 1);
  r.reserved[1] = 1;
  check(ai_submit(&r) == -KAI_EINVAL, "non-zero reserved field: EINVAL");
  r = request(prompt, kPromptLen, 1);
  r.priority = KAI_AI_MAX_PRIORITY + 1;
  check(ai_submit(&r) == -KAI_EINVAL, "priority above KAI_AI_MAX_PRIORITY: EINVAL");
  r = request(prompt, kPromptLen, 1);
  r.sampling.temperature_milli = 10001;
  check(ai_submit(&r) == -KAI_EINVAL, "temperature above 10: EINVAL");
  r = request(prompt, kPromptLen, 1);
  r.sampling.top_p_milli = 1001;
  check(ai_submit(&r) == -KAI_EINVAL, "top-p above 1: EINVAL");
  static const uint32_t bad_stop[] = {3, 1, 2};   // says 3 tokens, has 2
  r = request(prompt, kPromptLen, 1);
  r.stop = bad_stop;
  r.stop_words = 3;
  check(ai_submit(&r) == -KAI_EINVAL, "a stop sequence longer than its words: EINVAL");
  static const uint32_t zero_stop[] = {0};
  r.stop = zero_stop;
  r.stop_words = 1;
  check(ai_submit(&r) == -KAI_EINVAL, "an empty stop sequence: EINVAL");
  r.stop_words = KAI_AI_MAX_STOP_WORDS + 1;
  check(ai_submit(&r) == -KAI_EINVAL, "too many stop words: EINVAL");
  r.stop = (const uint32_t*)0x1;
  r.stop_words = 2;
  check(ai_submit(&r) == -KAI_EFAULT, "bad stop-sequence pointer: EFAULT");
  r = request(prompt, kPromptLen, 1);
  r.flags = 0x80;
  check(ai_submit(&r) == -KAI_EINVAL, "unknown flag: EINVAL");
  test_speculation_errors();

  kai_ai_info after = info_now();
  check(after.submitted == before.submitted && after.in_flight == before.in_flight,
        "rejected submits create no request", "submitted grew by %ld, in flight by %ld",
        long(after.submitted - before.submitted), long(after.in_flight - before.in_flight));
  check(after.rejected >= before.rejected + 17, "rejected submits are counted");
}

// Every limit ai_abi.h writes next to a sampling field or the stop list:
// the boundary is accepted (and the request runs), one above is refused.
static bool accepted(const kai_ai_submit& r) {
  int64_t id = ai_submit(&r);
  if (id <= 0) return false;
  uint32_t out[1];
  return ai_wait(id, out, 1, nullptr) == 1;
}

static void test_sampling_limits() {
  struct Limit {
    const char* name;
    uint32_t kai_ai_sampling::*field;
    uint32_t max;
  } limits[] = {
      {"temperature", &kai_ai_sampling::temperature_milli, KAI_AI_MAX_TEMPERATURE_MILLI},
      {"top_p", &kai_ai_sampling::top_p_milli, KAI_AI_MAX_TOP_P_MILLI},
      {"min_p", &kai_ai_sampling::min_p_milli, KAI_AI_MAX_MIN_P_MILLI},
      {"repeat_penalty", &kai_ai_sampling::repeat_penalty_milli, KAI_AI_MAX_REPEAT_PENALTY_MILLI},
      {"repeat_last_n", &kai_ai_sampling::repeat_last_n, KAI_AI_MAX_REPEAT_LAST_N},
  };
  char name[96];
  for (const Limit& l : limits) {
    kai_ai_submit r = request(prompt, kPromptLen, 1);
    r.sampling.temperature_milli = 1000;   // sampled, so every filter is in play
    r.sampling.repeat_penalty_milli = 1100;
    r.sampling.*l.field = l.max;
    snprintf(name, sizeof name, "%s at its maximum %u is accepted", l.name, l.max);
    check(accepted(r), name);
    r.sampling.*l.field = l.max + 1;
    snprintf(name, sizeof name, "%s one above its maximum is refused (EINVAL)", l.name);
    long e = ai_submit(&r);
    check(e == -KAI_EINVAL, name, "got %ld", e);
  }
  kai_ai_submit r = request(prompt, kPromptLen, 1);
  r.sampling.temperature_milli = 1000;
  r.sampling.top_k = 0xffffffffu;
  r.sampling.seed = ~0ull;
  check(accepted(r), "top_k and seed have no maximum");

  // Stop sequences: ids up to vocab_size - 1, the most words in the most sequences.
  static uint32_t stop[KAI_AI_MAX_STOP_WORDS + 2];
  uint32_t w = 0;
  for (uint32_t s = 0; s < KAI_AI_MAX_STOP_SEQS; s++) {
    stop[w++] = KAI_AI_MAX_STOP_TOKENS;
    for (uint32_t i = 0; i < KAI_AI_MAX_STOP_TOKENS; i++) stop[w++] = minfo.vocab_size - 1;
  }
  r = request(prompt, kPromptLen, 1);
  r.stop = stop;
  r.stop_words = w;
  check(accepted(r), "4 stop sequences of 8 ids, the last vocabulary id, are accepted");
  stop[w - 1] = minfo.vocab_size;
  long e = ai_submit(&r);
  check(e == -KAI_ERANGE, "a stop id = vocab_size is refused (ERANGE)", "got %ld", e);
  static const uint32_t nine[] = {KAI_AI_MAX_STOP_TOKENS + 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  r.stop = nine;
  r.stop_words = KAI_AI_MAX_STOP_TOKENS + 2;
  e = ai_submit(&r);
  check(e == -KAI_EINVAL, "a stop sequence of 9 ids is refused (EINVAL)", "got %ld", e);
  static const uint32_t five[] = {1, 1, 1, 2, 1, 3, 1, 4, 1, 5};
  r.stop = five;
  r.stop_words = 10;
  e = ai_submit(&r);
  check(e == -KAI_EINVAL, "5 stop sequences are refused (EINVAL)", "got %ld", e);
}

static void test_wait_buffers() {
  int64_t id = submit();
  uint32_t out[KAI_AI_MAX_OUTPUT];
  kai_ai_result res{};
  check(ai_wait(id, out, predict - 1, &res) == -KAI_ENOSPC, "too small output buffer: ENOSPC");
  check(ai_wait(id, (uint32_t*)0x1, predict, &res) == -KAI_EFAULT, "bad output pointer: EFAULT");
  check(ai_wait(id, out, predict, (kai_ai_result*)0x1) == -KAI_EFAULT, "bad result pointer: EFAULT");
  long n = ai_wait(id, out, predict, &res);
  check(n == long(predict) && same_tokens(out, expected, predict), "result kept after those errors");
}

// ai_read: the same tokens as ai_wait, as they come, and its own errors.
static void test_streaming() {
  int64_t id = submit();
  uint32_t out[KAI_AI_MAX_OUTPUT];
  uint64_t times[KAI_AI_MAX_OUTPUT];
  uint32_t from = 0;
  bool ordered = true;
  for (;;) {
    kai_ai_status st{};
    long k = ai_read(id, from, out + from, KAI_AI_MAX_OUTPUT - from, &st, times + from);
    if (k <= 0) break;
    for (long j = 0; j < k; j++)
      ordered &= times[from + j] > 0 && (from + j == 0 || times[from + j] >= times[from + j - 1]);
    from += uint32_t(k);
  }
  check(from == predict && same_tokens(out, expected, predict) && ordered,
        "ai_read streams the reference tokens with rising publish times", "got %ld of %ld", long(from),
        long(predict));
  check(ai_read(id, 0, out, 0, nullptr, nullptr) == -KAI_EINVAL, "ai_read with no room: EINVAL");
  check(ai_read(id, 0, (uint32_t*)0x1, 4, nullptr, nullptr) == -KAI_EFAULT, "ai_read to a bad pointer: EFAULT");
  check(ai_read(id, predict, out, 4, nullptr, nullptr) == 0, "ai_read past the end of a finished request: 0");
  kai_ai_result res{};
  check(ai_wait(id, out, KAI_AI_MAX_OUTPUT, &res) == long(predict) && res.finish_reason == KAI_AI_FINISH_LENGTH,
        "ai_wait collects a streamed request (finish: length)");
  check(ai_read(id, 0, out, 4, nullptr, nullptr) == -KAI_ESRCH, "ai_read of a collected request: ESRCH");
}

static void test_query_and_cancel() {
  int64_t id = submit();
  kai_ai_status st{};
  int q = ai_query(id, &st);
  check(q == 0 && st.state >= KAI_AI_QUEUED && st.state <= KAI_AI_DONE, "query right after submit");
  check(ai_query(id, (kai_ai_status*)0x1) == -KAI_EFAULT, "query with a bad pointer: EFAULT");
  uint32_t out[KAI_AI_MAX_OUTPUT];
  kai_ai_result res{};
  ai_wait(id, out, predict, &res);

  // Cancel: a long request, then several behind it; cancel the last ones.
  uint32_t longest = minfo.runtime_seq_len - kPromptLen;
  if (longest > KAI_AI_MAX_OUTPUT) longest = KAI_AI_MAX_OUTPUT;
  int64_t ids[6];
  for (auto& i : ids) i = submit(longest);
  int cancelled = 0, consistent = 1;
  for (int i = 5; i >= 1; i--) {
    int c = ai_cancel(ids[i]);
    ai_wait(ids[i], out, KAI_AI_MAX_OUTPUT, &res);
    if (c == 0) {
      cancelled++;
      consistent &= res.state == KAI_AI_CANCELLED;
    } else {
      consistent &= c == -KAI_EBUSY && res.state == KAI_AI_DONE;
    }
  }
  check(consistent, "cancel 0 -> cancelled, EBUSY -> done");
  check(cancelled > 0, "at least one queued request was cancelled");
  ai_wait(ids[0], out, KAI_AI_MAX_OUTPUT, &res);
  check(ai_cancel(ids[0]) == -KAI_ESRCH, "cancel after collection: ESRCH");
  int64_t done = submit(1);
  while (ai_query(done, &st) == 0 && st.state != KAI_AI_DONE) sleep(1);
  check(ai_cancel(done) == -KAI_EBUSY, "cancel of a finished request: EBUSY");
  ai_wait(done, out, KAI_AI_MAX_OUTPUT, &res);
}

// One process may hold at most max_per_process slots; the next submit fails
// at once with EDQUOT, blocking or not (only this process could free one).
static void test_quota() {
  kai_ai_info in = info_now();
  int64_t ids[64];
  int n = 0;
  int64_t r = 0;
  while (n < 64 && (r = submit(1, KAI_AI_NONBLOCK)) > 0) ids[n++] = r;
  check(r == -KAI_EDQUOT && n == int(in.max_per_process), "non-blocking submit over the quota: EDQUOT",
        "stopped after %ld submits, quota %ld", n, in.max_per_process);
  uint64_t t0 = clock_ns();
  r = submit(1);
  check(r == -KAI_EDQUOT && clock_ns() - t0 < 1000000000ull,
        "blocking submit over the quota: EDQUOT at once (no sleep)", "got %ld", r);
  uint32_t out[8];
  bool all = true;
  for (int i = 0; i < n; i++) all &= ai_wait(ids[i], out, 8, nullptr) == 1;
  check(all, "every request up to the quota completes");
  int64_t again = submit(1, KAI_AI_NONBLOCK);
  check(again > 0 && ai_wait(again, out, 8, nullptr) == 1, "collecting frees the quota");
}

// Children that together hold every slot (each up to its quota) with
// uncollected results, until the parent writes one byte per child to `go`.
struct TableFiller {
  int pids[32];
  int n = 0;
  int ready[2], go[2];
};

static bool fill_table(TableFiller& f) {
  kai_ai_info in = info_now();
  pipe(f.ready);
  pipe(f.go);
  uint32_t left = in.queue_capacity - uint32_t(in.in_flight);
  while (left > 0 && f.n < 32) {
    uint32_t mine = left < in.max_per_process ? left : in.max_per_process;
    left -= mine;
    int pid = fork();
    if (pid == 0) {
      int64_t ids[32];
      uint32_t got = 0;
      while (got < mine && (ids[got] = submit(1, KAI_AI_NONBLOCK)) > 0) got++;
      write(f.ready[1], got == mine ? "y" : "n", 1);
      char c;
      read(f.go[0], &c, 1);
      uint32_t out[8];
      for (uint32_t i = 0; i < got; i++) ai_wait(ids[i], out, 8, nullptr);
      exit(got == mine ? 0 : 1);
    }
    f.pids[f.n++] = pid;
  }
  bool ok = true;
  for (int i = 0; i < f.n; i++) {
    char c = 0;
    read(f.ready[0], &c, 1);
    ok &= c == 'y';
  }
  return ok;
}

static bool release_table(TableFiller& f) {
  for (int i = 0; i < f.n; i++) write(f.go[1], "g", 1);
  bool ok = true;
  for (int i = 0; i < f.n; i++) {
    int status = -1;
    ok &= wait(&status) > 0 && status == 0;
  }
  for (int fd : {f.ready[0], f.ready[1], f.go[0], f.go[1]}) close(fd);
  return ok;
}

static void test_full_queue() {
  TableFiller f;
  bool filled = fill_table(f);
  check(filled, "several clients fill every slot", "%ld clients", f.n);
  int64_t r = submit(1, KAI_AI_NONBLOCK);
  check(r == -KAI_EAGAIN, "non-blocking submit to a full table: EAGAIN", "got %ld", r);
  check(release_table(f), "every request of the full table completes");
}

static void test_batch() {
  int64_t ids[8];
  for (auto& id : ids) id = submit();
  bool ok = true;
  uint32_t out[KAI_AI_MAX_OUTPUT];
  for (auto id : ids) ok &= ai_wait(id, out, predict, nullptr) == long(predict) && same_tokens(out, expected, predict);
  check(ok, "batch of 8 submits then 8 waits: all match");
}

// Status of child pid; other children reaped meanwhile are ignored, so call
// it only when pid is the one child alive.
static int child_status(int pid) {
  int status = -1;
  while (true) {
    int w = wait(&status);
    if (w == pid || w < 0) return status;
  }
}

static void test_ownership() {
  int64_t id = submit();
  int pid = fork();
  if (pid == 0) {
    uint32_t out[KAI_AI_MAX_OUTPUT];
    kai_ai_status st;
    bool ok = ai_wait(id, out, predict, nullptr) == -KAI_EPERM && ai_query(id, &st) == -KAI_EPERM &&
              ai_cancel(id) == -KAI_EPERM;
    exit(ok ? 0 : 1);
  }
  check(child_status(pid) == 0, "a child cannot wait, query or cancel its parent's request (EPERM)");
  uint32_t out[KAI_AI_MAX_OUTPUT];
  check(ai_wait(id, out, predict, nullptr) == long(predict), "the owner still collects it");
}

static void test_concurrent_clients() {
  constexpr int kClients = 2, kEach = 3;
  int pids[kClients];
  for (int c = 0; c < kClients; c++) {
    pids[c] = fork();
    if (pids[c] == 0) {
      uint32_t out[KAI_AI_MAX_OUTPUT];
      for (int i = 0; i < kEach; i++) {
        long n = ai_call(model, prompt, kPromptLen, predict, out, predict, nullptr);
        if (n != long(predict) || !same_tokens(out, expected, predict)) {
          printf("  client %d request %d: got %ld tokens (%s)\n", c, i, n, n < 0 ? strerror(n) : "mismatch");
          exit(1);
        }
      }
      exit(0);
    }
  }
  // Reap both, in whatever order they finish.
  bool ok = true;
  for (int c = 0; c < kClients; c++) {
    int status = -1;
    int pid = wait(&status);
    ok &= (pid == pids[0] || pid == pids[1]) && status == 0;
  }
  check(ok, "two concurrent clients get correct results");
}

static void test_exit_cleanup() {
  int pid = fork();
  if (pid == 0) {
    for (int i = 0; i < 5; i++) submit();
    exit(0);   // never waits
  }
  child_status(pid);
  check(drained(120), "a client that exits leaves nothing in flight");

  // Killed while sleeping in ai_wait: the child tells us (through a pipe)
  // that its long request is submitted, then waits on it.
  uint32_t longest = minfo.runtime_seq_len - kPromptLen;
  if (longest > KAI_AI_MAX_OUTPUT) longest = KAI_AI_MAX_OUTPUT;
  int fds[2];
  pipe(fds);
  pid = fork();
  if (pid == 0) {
    // Eight long requests ahead of the one it waits for: the wait lasts
    // seconds, so the kill surely lands while the child sleeps in ai_wait.
    int64_t id = 0;
    for (int i = 0; i < 8; i++) id = submit(longest);
    write(fds[1], "s", 1);
    uint32_t out[KAI_AI_MAX_OUTPUT];
    ai_wait(id, out, KAI_AI_MAX_OUTPUT, nullptr);
    exit(7);   // reached only if the kill came after the request finished
  }
  char c;
  read(fds[0], &c, 1);
  kill(pid);
  int status = child_status(pid);
  check(status != 7 && status != 0, "a client killed in ai_wait exits (killed)", "status %ld", status);
  check(drained(120), "... and leaves nothing in flight");

  // Killed while blocked in ai_submit: other clients hold every slot with
  // uncollected results, so the child's blocking submit sleeps until killed.
  TableFiller f;
  bool filled = fill_table(f);
  pid = fork();
  if (pid == 0) {
    write(fds[1], "f", 1);
    submit(1);   // blocks until killed
    exit(7);
  }
  read(fds[0], &c, 1);
  sleep(5);
  kill(pid);
  status = child_status(pid);
  check(filled && status != 7 && status != 0, "a client killed in a blocked ai_submit exits (killed)",
        "status %ld", status);
  check(release_table(f), "... the clients holding the table collect their results");
  check(drained(300), "... and leaves nothing in flight");
  close(fds[0]);
  close(fds[1]);
}

int aitest_main(int argc, char** argv) {
  const char* want = nullptr;
  CommandLine args("aitest", "aitest [MODEL]", argc, argv);
  while (args.next())
    if (!args.positional(&want)) args.unknown();
  if (want == nullptr) want = "";
  int r = ai_wait_model_ready(want, 600, model, &minfo);
  if (r < 0) {
    printf("FAIL model %s: %s\n", want[0] ? want : "(first)", strerror(r));
    printf("0 passed, 1 failed\n");
    return 1;
  }
  predict = minfo.runtime_seq_len >= 24 ? 16 : minfo.runtime_seq_len - kPromptLen;
  for (auto& t : prompt) t %= minfo.vocab_size;
  printf("aitest: model %s (vocab %u, runtime_seq_len %u), %u tokens per request\n", model,
         minfo.vocab_size, minfo.runtime_seq_len, predict);
  test_basic();
  test_reference();
  test_collect_once_and_ids();
  test_submit_errors();
  test_longest_prediction();
  test_sampling_limits();
  test_wait_buffers();
  test_streaming();
  test_query_and_cancel();
  test_quota();
  test_full_queue();
  test_batch();
  test_ownership();
  test_concurrent_clients();
  test_exit_cleanup();
  kai_ai_info in = info_now();
  check(in.in_flight == 0 && in.queued == 0 && in.running == 0, "nothing in flight at the end",
        "in flight %ld, running %ld", long(in.in_flight), long(in.running));
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
