// Request slots and the FIFO queue of the AI service. Everything here is
// protected by ai::lock; see docs/ai-service.md for the state diagram.
#pragma once
#include <stdint.h>
#include "../spinlock.h"
#include "../../include/kai/ai_abi.h"
#include "service.h"
#include "policy.h"

namespace ai {

// Where a slot is in its life. A finished request keeps its slot until its
// owner collects the result with ai_wait (or exits).
enum class SlotState : uint8_t { Free, Queued, Running, Finished };

struct Request {
  SlotState state;
  int32_t outcome;          // KAI_AI_DONE / FAILED / CANCELLED once Finished
  int32_t error;            // positive KAI_E* for FAILED
  int64_t id;
  int owner_pid;
  int model;                // index into the model registry
  uint32_t prompt_len, n_predict, n_generated;
  uint32_t flags;           // KAI_AI_* from the submit
  uint32_t priority;        // kai_ai_submit.priority: lower first under Policy::Priority
  bool cancel_requested;    // ai_cancel or owner exit: the worker stops at its next check
  // The owner exited while the request was Running. From that moment the
  // request is invisible: find_request() skips it (its id is unknown to all,
  // -KAI_ESRCH) and slots_in_use() does not count it; only the worker still
  // touches it, and frees the slot when it notices cancel_requested.
  bool orphaned;
  uint32_t queue_depth_at_submit, worker;
  uint64_t t_submit, t_start, t_first, t_finish;
  uint32_t prompt[KAI_AI_MAX_PROMPT];
  uint32_t output[kMaxOutput];
};

extern Spinlock lock;
extern Request slots[kQueueCapacity];

// Slots one process may hold (queued + running + finished but uncollected):
// `ai.max_per_process=N` on the kernel command line, default
// kDefaultMaxPerProcess. Without a limit one process could take every slot
// with results it never collects, and every other submitter would sleep
// forever; at the limit ai_submit fails at once with -KAI_EDQUOT.
constexpr uint32_t kDefaultMaxPerProcess = 8;
extern uint32_t max_per_process;

// The scheduling policy in force (`ai.policy=fcfs|sjf|priority` at boot,
// ai_control at run time) and the aging bound that applies under every
// policy: a request queued for aging_ns or more runs before any request
// queued for less (the oldest overdue first), so SJF and priority cannot
// starve anyone (`ai.aging_ms=N`, default kDefaultAgingMs).
constexpr uint32_t kDefaultAgingMs = 20000;
extern Policy policy;
extern uint64_t aging_ns;

struct Counters {
  uint64_t submitted, completed, failed, cancelled, rejected;
};
extern Counters counters;

// Sleep channels (addresses only; what waits on each is documented there).
extern const char queue_nonempty_chan;  // workers: a request may be runnable
extern const char slot_freed_chan;      // submitters: a slot became free
extern const char models_known_chan;    // submitters: /AI has been scanned

// All of these need `lock` held.
Request* find_request(int64_t id);      // a visible (non-free, not orphaned) slot with this id
uint32_t slots_owned_by(int pid);       // visible slots of this process (the quota counts these)
Request* alloc_slot();                  // a free slot, or nullptr
void free_slot(Request* r);             // back to the pool; wakes submitters
void enqueue(Request* r);
void remove_from_queue(Request* r);
uint32_t queued_count();
uint32_t running_count();
uint32_t slots_in_use();               // visible slots: what ai_info calls in_flight
// The scheduling decision, in one place: the next request a worker should
// run, or nullptr. Requests for models that failed to load are failed here;
// among the ready ones the oldest overdue (aging) runs first, otherwise the
// policy in force chooses.
Request* pick_next();
// Finishes r with an outcome, stamps t_finish, counts it and wakes its waiter.
void finish(Request* r, int32_t outcome, int32_t error);

}  // namespace ai
