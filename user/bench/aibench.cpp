// aibench: concurrent clients of the AI service, for queueing experiments.
//
//   aibench [--model NAME] [--clients C] [--requests R] [--prompt P | --prompt-file F | --stdin]
//           [--predict N] [--long-predict N2 --long-share PCT] [--think MS | --rate RPS]
//           [--seed S] [--priority P] [--int8] [--csv] [--align-tick]
//           [--progress] [--die-after N [--die-clients K]] [--inflight K]
//
// Forks C client processes. Closed loop (default): each client sends R
// requests one after another, sleeping --think ms between them. Open loop
// (--rate): requests arrive at RPS per second in total (exponential gaps,
// seeded), whether or not earlier ones have finished. With --inflight K
// (closed loop), each client keeps K requests in the service at once: it
// submits K, and submits the next whenever one is collected, so one client
// with K up to ai.max_per_process floods the service the way a process with
// many threads or an agent with many tool calls would. Each request has P
// distinct seeded token ids (or, with --prompt-file / --stdin, the same ids
// read once: kai_prompt.h) and asks for N tokens; with --long-predict, a
// seeded PCT percent of the requests ask for N2 instead (a two-size mix).
// --align-tick starts the clock right after a timer tick, so that in exact
// mode the same seed gives the same arrival times. Clients send one record per
// request to the parent through a pipe. The Little's law check takes the
// number in the system from the kernel's load meter (hart 0's timer samples
// it every tick; ai_info before and after the run); a sampler process also
// reads ai_info every 10 ms, for the curve over time, and its mean is
// printed beside the meter's (it can read low; see below). The
// parent prints a summary, plus one CSV line per request with --csv. A client that
// dies mid-run loses only its unfinished requests; the run still reports.
//
// The client pids are printed at the start ("aibench: client pids ..."), so a
// client can be killed from the shell while a background run goes on. For
// tests, --die-after N makes the first K clients (--die-clients, default 1)
// submit request N and exit at once without waiting for it (the kernel must
// discard the orphaned request). --progress prints "aibench: progress k/N"
// on standard error as records arrive (the host driver shows it).
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "kai_prompt.h"
#include "kai_stats.h"
#include "llm_math.h"

