// Request slots, the FIFO queue and the scheduling policy of the AI service.
#include "requests.h"
#include "models.h"
#include "../proc.h"
#include "../trap.h"

namespace ai {

Spinlock lock{"ai"};
Request slots[kQueueCapacity];
Counters counters;
uint32_t max_per_process = kDefaultMaxPerProcess;
Policy policy = Policy::Fcfs;
uint64_t aging_ns = uint64_t(kDefaultAgingMs) * 1000000;
const char queue_nonempty_chan = 0;
const char slot_freed_chan = 0;
const char models_known_chan = 0;

// Queued requests in arrival order (indices into slots).
static int fifo[kQueueCapacity];
static int fifo_len;

Request* find_request(int64_t id) {
  for (auto& r : slots)
    if (r.state != SlotState::Free && !r.orphaned && r.id == id) return &r;
  return nullptr;
}

uint32_t slots_owned_by(int pid) {
  uint32_t n = 0;
  for (auto& r : slots) n += r.state != SlotState::Free && !r.orphaned && r.owner_pid == pid;
  return n;
}

Request* alloc_slot() {
  for (auto& r : slots)
    if (r.state == SlotState::Free) return &r;
  return nullptr;
}

void free_slot(Request* r) {
  r->state = SlotState::Free;
  r->orphaned = false;
  r->id = 0;
  r->owner_pid = 0;
  wakeup(&slot_freed_chan);
}

void enqueue(Request* r) {
  fifo[fifo_len++] = static_cast<int>(r - slots);
  r->state = SlotState::Queued;
  wakeup(&queue_nonempty_chan);
}

void remove_from_queue(Request* r) {
  int index = static_cast<int>(r - slots);
  int out = 0;
  for (int i = 0; i < fifo_len; i++)
    if (fifo[i] != index) fifo[out++] = fifo[i];
  fifo_len = out;
}

uint32_t queued_count() { return static_cast<uint32_t>(fifo_len); }

uint32_t running_count() {
  uint32_t n = 0;
  for (auto& r : slots) n += r.state == SlotState::Running;
  return n;
}

uint32_t slots_in_use() {
  uint32_t n = 0;
  for (auto& r : slots) n += r.state != SlotState::Free && !r.orphaned;
  return n;
}

Request* pick_next() {
  Request* ready[kQueueCapacity];
  int n = 0;
  for (int i = 0; i < fifo_len;) {
    Request* r = &slots[fifo[i]];
    int32_t model_state = models[r->model].state;
    if (model_state == KAI_AI_MODEL_FAILED) {
      // Its model will never be ready: fail it now rather than let it wait forever.
      remove_from_queue(r);
      finish(r, KAI_AI_FAILED, KAI_ENODEV);
      continue;
    }
    if (model_state == KAI_AI_MODEL_READY) ready[n++] = r;   // else still loading: stays queued
    i++;
  }
  if (n == 0) return nullptr;
  // Aging first: ready[] is in arrival order, so the first overdue one is
  // the one that has waited longest.
  uint64_t now = clock_ns();
  int chosen = -1;
  for (int i = 0; i < n && chosen < 0; i++)
    if (now - ready[i]->t_submit >= aging_ns) chosen = i;
  if (chosen < 0) chosen = policy_function(policy)(ready, n);
  remove_from_queue(ready[chosen]);
  return ready[chosen];
}

void finish(Request* r, int32_t outcome, int32_t error) {
  r->state = SlotState::Finished;
  r->outcome = outcome;
  r->error = error;
  r->t_finish = clock_ns();
  if (outcome == KAI_AI_DONE) counters.completed++;
  else if (outcome == KAI_AI_FAILED) counters.failed++;
  else counters.cancelled++;
  if (r->orphaned) {
    free_slot(r);   // nobody will ever collect it
  } else {
    wakeup(r);
  }
}

}  // namespace ai
