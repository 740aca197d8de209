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
  const llm::KvPool* pool;  // its model's KV block pool (nullptr: contiguous KV)
  bool fresh;               // admitted this iteration: its session must be begun
  bool sampled;             // next tokens come from the sampler, not the argmax
  llm::SamplingParams params;
  // The plan for this iteration (items[first .. first+count) of the batch):
  uint32_t first, count;
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

  // Admission, under the policy (pick_next) and by free KV blocks: a
  // request comes in only if the blocks for its whole context (its prompt,
  // less any cached prefix) are free or evictable; otherwise it stays queued
  // and nobody behind it is admitted this iteration (no overtaking by size).
  void admit_new() {
    for (auto& s : slots_) {
      if (running() >= max_batch) return;
      if (s.request != nullptr) continue;
      Request* r = pick_next();
      if (r == nullptr) return;
      if (!kv_could_fit(r->model, r->prompt_len + r->n_predict)) {
        fail(r, KAI_ENOMEM);   // bigger than the whole KV pool: it could never run
        continue;
      }
      if (!kv_admit(r, context_len(*r))) return;
      admit(r, id_);
      s.request = r;
      s.model = models[r->model].engine;
      s.pool = kv_pool(r->model);
      s.int8 = (r->flags & KAI_AI_INT8) != 0;
      s.fresh = true;
      s.error = 0;
    }
  }

  // The running request admitted last (vLLM's choice of victim: it has
  // waited least and holds the fewest computed tokens, usually).
  BatchSlot* youngest() {
    BatchSlot* v = nullptr;
    for (auto& s : slots_)
      if (s.request && (!v || s.request->t_start > v->request->t_start)) v = &s;
    return v;
  }

  // Chooses this iteration's tokens. Each running request has
  // left = context_len - fed tokens to feed: 1 means it is generating (one
  // decode token, want_next), more means a prompt (or, after a preemption,
  // its whole context) still to go in. Decode tokens first (a running
  // request's next token never waits behind someone's prompt), then chunks
  // in admission order until the budget is spent. Then each planned request
  // gets KV blocks for its new positions; when none are left, the youngest
  // running request is preempted (its blocks freed, recomputed later) until
  // the blocks suffice. Lock held.
  void plan() {
    uint32_t budget = token_budget;
    for (auto& s : slots_) {
      s.count = 0;
      if (s.request && context_len(*s.request) - s.request->fed == 1) {
        s.count = 1;
        budget--;
      }
    }
    for (auto& s : slots_) {
      Request* r = s.request;
      if (r == nullptr || s.count > 0 || budget == 0) continue;
      uint32_t left = context_len(*r) - r->fed;
      s.count = left < budget ? left : budget;
      budget -= s.count;
    }
    for (auto& s : slots_) {
      while (s.request && s.count > 0 && !kv_grow(s.request, s.request->fed + s.count)) {
        BatchSlot* victim = youngest();
        preempt(victim->request);
        victim->request = nullptr;
        victim->count = 0;
      }
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
        uint32_t at = r->fed + i;
        t.session = s.session;
        t.prefill = at < r->prompt_len;
        t.token = context_token(*r, at);
        // The classifier runs for the last token of the context only.
        t.want_next = at + 1 == context_len(*r);
        t.next = 0;
      }
    }
  }

  void begin_sessions() {
    for (auto& s : slots_) {
      if (s.request == nullptr || !s.fresh) continue;
      s.fresh = false;
      Request* r = s.request;
      bool ok = !engine_session_begin(s.session, s.model, s.int8, s.pool).is_error();
      engine_session_map(s.session, s.pool, r->kv_table, r->kv_blocks);
      if (!ok || engine_session_resume(s.session, r->fed).is_error())
        s.error = KAI_ENOMEM;
      set_sampling(s, r->sampling);
    }
  }

  // The ABI's thousandths become the sampler's floats here, in a kernel
  // thread (system calls do no floating point).
  static void set_sampling(BatchSlot& s, const kai_ai_sampling& a) {
    s.params = llm::sampling_from_thousandths(a.temperature_milli, a.top_k, a.top_p_milli, a.min_p_milli,
                                              a.repeat_penalty_milli, a.repeat_last_n);
    // The generator lives in the request (rng_state), so a preempted and
    // recomputed request goes on drawing where it stopped.
    s.sampled = !s.params.greedy() || s.params.repeat_penalty != 1.0f;
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
      llm::Rng rng{r->rng_state};
      auto next = engine_sample(id_, s.session, s.params, rng, recent, n);
      r->rng_state = rng.state;
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
        // Its block table as plan() left it (only this worker changes it).
        engine_session_map(s.session, s.pool, s.request->kv_table, s.request->kv_blocks);
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
      r->fed += s.count;
      kv_publish(r);   // its newly computed full prompt blocks join the prefix cache
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
