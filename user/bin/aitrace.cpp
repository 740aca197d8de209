// aitrace: the AI service's trace ring (<kai/ai_trace.h>) as text.
//   aitrace                      prints every event held, oldest first
//   aitrace --from SEQ           ... from event number SEQ on
//   aitrace start [CLASSES]      starts recording: a comma list of requests,
//                                iterations, tokens, kv, parts, load,
//                                samples, or all (default: all but parts
//                                and samples)
//   aitrace stop | clear         stops recording | forgets every event
//   aitrace check                checks the kernel's answers to bad reads
// One line per event, which tools/trace.py reads back from a transcript:
//   ev SEQ T_NS INSTRET HART NAME [req=ID] ARG=VALUE ...
// framed by "aitrace: version=..." and "aitrace: end events=N dropped=D".
// Every command needs the console: run it in the foreground, or from
// /etc/rc; otherwise the kernel answers EPERM.
#include "kai.h"
#include <kai/ai_trace.h>

namespace {

struct EventName {
  uint16_t type;
  const char* name;
  const char* args[5];
};

constexpr EventName kNames[] = {
#define AITRACE_NAME_(number, name, cls, a0, a1, a2, a3, a4) {number, #name, {a0, a1, a2, a3, a4}},
    KAI_TRACE_EVENTS(AITRACE_NAME_)
#undef AITRACE_NAME_
};

const EventName* name_of(uint16_t type) {
  for (const auto& n : kNames)
    if (n.type == type) return &n;
  return nullptr;
}

struct ClassName {
  const char* name;
  uint32_t bit;
};
constexpr ClassName kClasses[] = {
    {"requests", KAI_TRACE_CLASS_REQUESTS}, {"iterations", KAI_TRACE_CLASS_ITERATIONS},
    {"tokens", KAI_TRACE_CLASS_TOKENS},     {"kv", KAI_TRACE_CLASS_KV},
    {"parts", KAI_TRACE_CLASS_PARTS},       {"load", KAI_TRACE_CLASS_LOAD},
    {"samples", KAI_TRACE_CLASS_SAMPLES},   {"all", KAI_TRACE_CLASS_ALL},
};

int usage(const char* unexpected = nullptr) {
  if (unexpected) fprintf(2, "aitrace: unexpected argument '%s'\n", unexpected);
  fprintf(2, "usage: aitrace [--from SEQ] | start [CLASSES] | stop | clear | check\n"
             "  CLASSES: a comma list of requests,iterations,tokens,kv,parts,load,samples or all\n");
  return 2;
}

int failed(const char* what, long r) {
  fprintf(2, "aitrace: %s: %s%s\n", what, strerror(int(r)),
          r == -KAI_EPERM ? " (only init or the console's foreground process may)" : "");
  return 1;
}

// "requests,kv" -> its mask; 0 for a bad list (the bad word is printed).
uint32_t parse_classes(const char* list) {
  uint32_t mask = 0;
  char word[16];
  for (const char* p = list;;) {
    const char* end = p;
    while (*end && *end != ',') end++;
    size_t n = size_t(end - p);
    bool found = false;
    if (n > 0 && n < sizeof word) {
      memcpy(word, p, n);
      word[n] = 0;
      for (const auto& c : kClasses)
        if (!strcmp(word, c.name)) mask |= c.bit, found = true;
    }
    if (!found) {
      fprintf(2, "aitrace: start: '%.*s' is not a class (requests, iterations, tokens, kv, parts, load, samples, all)\n",
              int(n), p);
      return 0;
    }
    if (*end == 0) return mask;
    p = end + 1;
  }
}

// Output goes out in big writes: one line per event would be one system
// call per event.
char out_buf[4096];
size_t out_len;
void flush() {
  if (out_len) write(1, out_buf, out_len);
  out_len = 0;
}
void put_line(const char* line, int n) {
  if (out_len + size_t(n) > sizeof out_buf) flush();
  memcpy(out_buf + out_len, line, size_t(n));
  out_len += size_t(n);
}

void print_event(const kai_trace_event& e) {
  char line[256];
  const EventName* n = name_of(e.type);
  int len = snprintf(line, sizeof line, "ev %lu %lu %lu %u ", (unsigned long)e.seq, (unsigned long)e.t_ns,
                     (unsigned long)e.instret, e.hart);
  if (n) len += snprintf(line + len, sizeof line - len, "%s", n->name);
  else len += snprintf(line + len, sizeof line - len, "TYPE%u", e.type);
  if (e.request) len += snprintf(line + len, sizeof line - len, " req=%lu", (unsigned long)e.request);
  for (int i = 0; i < 5; i++) {
    if (n && n->args[i][0]) len += snprintf(line + len, sizeof line - len, " %s=%u", n->args[i], e.arg[i]);
    else if (!n && e.arg[i]) len += snprintf(line + len, sizeof line - len, " arg%d=%u", i, e.arg[i]);
  }
  len += snprintf(line + len, sizeof line - len, "\n");
  put_line(line, len);
}

kai_trace_event events[256];

int print_from(uint64_t from) {
  kai_ai_trace_read rq{};
  rq.cursor = from;
  rq.events = events;
  rq.capacity = 256;
  uint64_t total = 0, dropped = 0;
  bool header = false;
  for (;;) {
    long n = ai_control(KAI_AI_CTL_TRACE_READ, uint64_t(&rq));
    if (n < 0) return failed("read", n);
    if (!header) {
      printf("aitrace: version=%u ring=%u classes=0x%x next=%lu\n", rq.version, rq.ring_events, rq.classes,
             (unsigned long)rq.next_seq);
      if (rq.version != KAI_TRACE_VERSION) {
        fprintf(2, "aitrace: the kernel's trace is version %u, this program reads version %u\n", rq.version,
                KAI_TRACE_VERSION);
        return 1;
      }
      header = true;
    }
    dropped += rq.dropped;
    for (long i = 0; i < n; i++) print_event(events[i]);
    total += uint64_t(n);
    // Stop at the end as it was when we started: a busy service would
    // otherwise keep us printing forever.
    if (n == 0 || rq.cursor >= rq.next_seq) break;
  }
  flush();
  printf("aitrace: end events=%lu dropped=%lu\n", (unsigned long)total, (unsigned long)dropped);
  return 0;
}

// The kernel's answers to bad reads. Prints one line per check and
// "aitrace check: N passed, M failed".
int check() {
  int passed = 0, failures = 0;
  auto expect = [&](const char* what, long got, long want) {
    bool ok = got == want;
    printf("%s %s: got %ld, want %ld\n", ok ? "ok" : "FAIL", what, got, want);
    ok ? passed++ : failures++;
  };
  kai_ai_trace_read rq{};
  rq.events = events;
  rq.capacity = 4;
  expect("struct pointer in the kernel", ai_control(KAI_AI_CTL_TRACE_READ, 0x80200000ull), -KAI_EFAULT);
  expect("null struct pointer", ai_control(KAI_AI_CTL_TRACE_READ, 0), -KAI_EFAULT);
  // One event held (a start records one), so a read has something to copy.
  expect("stop", ai_control(KAI_AI_CTL_TRACE_STOP, 0), 0);
  expect("clear", ai_control(KAI_AI_CTL_TRACE_CLEAR, 0), 0);
  expect("start", ai_control(KAI_AI_CTL_TRACE_START, KAI_TRACE_CLASS_LOAD), 0);
  kai_ai_trace_read bad = rq;
  bad.events = reinterpret_cast<kai_trace_event*>(0x80200000ull);
  expect("event buffer in the kernel", ai_control(KAI_AI_CTL_TRACE_READ, uint64_t(&bad)), -KAI_EFAULT);
  bad = rq;
  bad.events = reinterpret_cast<kai_trace_event*>(0x10);
  expect("event buffer at address 16", ai_control(KAI_AI_CTL_TRACE_READ, uint64_t(&bad)), -KAI_EFAULT);
  bad = rq;
  bad.capacity = 0;
  expect("capacity 0", ai_control(KAI_AI_CTL_TRACE_READ, uint64_t(&bad)), -KAI_EINVAL);
  bad = rq;
  bad.reserved[1] = 1;
  expect("reserved field set", ai_control(KAI_AI_CTL_TRACE_READ, uint64_t(&bad)), -KAI_EINVAL);
  expect("unknown class bit", ai_control(KAI_AI_CTL_TRACE_START, 0x1000), -KAI_EINVAL);
  // A cursor behind the oldest event: fill the ring past its capacity with
  // STARTED events (each start records one), then read from 0.
  expect("stop", ai_control(KAI_AI_CTL_TRACE_STOP, 0), 0);
  expect("clear", ai_control(KAI_AI_CTL_TRACE_CLEAR, 0), 0);
  rq.cursor = 0;
  expect("empty after clear", ai_control(KAI_AI_CTL_TRACE_READ, uint64_t(&rq)), 0);
  uint32_t ring = rq.ring_events;
  for (uint32_t i = 0; i < ring + 5; i++) ai_control(KAI_AI_CTL_TRACE_START, KAI_TRACE_CLASS_LOAD);
  ai_control(KAI_AI_CTL_TRACE_STOP, 0);
  rq.cursor = 0;
  rq.capacity = 1;
  long n = ai_control(KAI_AI_CTL_TRACE_READ, uint64_t(&rq));
  expect("one event read from a cursor behind the oldest", n, 1);
  expect("dropped events reported", long(rq.dropped), 5);
  expect("the first event read is the oldest held", long(events[0].seq), 5);
  expect("cursor moved past it", long(rq.cursor), 6);
  printf("aitrace check: %d passed, %d failed\n", passed, failures);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) return print_from(0);
  const char* cmd = argv[1];
  if (!strcmp(cmd, "--from")) {
    if (argc == 2) {
      fprintf(2, "aitrace: --from: missing event number\n");
      return usage();
    }
    if (argc > 3) return usage(argv[3]);
    char* end;
    unsigned long seq = strtoul(argv[2], &end, 10);
    if (!*argv[2] || *end) {
      fprintf(2, "aitrace: --from: '%s' is not an event number\n", argv[2]);
      return 2;
    }
    return print_from(seq);
  }
  if (!strcmp(cmd, "start")) {
    if (argc > 3) return usage(argv[3]);
    uint32_t mask = argc == 3 ? parse_classes(argv[2]) : KAI_TRACE_CLASS_DEFAULT;
    if (mask == 0) return 2;
    long r = ai_control(KAI_AI_CTL_TRACE_START, mask);
    return r < 0 ? failed("start", r) : 0;
  }
  if (argc > 2) return usage(argv[2]);
  if (!strcmp(cmd, "stop")) {
    long r = ai_control(KAI_AI_CTL_TRACE_STOP, 0);
    return r < 0 ? failed("stop", r) : 0;
  }
  if (!strcmp(cmd, "clear")) {
    long r = ai_control(KAI_AI_CTL_TRACE_CLEAR, 0);
    return r < 0 ? failed("clear", r) : 0;
  }
  if (!strcmp(cmd, "check")) return check();
  fprintf(2, "aitrace: unknown command '%s'\n", cmd);
  return usage();
}
