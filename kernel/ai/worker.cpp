// Worker kernel threads: take the next request, run prefill and decode
// without holding the lock, publish each token as it is known.
#include "requests.h"
#include "models.h"
#include "../proc.h"
#include "../trap.h"
#include "../printf.h"
#include "../riscv.h"
#include "../fdt.h"
#include "../boot.h"

namespace ai {

static int worker_count;

namespace {

// Publishes tokens into the request's slot under the lock, so ai_query sees
// progress and a cancel takes effect at the next token.
class SlotSink final : public TokenSink {
 public:
  explicit SlotSink(Request* r) : r_(r) {}
  bool on_token(uint32_t token) override {
    SpinlockGuard guard(lock);
    if (r_->n_generated == 0) r_->t_first = clock_ns();
    if (r_->n_generated < kMaxOutput) r_->output[r_->n_generated++] = token;
    return !r_->cancel_requested;
  }
  bool keep_going() override {
    SpinlockGuard guard(lock);
    return !r_->cancel_requested;
  }

 private:
  Request* r_;
};

void worker_main(void* arg) {
  uint32_t me = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(arg));
  SessionMemory memory;   // this worker's session memory, kept between requests
  for (;;) {
    Request* r;
    EngineModel* engine;
    {
      SpinlockGuard guard(lock);
      while ((r = pick_next()) == nullptr) sleep(&queue_nonempty_chan, lock);
      r->state = SlotState::Running;
      r->worker = me;
      r->t_start = clock_ns();
      engine = models[r->model].engine;
    }
    // The slot cannot be freed while Running (only this worker finishes it),
    // so its prompt and sizes are stable without the lock.
    // Computing for seconds with the timer masked would keep this hart from
    // every other thread (see kthread_start() in proc.cpp): never allowed.
    if (!riscv::intr_get()) panic("ai-worker%u: about to compute with interrupts off", me);
    SlotSink sink(r);
    auto result = engine_generate(engine, r->prompt, r->prompt_len, r->n_predict,
                                  (r->flags & KAI_AI_INT8) != 0, sink, memory);
    SpinlockGuard guard(lock);
    if (result.is_error())
      finish(r, KAI_AI_FAILED, static_cast<int32_t>(result.error()));
    else if (r->cancel_requested)
      finish(r, KAI_AI_CANCELLED, KAI_ECANCELED);
    else
      finish(r, KAI_AI_DONE, 0);
  }
}

}  // namespace

int n_workers() { return worker_count; }

void start(int workers) {
  if (workers < 1) workers = 1;
  if (workers > kMaxWorkers) workers = kMaxWorkers;
  int64_t quota = bootarg_int(g_boot, "ai.max_per_process", kDefaultMaxPerProcess);
  if (quota >= 1 && quota <= kQueueCapacity) {
    max_per_process = static_cast<uint32_t>(quota);
  } else {
    kprintf("ai: ai.max_per_process=%ld out of range 1..%d; using %u\n", quota, kQueueCapacity,
            max_per_process);
  }
  char name[16];
  if (bootarg_str(g_boot, "ai.policy", name, sizeof name) && !policy_from_name(name, &policy))
    kprintf("ai: unknown ai.policy=%s (fcfs, sjf or priority); using %s\n", name, policy_name(policy));
  int64_t aging_ms = bootarg_int(g_boot, "ai.aging_ms", kDefaultAgingMs);
  if (aging_ms >= 1 && aging_ms <= 3600000) aging_ns = uint64_t(aging_ms) * 1000000;
  else kprintf("ai: ai.aging_ms=%ld out of range 1..3600000; using %lu\n", aging_ms, aging_ns / 1000000);
  start_loader();
  for (int i = 0; i < workers; i++) {
    char name[16] = "ai-worker0";
    name[9] = static_cast<char>('0' + i);
    auto pid = kthread_create(name, worker_main, reinterpret_cast<void*>(static_cast<uintptr_t>(i)));
    if (pid.is_error()) {
      kprintf("ai: cannot start worker %d (error %d)\n", i, static_cast<int>(pid.error()));
      continue;
    }
    SpinlockGuard guard(lock);
    worker_count++;
  }
}

void process_exited(int pid) {
  SpinlockGuard guard(lock);
  for (auto& r : slots) {
    if (r.state == SlotState::Free || r.owner_pid != pid) continue;
    switch (r.state) {
      case SlotState::Queued:
        remove_from_queue(&r);
        counters.cancelled++;
        free_slot(&r);
        break;
      case SlotState::Running:
        // The worker owns the slot until it notices; it frees it then.
        r.cancel_requested = true;
        r.orphaned = true;
        break;
      case SlotState::Finished:
        free_slot(&r);
        break;
      case SlotState::Free:
        break;
    }
  }
}

}  // namespace ai