namespace {

struct Options {
  char model[KAI_AI_MODEL_NAME_MAX] = "";
  int clients = 2, requests = 4, prompt = 8, predict = 8;
  int think_ms = 0;
  uint32_t priority = 0;   // kai_ai_submit.priority of every request (priority policy)
  double rate = 0;   // requests per second over all clients; 0 = closed loop
  uint64_t seed = 1;
  uint32_t flags = 0;
  bool csv = false, progress = false;
  int die_after = -1, die_clients = 1;
  int long_predict = 0, long_share = 0;   // the mix: PCT percent of requests ask for long_predict
  bool align_tick = false;
  int inflight = 1;   // requests each closed-loop client keeps submitted at once
};

// One finished (or failed) request, as a client reports it.
struct Record {
  int32_t client, index, state, error;
  uint32_t n_prompt, n_generated, queue_depth, worker;
  uint64_t t_submit, t_start, t_first, t_finish;
  ai_latency_ns latency;   // from the timestamps above (ai_latency_ns_of)
};

// One observation of the service by the sampler process.
struct Sample {
  uint64_t t;
  uint32_t queued, running;
};

// What the reaper, the sampler and the clients send the parent.
struct Message {
  enum class Kind : uint32_t { Record = 1, Sample = 2, ClientsGone = 3 } kind;
  int32_t dead;        // ClientsGone: clients that did not exit with status 0
  int32_t unstarted;   // ClientsGone: clients that could not be forked
  union {
    Record record;
    Sample sample;
  };
};
static_assert(sizeof(Message) <= KAI_PIPE_BUF, "messages must be written atomically");

// Reads one whole message; false at end of file.
bool read_message(int fd, Message* m) {
  auto* p = reinterpret_cast<char*>(m);
  size_t got = 0;
  while (got < sizeof(*m)) {
    long r = read(fd, p + got, sizeof(*m) - got);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

Options opt;
uint32_t vocab;
// The prompt of every request with --prompt-file / --stdin (given_len > 0).
uint32_t given[KAI_AI_MAX_PROMPT];
uint32_t given_len;

// The synopsis CommandLine prints after an unknown option.
constexpr const char* kUsage =
    "aibench [--model NAME] [--clients C] [--requests R] [--prompt P | --prompt-file F | --stdin]\n"
    "               [--predict N] [--long-predict N2 --long-share PCT] [--think MS | --rate RPS]\n"
    "               [--seed S] [--priority P] [--int8] [--csv] [--align-tick] [--progress]\n"
    "               [--die-after N [--die-clients K]] [--inflight K]";

// P distinct token ids for request (client, index), reproducible from the seed.
void make_prompt(int client, int index, uint32_t* out) {
  if (given_len > 0) {
    memcpy(out, given, given_len * sizeof(uint32_t));
    return;
  }
  uint64_t st = kai_rng_seed(opt.seed * 1000003 + uint64_t(client) * 7919 + uint64_t(index) + 1);
  for (int i = 0; i < opt.prompt; i++) {
    uint32_t t;
    bool dup;
    do {
      t = static_cast<uint32_t>(kai_rng_next(&st) % vocab);
      dup = false;
      for (int j = 0; j < i; j++) dup |= out[j] == t;
    } while (dup && uint32_t(opt.prompt) <= vocab);
    out[i] = t;
  }
}

void sleep_until_ns(uint64_t t) {
  uint64_t now = clock_ns();
  if (t > now) sleep(static_cast<int>((t - now + 9999999) / 10000000));
}

// Tokens request (client, index) asks for: --predict, or --long-predict for
// a seeded --long-share percent of the requests.
uint32_t predict_of(int client, int index) {
  if (opt.long_share == 0) return static_cast<uint32_t>(opt.predict);
  uint64_t st = kai_rng_seed(opt.seed * 2654435761u + uint64_t(client) * 104729 + uint64_t(index) + 7);
  return static_cast<uint32_t>(kai_rng_next(&st) % 100 < uint64_t(opt.long_share) ? opt.long_predict : opt.predict);
}

int64_t submit(int client, int index) {
  uint32_t prompt[KAI_AI_MAX_PROMPT];
  make_prompt(client, index, prompt);
  kai_ai_submit req = ai_request(opt.model, prompt, static_cast<uint32_t>(opt.prompt), predict_of(client, index),
                                 opt.flags, opt.priority);
  return ai_submit(&req);
}

void report(int fd, int client, int index, int64_t id) {
  static uint32_t out[KAI_AI_MAX_OUTPUT];
  kai_ai_result res{};
  Record rec{};
  rec.client = client;
  rec.index = index;
  long n = id < 0 ? id : ai_wait(id, out, KAI_AI_MAX_OUTPUT, &res);
  if (n < 0) {
    rec.state = KAI_AI_FAILED;
    rec.error = static_cast<int32_t>(-n);
  } else {
    rec.state = res.state;
    rec.error = res.error;
    rec.n_prompt = res.n_prompt;
    rec.n_generated = res.n_generated;
    rec.queue_depth = res.queue_depth_at_submit;
    rec.worker = res.worker;
    rec.t_submit = res.t_submit_ns;
    rec.t_start = res.t_start_ns;
    rec.t_first = res.t_first_token_ns;
    rec.t_finish = res.t_finish_ns;
    rec.latency = ai_latency_ns_of(&res);
  }
  Message m{};
  m.kind = Message::Kind::Record;
  m.record = rec;
  write(fd, &m, sizeof(m));
}

// --die-after: this client leaves abruptly once request i is submitted.
bool dies_at(int client, int i) { return opt.die_after >= 0 && client < opt.die_clients && i == opt.die_after; }

void closed_loop_client(int fd, int client) {
  for (int i = 0; i < opt.requests; i++) {
    int64_t id = submit(client, i);
    if (dies_at(client, i)) exit(3);
    report(fd, client, i, id);
    if (opt.think_ms > 0) sleep((opt.think_ms + 9) / 10);
  }
}

// --inflight K: up to K of this client's requests are in the service at
// once. The oldest is collected (ai_wait blocks on it), then every other one
// that has finished meanwhile, then the window is filled up again. Requests
// that finish out of order wait for their turn to be collected, still
// holding their slot, so the window is K at most and K less those at least.
void inflight_client(int fd, int client) {
  static int64_t ids[1024];
  static bool collected[1024];
  int n = opt.requests;   // <= 1024, checked in parse_args
  int submitted = 0, oldest = 0;
  while (oldest < n) {
    while (submitted < n && submitted - oldest < opt.inflight) {
      ids[submitted] = submit(client, submitted);
      if (dies_at(client, submitted)) exit(3);
      submitted++;
    }
    report(fd, client, oldest, ids[oldest]);
    collected[oldest] = true;
    for (int i = oldest + 1; i < submitted; i++) {
      kai_ai_status s{};
      if (collected[i] || ids[i] < 0 || ai_query(ids[i], &s) != 0 || s.state <= KAI_AI_RUNNING) continue;
      report(fd, client, i, ids[i]);
      collected[i] = true;
    }
    while (oldest < n && collected[oldest]) oldest++;
  }
}

// Open loop: this client's share of a Poisson arrival stream. Requests are
// submitted on schedule; finished ones are collected in between.
void open_loop_client(int fd, int client, uint64_t t0) {
  uint64_t st = kai_rng_seed(opt.seed * 31 + uint64_t(client) + 1);
  double per_client_rate = opt.rate / opt.clients;
  static int64_t ids[1024];
  int n = opt.requests;   // <= 1024, checked in parse_args
  int collected = 0;
  double t = 0;
  for (int i = 0; i < n; i++) {
    // Exponential gap: -ln(U)/rate, with U uniform in (0, 1].
    double u = double((kai_rng_next(&st) >> 11) + 1) / 9007199254740992.0;
    t += -llm::log_d(u) / per_client_rate;   // the runtime's log (lib/llm_math.h)
    sleep_until_ns(t0 + static_cast<uint64_t>(t * 1e9));
    ids[i] = submit(client, i);
    if (dies_at(client, i)) exit(3);
    // Collect results that are already done, without blocking.
    while (collected < i) {
      kai_ai_status s{};
      if (ids[collected] >= 0 && ai_query(ids[collected], &s) == 0 && s.state <= KAI_AI_RUNNING) break;
      report(fd, client, collected, ids[collected]);
      collected++;
    }
  }
  for (; collected < n; collected++) report(fd, client, collected, ids[collected]);
}

void print_stat(const char* name, uint64_t* v, int n) {
  sort_u64(v, n);
  uint64_t sum = 0;
  for (int i = 0; i < n; i++) sum += v[i];
  printf("%-12s mean %8lu  p50 %8lu  p95 %8lu  max %8lu us\n", name, (unsigned long)(n ? sum / n / 1000 : 0),
         (unsigned long)(percentile(v, n, 50) / 1000), (unsigned long)(percentile(v, n, 95) / 1000),
         (unsigned long)(n ? v[n - 1] / 1000 : 0));
}

void parse_args(int argc, char** argv) {
  bool prompt_length_given = false;
  PromptChoice prompt;
  uint32_t seed = 1;
  CommandLine args("aibench", kUsage, argc, argv);
  while (args.next()) {
    const char* rate = nullptr;
    if (args.number("--prompt", 1, KAI_AI_MAX_PROMPT, &opt.prompt)) prompt_length_given = true;
    else if (args.number("--seed", 0, 0xffffffffu, &seed)) opt.seed = seed;
    else if (args.text("--rate", &rate)) {
      uint32_t milli;
      if (parse_milli(rate, 1000000, &milli) < 0 || milli == 0) {
        fprintf(2, "aibench: --rate: '%s' is not a rate from 0.001 to 1000 requests per second\n", rate);
        exit(2);
      }
      opt.rate = milli / 1000.0;
    }
    else if (args.flag("--csv", &opt.csv) || args.flag("--progress", &opt.progress) ||
             args.flag_bits("--int8", KAI_AI_INT8, &opt.flags) || args.flag("--align-tick", &opt.align_tick) ||
             args.model(opt.model) || args.prompt(&prompt) ||
             args.number("--long-predict", 1, KAI_AI_MAX_OUTPUT, &opt.long_predict) ||
             args.number("--long-share", 0, 100, &opt.long_share) || args.number("--clients", 1, 64, &opt.clients) ||
             args.number("--requests", 1, 1024, &opt.requests) ||
             args.number("--predict", 1, KAI_AI_MAX_OUTPUT, &opt.predict) ||
             args.number("--think", 0, 3600000, &opt.think_ms) ||
             args.number("--priority", 0, KAI_AI_MAX_PRIORITY, &opt.priority) ||
             args.number("--die-after", 0, 1024, &opt.die_after) ||
             args.number("--die-clients", 1, 64, &opt.die_clients) || args.number("--inflight", 1, 32, &opt.inflight))
      continue;
    else args.unknown();
  }
  if ((opt.long_predict > 0) != (opt.long_share > 0)) {
    fprintf(2, "aibench: --long-predict and --long-share go together (a share of 1 to 100 percent)\n");
    exit(2);
  }
  long n = read_prompt_choice("aibench", prompt, given, KAI_AI_MAX_PROMPT, "--prompt, --prompt-file or --stdin",
                              prompt_length_given);
  if (n < 0) exit(2);
  if (n > 0) {
    given_len = static_cast<uint32_t>(n);
    opt.prompt = static_cast<int>(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  parse_args(argc, argv);
  if (opt.inflight > 1 && (opt.rate > 0 || opt.think_ms > 0)) {
    fprintf(2, "aibench: --inflight %d is a closed loop without think time: not with --rate or --think\n",
            opt.inflight);
    return 2;
  }
  kai_ai_model_info mi{};
  if (ai_open_model("aibench", opt.model, 600, opt.model, &mi) < 0) return 1;
  vocab = mi.vocab_size;
  if (given_len > 0 && !prompt_ids_in_vocab("aibench", given, given_len, opt.model, vocab)) return 2;
  // Whether each request fits the model's context is known now, before
  // any client starts.
  uint32_t longest = uint32_t(opt.long_predict > opt.predict ? opt.long_predict : opt.predict);
  if (uint32_t(opt.prompt) + longest > mi.runtime_seq_len) {
    fprintf(2, "aibench: prompt (%d tokens) + %u to generate exceeds model %s's runtime_seq_len %u\n", opt.prompt,
            longest, opt.model, mi.runtime_seq_len);
    return 2;
  }
  // sleep() returns right after a timer tick: from here on, in exact mode,
  // every run with the same options does the same things at the same times.
  if (opt.align_tick) sleep(1);

  // Process layout: the clients are children of a "reaper" child, which
  // waits for all of them (so it notices any that die) and then says so; a
  // "sampler" child observes the service every 10 ms. All of them write
  // fixed-size messages into one pipe (writes of <= KAI_PIPE_BUF bytes are
  // atomic), and this process just reads it.
  int fds[2];
  if (pipe(fds) < 0) return 1;
  static kai_ai_info load_before, load_after;
  if (ai_info(&load_before) < 0) return 1;
  uint64_t t0 = clock_ns();
  int reaper = fork();
  if (reaper == 0) {
    int started = 0;
    static int pids[64];
    for (int c = 0; c < opt.clients; c++) {
      int pid = fork();
      if (pid < 0) {
        fprintf(2, "aibench: fork: %s\n", strerror(pid));
        break;
      }
      if (pid == 0) {
        if (opt.rate > 0) open_loop_client(fds[1], c, t0);
        else if (opt.inflight > 1) inflight_client(fds[1], c);
        else closed_loop_client(fds[1], c);
        exit(0);
      }
      pids[started++] = pid;
    }
    static char line[64 * 12 + 32];
    int len = snprintf(line, sizeof(line), "aibench: client pids");
    for (int i = 0; i < started; i++) len += snprintf(line + len, sizeof(line) - len, " %d", pids[i]);
    printf("%s\n", line);   // one write, so it does not interleave with other output
    Message m{};
    m.kind = Message::Kind::ClientsGone;
    m.unstarted = opt.clients - started;
    for (int i = 0; i < started; i++) {
      int status = 0;
      if (wait(&status) < 0) break;
      if (status != 0) m.dead++;
    }
    write(fds[1], &m, sizeof(m));
    exit(0);
  }
  int sampler = fork();
  if (sampler == 0) {
    close(fds[0]);
    static kai_ai_info info;
    for (;;) {
      if (ai_info(&info) < 0) exit(1);
      Message m{};
      m.kind = Message::Kind::Sample;
      m.sample = {clock_ns(), info.queued, info.running};
      if (write(fds[1], &m, sizeof(m)) != sizeof(m)) exit(0);
      sleep(1);
    }
  }
  close(fds[1]);

  int total = opt.clients * opt.requests;
  Record* recs = static_cast<Record*>(malloc(sizeof(Record) * (total + 1)));
  static Sample samples[100000];
  int n = 0, n_samples = 0, dead = 0, unstarted = 0;
  uint64_t t_end = 0;
  Message m;
  while (read_message(fds[0], &m)) {
    if (m.kind == Message::Kind::Record && n < total) {
      recs[n++] = m.record;
      if (opt.progress) fprintf(2, "aibench: progress %d/%d\n", n, total);
    } else if (m.kind == Message::Kind::Sample && n_samples < 100000) {
      samples[n_samples++] = m.sample;
    } else if (m.kind == Message::Kind::ClientsGone) {
      dead = m.dead;
      unstarted = m.unstarted;
      t_end = clock_ns();
      kill(sampler);   // its end of the pipe closes: the loop ends at EOF
    }
  }
  close(fds[0]);
  if (t_end == 0) t_end = clock_ns();
  while (wait(nullptr) >= 0) {}

  uint64_t* e2e = static_cast<uint64_t*>(malloc(8 * (n + 1)));
  uint64_t* qw = static_cast<uint64_t*>(malloc(8 * (n + 1)));
  uint64_t* ttft = static_cast<uint64_t*>(malloc(8 * (n + 1)));
  uint64_t* tpot = static_cast<uint64_t*>(malloc(8 * (n + 1)));
  int done = 0, ntpot = 0, not_done = 0;
  uint64_t tokens = 0, first_submit = ~0ull, last_finish = 0, sum_e2e = 0;
  if (opt.csv)
    printf("csv,client,index,state,error,prompt,generated,queue_depth,worker,t_submit_ns,t_start_ns,t_first_ns,t_finish_ns\n");
  for (int i = 0; i < n; i++) {
    const Record& x = recs[i];
    if (opt.csv)
      printf("csv,%d,%d,%s,%d,%u,%u,%u,%u,%lu,%lu,%lu,%lu\n", x.client, x.index, ai_state_name(x.state), x.error,
             x.n_prompt, x.n_generated, x.queue_depth, x.worker, (unsigned long)x.t_submit,
             (unsigned long)x.t_start, (unsigned long)x.t_first, (unsigned long)x.t_finish);
    if (x.state != KAI_AI_DONE) {
      not_done++;
      continue;
    }
    e2e[done] = x.latency.total;
    qw[done] = x.latency.queue;
    ttft[done] = x.latency.ttft;
    sum_e2e += e2e[done];
    if (x.n_generated > 1) tpot[ntpot++] = x.latency.tpot;
    tokens += x.n_generated;
    if (x.t_submit < first_submit) first_submit = x.t_submit;
    if (x.t_finish > last_finish) last_finish = x.t_finish;
    done++;
  }
  double span_s = done ? double(last_finish - first_submit) / 1e9 : 0;
  printf("aibench: model %s, %d clients x %d requests, prompt %d, predict %d, %s", opt.model, opt.clients,
         opt.requests, opt.prompt, opt.predict, opt.rate > 0 ? "open loop" : "closed loop");
  if (opt.rate > 0) printf(" at %.2f req/s", opt.rate);
  else if (opt.think_ms) printf(", think %d ms", opt.think_ms);
  else if (opt.inflight > 1) printf(", %d in flight per client", opt.inflight);
  printf("%s\n", opt.flags & KAI_AI_INT8 ? ", int8 activations" : "");
  printf("requests: %d done, %d failed or cancelled, %d never reported, %d clients died; wall %.3f s\n", done,
         not_done, total - n, dead, double(t_end - t0) / 1e9);
  if (unstarted > 0) printf("clients: %d of %d could not be started (fork failed)\n", unstarted, opt.clients);
  if (done > 0 && span_s > 0) {
    double throughput = done / span_s;
    double mean_latency_s = double(sum_e2e) / done / 1e9;
    printf("throughput: %.3f req/s, %.2f tokens/s\n", throughput, tokens / span_s);
    print_stat("end-to-end", e2e, done);
    print_stat("queue wait", qw, done);
    print_stat("TTFT", ttft, done);
    print_stat("TPOT", tpot, ntpot);
    // Each sample stands for the time from halfway after the previous one to
    // halfway before the next (a change between two samples happened, on
    // average, halfway); only the time between the first submit and the last
    // finish counts (the window throughput is measured over). Weighting by
    // time matters: the sampler competes with the workers for the harts, so
    // samples are sparser when the system is busy.
    double area_queued = 0, area_in_system = 0, covered = 0;
    uint64_t max_gap = 0;
    for (int i = 0; i < n_samples; i++) {
      uint64_t lo = i > 0 ? samples[i - 1].t + (samples[i].t - samples[i - 1].t) / 2 : 0;
      uint64_t hi = i + 1 < n_samples ? samples[i].t + (samples[i + 1].t - samples[i].t) / 2 : ~0ull;
      uint64_t a = lo > first_submit ? lo : first_submit;
      uint64_t b = hi < last_finish ? hi : last_finish;
      if (i + 1 < n_samples && a < b && samples[i + 1].t - samples[i].t > max_gap)
        max_gap = samples[i + 1].t - samples[i].t;
      if (b <= a) continue;
      double dt = double(b - a);
      area_queued += dt * samples[i].queued;
      area_in_system += dt * (samples[i].queued + samples[i].running);
      covered += dt;
    }
    double sampler_queued = covered > 0 ? area_queued / covered : 0;
    double sampler_in_system = covered > 0 ? area_in_system / covered : 0;
    // The kernel's load meter over the same window. Outside it the service
    // is empty (all of this run's requests come after the first submit and
    // end by the last finish) and adds nothing, so the sums' growth between
    // a reading before the run and one taken after a tick past the last
    // finish, divided by the window, is the mean inside it (to within the
    // tick at either edge). The sampler process above can read low: it
    // looks only when the scheduler gives it a hart, and the requests use
    // the same harts, so when it looks depends on what it looks at. The
    // timer interrupt comes whatever runs (kernel/ai/load_meter.h).
    for (int tries = 0; tries < 100 && load_after.load_time_ns <= last_finish; tries++) {
      if (tries > 0) sleep(1);
      if (ai_info(&load_after) < 0) break;
    }
    double window = double(last_finish - first_submit);
    double mean_queued = double(load_after.load_queued_ns - load_before.load_queued_ns) / window;
    double mean_in_system = double(load_after.load_in_system_ns - load_before.load_in_system_ns) / window;
    printf("mean queue length %.3f, mean in system %.3f (load meter: %lu samples by hart 0's timer)\n", mean_queued,
           mean_in_system, (unsigned long)(load_after.load_samples - load_before.load_samples));
    printf("sampler process: mean queue length %.3f, mean in system %.3f (%d samples over %.1f%% of the run, "
           "largest gap %lu ms)\n",
           sampler_queued, sampler_in_system, n_samples, 100.0 * covered / window, (unsigned long)(max_gap / 1000000));
    // With --csv, the samples where the number in the system changed (and
    // the last one): enough to draw it over time.
    if (opt.csv) {
      printf("sample,t_ns,queued,running\n");
      for (int i = 0; i < n_samples; i++)
        if (i == 0 || i + 1 == n_samples || samples[i].queued != samples[i - 1].queued ||
            samples[i].running != samples[i - 1].running)
          printf("sample,%lu,%u,%u\n", (unsigned long)samples[i].t, samples[i].queued, samples[i].running);
    }
    printf("little: L_measured=%.3f lambda=%.4f W=%.4f lambdaW=%.3f\n", mean_in_system, throughput,
           mean_latency_s, throughput * mean_latency_s);
  }
  return done == total ? 0 : 1;
}
