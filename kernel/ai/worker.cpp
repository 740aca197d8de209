// Worker kernel threads: the iteration loop of the AI service.
//
// A worker keeps up to max_batch requests RUNNING at once and advances all
// of them together, one *iteration* at a time (iteration-level scheduling,
// as in Orca and vLLM):
//
//   1. under the lock: stop cancelled requests, admit queued ones while
//      there is room (pick_next() applies the policy), and plan the batch:
//      one decode token for every request that is generating, then prefill
//      chunks of admitted prompts until the token budget is used up
//      (chunked prefill, as in Sarathi-Serve: a long prompt is spread over
//      several iterations instead of stalling everyone's next token);
//   2. without the lock: one batched forward pass per model (and activation
//      kind), reading every weight once for all the batch's tokens;
//   3. under the lock: publish each new token, finish what is complete.
//
// So a cancel, a new arrival or an exit takes effect at the next iteration
// boundary: within one forward pass of at most `budget` tokens.
// Locking: ai::lock only around steps 1 and 3; the forward pass runs
// unlocked because only this worker touches a Running request's session.
#include "requests.h"
#include "models.h"
#include "engine.h"
#include "worker.h"
#include "../proc.h"
#include "../trap.h"
#include "../printf.h"
#include "../riscv.h"
#include <new>

namespace ai {

namespace {

// One running request in a worker's batch.
struct BatchSlot {
  Request* request;         // nullptr: this batch slot is empty
  EngineSession* session;   // this slot's session (index = slot index)
  EngineModel* model;       // immutable once the model is READY
  bool int8;
  bool fresh;               // admitted this iteration: its session must be begun
  bool sampled;             // next tokens come from the sampler, not the argmax
  llm::SamplingParams params;
  llm::Rng rng;             // the request's generator, seeded at admission
  // The plan for this iteration (items[first .. first+count) of the batch):
  uint32_t first, count;
  bool prefill;             // a prompt chunk (else one decode token)
  int32_t error;            // positive KAI_E*: fail the request at publish
};

class Worker {
 public:
  explicit Worker(uint32_t id) : id_(id) {
    for (uint32_t i = 0; i < kMaxBatch; i++) {
      slots_[i] = BatchSlot{};
      slots_[i].session = engine_session(id, i);
    }
  }

  [[noreturn]] void run() {
    for (;;) {
      {
        SpinlockGuard guard(lock);
        retire_cancelled();
        admit_new();
        while (running() == 0) {
          sleep(&queue_nonempty_chan, lock);
          admit_new();
        }
        plan();
      }
      // Computing for seconds with the timer masked would keep this hart
      // from every other thread (docs/kernel.md, "Preemption"): never allowed.
      if (!riscv::intr_get()) panic("ai-worker%u: about to compute with interrupts off", id_);
      begin_sessions();
      forward_all();
      sample_all();
      SpinlockGuard guard(lock);
      publish();
    }
  }

 private:
  uint32_t running() const {
    uint32_t n = 0;
    for (const auto& s : slots_) n += s.request != nullptr;
    return n;
  }

  void retire_cancelled() {
    for (auto& s : slots_) {
      if (s.request && s.request->cancel_requested) {
        stop_cancelled(s.request);   // frees the slot if its owner is gone
        s.request = nullptr;
      }
    }
  }

  void admit_new() {
    for (auto& s : slots_) {
      if (running() >= max_batch) return;
      if (s.request != nullptr) continue;
      Request* r = pick_next();
      if (r == nullptr) return;
      admit(r, id_);
      s.request = r;
      s.model = models[r->model].engine;
      s.int8 = (r->flags & KAI_AI_INT8) != 0;
      s.fresh = true;
      s.error = 0;
    }
  }

  // Chooses this iteration's tokens: first one decode token for every
  // request that is generating (so a running request's next token never
  // waits behind someone's prompt), then prompt chunks in admission order
  // until the budget is spent. Lock held: reads prefilled/n_generated.
  void plan() {
    uint32_t budget = token_budget;
    for (auto& s : slots_) {
      s.count = 0;
      Request* r = s.request;
      if (r && r->prefilled == r->prompt_len) {
        s.prefill = false;
        s.count = 1;
        budget--;
      }
    }
    for (auto& s : slots_) {
      Request* r = s.request;
      if (r == nullptr || r->prefilled == r->prompt_len || budget == 0) continue;
      uint32_t left = r->prompt_len - r->prefilled;
      s.prefill = true;
      s.count = left < budget ? left : budget;
      budget -= s.count;
    }
    // Item lists: grouped by (model, activation kind), a request's tokens
    // consecutive, because one forward pass serves one model's weights.
    n_items_ = 0;
    for (auto& s : slots_) {
      Request* r = s.request;
      if (r == nullptr || s.count == 0) continue;
      s.first = n_items_;
      for (uint32_t i = 0; i < s.count; i++) {
        BatchToken& t = items_[n_items_++];
        t.session = s.session;
        t.prefill = s.prefill;
        t.token = s.prefill ? r->prompt[r->prefilled + i] : r->output[r->n_generated - 1];
        // The classifier runs for a decode token and for the last prompt token.
        t.want_next = !s.prefill || r->prefilled + i + 1 == r->prompt_len;
        t.next = 0;
      }
    }
  }

  void begin_sessions() {
    for (auto& s : slots_) {
      if (s.request == nullptr || !s.fresh) continue;
      s.fresh = false;
      if (engine_session_begin(s.session, s.model, s.int8).is_error()) s.error = KAI_ENOMEM;
      set_sampling(s, s.request->sampling);
    }
  }

  // The ABI's thousandths become the sampler's floats here, in a kernel
  // thread (system calls do no floating point).
  static void set_sampling(BatchSlot& s, const kai_ai_sampling& a) {
    llm::SamplingParams p;
    p.temperature = float(a.temperature_milli) / 1000.0f;
    p.top_k = a.top_k;
    p.top_p = a.top_p_milli == 0 ? 1.0f : float(a.top_p_milli) / 1000.0f;
    p.min_p = float(a.min_p_milli) / 1000.0f;
    p.repeat_penalty = a.repeat_penalty_milli == 0 ? 1.0f : float(a.repeat_penalty_milli) / 1000.0f;
    p.repeat_last_n = a.repeat_last_n == 0 ? 64 : a.repeat_last_n;
    s.params = p;
    s.rng = llm::rng_from_seed(a.seed);
    s.sampled = !p.greedy() || p.repeat_penalty != 1.0f;
  }

  // For sampled requests, replace the argmax of each new token by a draw.
  // No lock: the prompt and output of a Running request change only here
  // and in publish(), both on this worker.
  void sample_all() {
    for (auto& s : slots_) {
      Request* r = s.request;
      if (r == nullptr || s.count == 0 || s.error || !s.sampled) continue;
      BatchToken& last = items_[s.first + s.count - 1];
      if (!last.want_next) continue;
      // The last repeat_last_n tokens of prompt + output, oldest first.
      static constexpr uint32_t kWindow = 256;
      uint32_t recent[kWindow];
      uint32_t total = r->prompt_len + r->n_generated;
      uint32_t want = s.params.repeat_last_n < kWindow ? s.params.repeat_last_n : kWindow;
      uint32_t n = total < want ? total : want;
      for (uint32_t i = 0; i < n; i++) {
        uint32_t at = total - n + i;
        recent[i] = at < r->prompt_len ? r->prompt[at] : r->output[at - r->prompt_len];
      }
      auto next = engine_sample(id_, s.session, s.params, s.rng, recent, n);
      if (next.is_error()) s.error = static_cast<int32_t>(next.error());
      else last.next = next.value();
    }
  }

  // One pass per (model, kind) group. Slots are visited in order, and all
  // items of one group are gathered into a contiguous run first.
  void forward_all() {
    bool done[kMaxBatch] = {};
    for (uint32_t a = 0; a < kMaxBatch; a++) {
      BatchSlot& lead = slots_[a];
      if (lead.request == nullptr || lead.count == 0 || done[a] || lead.error) continue;
      uint32_t n = 0;
      uint32_t members[kMaxBatch];
      uint32_t n_members = 0;
      for (uint32_t b = a; b < kMaxBatch; b++) {
        BatchSlot& s = slots_[b];
        if (s.request == nullptr || s.count == 0 || done[b] || s.error) continue;
        if (s.model != lead.model || s.int8 != lead.int8) continue;
        for (uint32_t i = 0; i < s.count; i++) group_[n++] = items_[s.first + i];
        members[n_members++] = b;
        done[b] = true;
      }
      auto result = engine_forward(id_, lead.model, lead.int8, group_, n);
      // Copy the outputs back to the slots' own item ranges.
      uint32_t at = 0;
      for (uint32_t m = 0; m < n_members; m++) {
        BatchSlot& s = slots_[members[m]];
        for (uint32_t i = 0; i < s.count; i++) items_[s.first + i].next = group_[at++].next;
        if (result.is_error()) s.error = static_cast<int32_t>(result.error());
      }
    }
  }

  // Lock held. Every request with tokens in this iteration moves forward.
  void publish() {
    uint32_t batch_requests = 0;
    for (const auto& s : slots_) batch_requests += s.request != nullptr && (s.count > 0 || s.error);
    uint64_t now = clock_ns();
    for (auto& s : slots_) {
      Request* r = s.request;
      if (r == nullptr) continue;
      if (s.error) {
        if (r->orphaned || r->cancel_requested) stop_cancelled(r);
        else fail(r, s.error);
        s.request = nullptr;
        continue;
      }
      if (s.count == 0) continue;
      r->iterations++;
      r->batch_sum += batch_requests;
      if (s.prefill) r->prefilled += s.count;
      const BatchToken& last = items_[s.first + s.count - 1];
      if (!last.want_next) continue;   // a prompt chunk that is not the last
      if (r->n_generated == 0) r->t_first = now;
      if (r->n_generated < kMaxOutput) {
        r->output_ns[r->n_generated] = now;
        r->output[r->n_generated++] = last.next;
      }
      r->t_last = now;
      if (uint32_t why = stop_reason(*r); why != KAI_AI_FINISH_NONE) {
        complete(r, why);
        s.request = nullptr;
      } else {
        wakeup(r);   // a streaming reader (ai_read) sees the token now
      }
    }
    counters.iterations++;
    counters.batch_requests += batch_requests;
    counters.batch_tokens += n_items_;
  }

  uint32_t id_;
  BatchSlot slots_[kMaxBatch];
  BatchToken items_[kMaxBudget];   // this iteration's tokens, slot by slot
  BatchToken group_[kMaxBudget];   // one (model, kind) group's tokens, for one pass
  uint32_t n_items_ = 0;
};

// Workers live in static storage: a Worker holds two token arrays, too big
// for a kernel stack.
alignas(Worker) static unsigned char worker_storage[kMaxWorkers][sizeof(Worker)];

void worker_main(void* arg) {
  uint32_t me = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(arg));
  Worker* w = new (worker_storage[me]) Worker(me);
  w->run();
}

}  // namespace

ErrorOr<void> start_worker(uint32_t id) {
  char name[16] = "ai-worker0";
  name[9] = static_cast<char>('0' + id);
  TRY(kthread_create(name, worker_main, reinterpret_cast<void*>(static_cast<uintptr_t>(id))));
  return {};
}

}  // namespace ai
