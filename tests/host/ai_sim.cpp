// The simulation harness of ai_sim.h. The invariants check() verifies:
//   request table: a Free, Queued or finished slot holds no KV block; a slot
//     is in the arrival queue exactly when it is Queued; a Running request
//     is in exactly one batch slot of exactly one worker (Request::worker);
//     queued + running <= in_flight, and in_flight == capacity exactly when
//     no slot is free (what ai_info shows agrees with EAGAIN);
//   KV pools: no block owned twice by one table; every block's reference
//     count equals the running requests whose tables hold it; every block is
//     in exactly one of free list, LRU list (cached, unreferenced) or in use;
//     a cached block's parent is cached with the generation it was
//     registered under (a cached prefix stays matchable: nothing is
//     stranded), and in the LRU list a block comes before its parent (the
//     leaves of a prefix are evicted before its root); a running request's
//     leading cached blocks are found by a lookup of its prompt;
//   a schedule: every state change is an arrow of the diagram; the plan
//     holds at most ai.budget tokens and a worker at most ai.max_batch
//     requests; every running request not waiting for blocks gets tokens,
//     exactly one if it is generating; every planned request's table covers
//     its new positions; the items of one pass share (model, activation
//     kind), each request's consecutive and in order; an overdue request
//     (aging, not under the fair policy) is never passed over by a younger
//     or not-overdue one; every preemption victim for memory is the
//     youngest running request of its model (or what SimOptions::victim_rule
//     accepts); every victim of priority preemption was the least urgent of
//     its worker's batch (latest admitted among equals) and some request is
//     ai.preempt_gap levels more urgent;
//   a worker in its pass: its planned requests stay Running with their
//     blocks (another worker may mark one, never take it);
//   results: tokens equal the request alone (solo_output), timestamps
//     ordered (submit <= start <= first <= finish) and the requeued time
//     fits in the service time.
#include "ai_sim.h"
#include "../../kernel/ai/load_meter.h"
#include "../../kernel/ai/kv_checkpoint.h"

#include <algorithm>
#include <set>

// The model registry (kernel/ai/models.cpp, which loads bundles, is not
// built for the host): the simulation fills it.
namespace ai {
Model models[KAI_AI_MAX_MODELS];
int n_models;
bool models_known;
bool models_loaded;   // false: the simulation never plans the row team's survey
}  // namespace ai

namespace aisim {

namespace {

ai::WorkerBatch g_batches[ai::kMaxWorkers];
aisim::Sim* g_sim = nullptr;   // the simulation whose proposer is installed
llm::Session g_sessions[ai::kMaxWorkers][ai::kMaxBatch];

constexpr uint32_t kEmptyRow = 0xffffffffu;

uint64_t fnv_mix(uint64_t h, uint32_t v) {
  for (int i = 0; i < 4; i++) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}

bool is_running(const ai::Request& r) { return r.state == ai::RequestState::Running; }

// The victim rule for memory (a request needed KV blocks and a running one
// of its model gives them up): the victim is the youngest running request
// of its model, or whatever SimOptions::victim_rule accepts. A schedule
// picks a victim in two ways, and both are checked here: a request of its
// own worker is preempted at once (it is Queued again, so it is not among
// `running`), one on another worker is only marked (it is still Running,
// so it is among them itself). Admission numbers are never reused, so
// "every other one was admitted earlier" is the rule in both cases.
void require_legal_memory_victim(const ai::Request& victim, const SimOptions& opt) {
  std::vector<const ai::Request*> running;   // the victim's model's running requests, now
  for (const auto& o : ai::slots)
    if (is_running(o) && o.model == victim.model) running.push_back(&o);
  if (opt.victim_rule) {
    SIM_REQUIRE(opt.victim_rule(victim, running));
    return;
  }
  for (const ai::Request* o : running) SIM_REQUIRE((o == &victim || o->admitted_seq < victim.admitted_seq));
}

}  // namespace

Sim::Sim(const SimOptions& o) : opt_(o) {
  SIM_REQUIRE(o.workers >= 1);
  SIM_REQUIRE(o.workers <= uint32_t(ai::kMaxWorkers));
  SIM_REQUIRE(o.n_models >= 1);
  SIM_REQUIRE(o.budget >= o.max_batch);
  for (const auto& r : ai::slots) SIM_REQUIRE(r.state == ai::RequestState::Free);
  ai_host::now_ns = 1000;
  ai::counters = ai::Counters{};
  ai::max_per_process = o.max_per_process;
  ai::policy = o.policy;
  ai::aging_ns = o.aging_ns;
  ai::max_batch = o.max_batch;
  ai::token_budget = o.budget;
  ai::kv_block_size = o.block_size;
  ai::kv_blocks_override = o.kv_blocks;
  ai::prefix_cache_enabled = o.prefix_cache;
  ai::prefix_share = o.prefix_share;
  ai::preempt_gap = o.preempt_gap;
  ai::max_drafts = o.drafts;
  ai::reject_drafts = false;
  ai::propose_override = o.real_proposers ? nullptr : &Sim::propose;
  g_sim = this;
  draft_rng_.seed(o.block_size * 7919 + o.kv_blocks * 31 + o.budget);
  ai::fair_counters.reset();
  ai::load_meter_reset();   // the clock starts again
  ai::n_models = int(o.n_models);
  ai::models_known = true;
  rows_.assign(o.n_models, {});
  ckpt_state_.clear();
  for (uint32_t m = 0; m < o.n_models; m++) {
    ai::Model& model = ai::models[m];
    model = ai::Model{};
    snprintf(model.name, sizeof model.name, "M%u", m);
    model.state = KAI_AI_MODEL_READY;
    llm::Config& c = model.summary.config;
    c.n_layers = o.recurrent ? 2 : 1;
    if (o.recurrent) c.layer_type[1] = llm::LayerType::Linear;
    c.n_heads = c.n_kv_heads = 1;
    c.head_dim = 1;
    c.dim = 1;
    c.vocab_size = o.vocab;
    c.seq_len = c.runtime_seq_len = o.seq_len;
    model.summary.vocab_size = o.vocab;
    model.summary.runtime_seq_len = o.seq_len;
    ai::kv_init_model(int(m), c, model.name, ai::kQueueCapacity);
    SIM_REQUIRE(ai::kv_pool(int(m)) != nullptr);
    rows_[m].assign(size_t(ai::kv_view(int(m)).n_blocks) * o.block_size, kEmptyRow);
  }
  for (uint32_t w = 0; w < o.workers; w++) {
    llm::Session* sessions[ai::kMaxBatch];
    ai::EngineSession* engines[ai::kMaxBatch];
    for (uint32_t i = 0; i < ai::kMaxBatch; i++) {
      sessions[i] = &g_sessions[w][i];
      engines[i] = nullptr;   // the fake pass keeps its own session state (pos_)
    }
    ai::worker_batch_init(g_batches[w], w, sessions, engines);
  }
}

Sim::~Sim() {
  // Back to an empty table whatever state a failed test left: every
  // request ends and is collected, every pool is given back.
  try {
    SpinlockGuard guard(ai::lock);
    for (uint32_t w = 0; w < opt_.workers; w++)
      for (auto& s : g_batches[w].slots) s.request = nullptr;
    for (auto& r : ai::slots) {
      if (r.state == ai::RequestState::Queued) ai::cancel_queued(&r);
      else if (r.state == ai::RequestState::Running) ai::stop_cancelled(&r);
      if (r.state != ai::RequestState::Free) ai::collect(&r);
    }
  } catch (...) {
  }
  for (uint32_t m = 0; m < opt_.n_models; m++) ai::kv_drop_model(int(m));
  ai::propose_override = nullptr;
  ai::max_drafts = 0;
  g_sim = nullptr;
}

// A random number of proposals, of which a random leading run is the
// model's own continuation (what the request gives alone) and the rest
// random tokens: commit() must accept exactly the right ones.
uint32_t Sim::propose(const ai::Request& r, uint32_t max, uint32_t* out) {
  Sim& sim = *g_sim;
  auto pick = [&](uint32_t lo, uint32_t hi) { return lo + uint32_t(sim.draft_rng_() % (hi - lo + 1)); };
  uint32_t n = pick(0, max);
  uint32_t right = pick(0, n);
  std::vector<uint32_t> prompt(r.prompt, r.prompt + r.prompt_len);
  std::vector<uint32_t> future = sim.solo_output(prompt, r.n_generated + n);
  for (uint32_t i = 0; i < n; i++) out[i] = i < right ? future[r.n_generated + i] : pick(0, sim.opt_.vocab - 1);
  return n;
}

void Sim::advance(uint64_t ns) { ai_host::now_ns += ns; }

const ai::WorkerBatch& Sim::batch(uint32_t w) const { return g_batches[w]; }

std::vector<uint32_t> Sim::solo_output(const std::vector<uint32_t>& prompt, uint32_t n) const {
  std::vector<uint32_t> ctx = prompt, out;
  for (uint32_t k = 0; k < n; k++) {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t p = 0; p < ctx.size(); p++) h = fnv_mix(fnv_mix(h, ctx[p]), p);
    uint32_t next = uint32_t(h % opt_.vocab);
    out.push_back(next);
    ctx.push_back(next);
  }
  return out;
}

// The fake model's next token after position pos: a hash of the rows
// positions 0..pos hold, read through r's block table.
uint32_t Sim::fake_next(const ai::Request& r, uint32_t pos) const {
  uint32_t B = opt_.block_size;
  uint64_t h = 1469598103934665603ull;
  for (uint32_t p = 0; p <= pos; p++) {
    SIM_REQUIRE(p / B < r.kv.n);
    h = fnv_mix(fnv_mix(h, rows_[r.model][size_t(r.kv.block[p / B]) * B + p % B]), p);
  }
  return uint32_t(h % opt_.vocab);
}

ai::Request* Sim::submit(const Submit& s) {
  SIM_REQUIRE(!s.prompt.empty());
  SIM_REQUIRE(s.prompt.size() <= KAI_AI_MAX_PROMPT);
  SIM_REQUIRE(s.prompt.size() + s.n_predict <= opt_.seq_len);
  SpinlockGuard guard(ai::lock);
  if (ai::may_submit(s.pid) != ai::SubmitCheck::Ok) return nullptr;   // as ai_submit (EDQUOT, or EAGAIN)
  if (!ai::kv_could_fit(s.model, uint32_t(s.prompt.size()) + s.n_predict)) return nullptr;   // ENOMEM at submit
  static const uint32_t no_stop[1] = {0};
  ai::note_backlogged(s.pid);   // as ai_submit: the fair policy's lift (fair_share.h)
  ai::NewRequest n{};
  n.stop = no_stop;   // as ai_submit: never null
  n.owner_pid = s.pid;
  n.model = s.model;
  n.prompt = s.prompt.data();
  n.prompt_len = uint32_t(s.prompt.size());
  n.n_predict = s.n_predict;
  n.flags = s.flags;
  n.priority = s.priority;
  n.domain = ai::prefix_domain(s.session);   // as ai_submit: from the owner's session, never the request
  if (s.spec.proposer != KAI_AI_PROPOSER_DEFAULT) {
    SIM_REQUIRE(s.spec.prediction_len == s.prediction.size());
    n.spec = &s.spec;
    n.prediction = s.prediction.data();
  }
  ai::Request* r = ai::submit(n);
  check_locked();
  return r;
}

void Sim::cancel(int64_t id) {
  SpinlockGuard guard(ai::lock);
  ai::Request* r = ai::find_request(id);
  if (r == nullptr) return;
  if (r->state == ai::RequestState::Queued) ai::cancel_queued(r);
  else if (r->state == ai::RequestState::Running) r->cancel_requested = true;
  check_locked();
}

void Sim::exit_process(int pid) {
  SpinlockGuard guard(ai::lock);
  ai::forget_owner(pid);
  check_locked();
}

uint32_t Sim::collect_finished() {
  SpinlockGuard guard(ai::lock);
  uint32_t n = 0;
  for (auto& r : ai::slots) {
    if (r.state == ai::RequestState::Free || r.orphaned || !ai::finished(r.state)) continue;
    check_result(r);
    ai::collect(&r);
    collected_++;
    n++;
  }
  check_locked();
  return n;
}

void Sim::check_result(const ai::Request& r) {
  INFO("request " << r.id << " state " << int(r.state) << " preemptions " << r.preemptions);
  std::vector<uint32_t> prompt(r.prompt, r.prompt + r.prompt_len);
  std::vector<uint32_t> want = solo_output(prompt, r.n_generated);
  std::vector<uint32_t> got(r.output, r.output + r.n_generated);
  SIM_REQUIRE(got == want);
  // Speculation as the request asked: none when it said NONE; every draft
  // kept when its prediction was the answer itself.
  SIM_REQUIRE(r.accepted <= r.drafted);
  if (!r.spec_default && r.spec_drafts == 0) SIM_REQUIRE(r.drafted == 0);
  if (opt_.real_proposers && !r.spec_default && r.spec_proposer == ai::ProposerKind::Predicted &&
      std::vector<uint32_t>(r.prediction, r.prediction + r.prediction_len) == solo_output(prompt, r.prediction_len))
    SIM_REQUIRE(r.accepted == r.drafted);
  if (r.state == ai::RequestState::Done) {
    SIM_REQUIRE(r.n_generated == r.n_predict);
    SIM_REQUIRE(r.finish_reason == KAI_AI_FINISH_LENGTH);
  }
  if (r.t_start != 0) {
    SIM_REQUIRE(r.t_submit <= r.t_start);
    SIM_REQUIRE(r.t_start <= r.t_finish);
    SIM_REQUIRE(r.requeued_ns <= r.t_finish - r.t_start);
    // queue wait + service == end-to-end, as ai_abi.h defines them
    uint64_t queue_wait = (r.t_start - r.t_submit) + r.requeued_ns;
    uint64_t service = (r.t_finish - r.t_start) - r.requeued_ns;
    SIM_REQUIRE(queue_wait + service == r.t_finish - r.t_submit);
  }
  if (r.n_generated > 0) {
    SIM_REQUIRE(r.t_start <= r.t_first);
    SIM_REQUIRE(r.t_first <= r.t_finish);
  }
}

std::vector<Sim::Snapshot> Sim::snapshot() const {
  std::vector<Snapshot> v;
  for (const auto& r : ai::slots)
    v.push_back({r.state, r.id, r.admitted_seq, r.preemptions, r.preempt_requested, r.priority_preemptions, r.priority});
  return v;
}

bool Sim::schedule(uint32_t w) {
  SIM_REQUIRE(w < opt_.workers);
  SIM_REQUIRE(!in_pass_[w]);
  SpinlockGuard guard(ai::lock);
  auto before = snapshot();
  const ai::Plan& p = ai::schedule(g_batches[w]);
  check_schedule(w, before, ai_host::now_ns);
  // As the worker: it sleeps only when nothing of its batch can run.
  in_pass_[w] = !p.empty() || !ai::batch_idle(g_batches[w]);
  check_locked();
  return in_pass_[w];
}

void Sim::check_schedule(uint32_t w, const std::vector<Snapshot>& before, uint64_t now) {
  using S = ai::RequestState;
  ai::WorkerBatch& wb = g_batches[w];
  std::vector<const ai::Request*> admitted, still_queued;
  bool priority_preempted_now = false;   // some request made room for a more urgent one
  std::vector<int> priority_victims;      // their slots
  for (int i = 0; i < ai::kQueueCapacity; i++) {
    const ai::Request& r = ai::slots[i];
    const Snapshot& b = before[i];
    INFO("slot " << i << " id " << b.id << " from " << int(b.state) << " to " << int(r.state));
    bool was_preempted = r.preemptions > b.preemptions;
    switch (b.state) {
      case S::Queued:
        SIM_REQUIRE((r.state == S::Queued || r.state == S::Running || r.state == S::Failed));
        if (r.state == S::Queued && !was_preempted) still_queued.push_back(&r);
        break;
      case S::Running:
        SIM_REQUIRE((r.state == S::Running || r.state == S::Queued || r.state == S::Cancelled || r.state == S::Free));
        if (r.state == S::Queued) SIM_REQUIRE(was_preempted);
        break;
      default:
        SIM_REQUIRE(r.state == b.state);   // a schedule never submits, collects or revives
        break;
    }
    if (r.state != S::Free) SIM_REQUIRE(r.id == b.id);
    if (r.admitted_seq != b.admitted_seq) {
      admitted.push_back(&r);
      events_.push_back({Event::Admit, r.id, r.owner_pid, w, now, r.fed});
    }
    if (was_preempted) {
      events_.push_back({Event::Preempt, r.id, r.owner_pid, w, now, 0});
      if (r.priority_preemptions != b.priority_preemptions) {
        priority_preempted_now = true;
        priority_victims.push_back(i);
      } else if (!b.preempt_requested) {
        require_legal_memory_victim(r, opt_);   // chosen here, for memory
      }
    }
    if (r.preempt_requested && !b.preempt_requested && is_running(r)) {
      events_.push_back({Event::MarkPreempt, r.id, r.owner_pid, r.worker, now, r.fed});
      SIM_REQUIRE(r.worker != w);   // a request of this worker is preempted at once
      require_legal_memory_victim(r, opt_);
    }
  }
  // Preempted for priority (ai.preempt_gap): under the priority policy
  // only; some request (admitted in its place, or still queued if its
  // blocks were short) is at least the gap more urgent; and the victim was
  // the least urgent of this worker's batch, the latest admitted among
  // equals: everything still running here is more urgent, or as urgent and
  // admitted before it.
  for (int i : priority_victims) {
    const Snapshot& v = before[i];
    // A victim that was queued before this schedule was admitted in it
    // (step 2, e.g. overdue) and then preempted (step 2b), which resets its
    // admission number: it was admitted after everything already running.
    uint64_t v_seq = v.state == S::Running ? v.admitted_seq : UINT64_MAX;
    INFO("priority victim " << v.id << " priority " << v.priority << " admitted " << v_seq);
    SIM_REQUIRE(ai::policy == ai::Policy::Priority);
    SIM_REQUIRE(ai::preempts_for_priority(0, v.priority, ai::preempt_gap));
    bool urgent_exists = false;
    for (const auto& o : ai::slots)
      if ((o.state == S::Queued || o.state == S::Running) && o.id != v.id &&
          ai::preempts_for_priority(o.priority, v.priority, ai::preempt_gap))
        urgent_exists = true;
    SIM_REQUIRE(urgent_exists);
    for (const auto& s : wb.slots) {
      const ai::Request* o = s.request;
      if (o == nullptr) continue;
      INFO("still running " << o->id << " priority " << o->priority << " admitted " << o->admitted_seq);
      SIM_REQUIRE((o->priority < v.priority || (o->priority == v.priority && o->admitted_seq < v_seq)));
    }
  }
  // Aging: an overdue request is never passed over by one admitted now
  // that is not overdue or arrived later; except by a request that took a
  // less urgent one's place through priority preemption (it comes in
  // directly, docs/sharing.md "Priorities that preempt").
  // (The fair policy has no aging: docs/ai-service.md.)
  for (const ai::Request* y : still_queued) {
    if (priority_preempted_now || ai::policy == ai::Policy::Fair) break;
    if (now - y->t_submit < ai::aging_ns) continue;
    for (const ai::Request* x : admitted) {
      if (x->preemptions > 0 && x->state == S::Queued) continue;
      INFO("overdue " << y->id << " passed over by " << x->id);
      SIM_REQUIRE(now - x->t_submit >= ai::aging_ns);
      SIM_REQUIRE(x->t_submit <= y->t_submit);
    }
  }
  // The plan.
  const ai::Plan& p = wb.plan;
  SIM_REQUIRE(p.n_items <= ai::token_budget);
  SIM_REQUIRE(ai::running_in(wb) <= ai::max_batch);
  uint32_t B = opt_.block_size;
  for (const auto& s : wb.slots) {
    const ai::Request* r = s.request;
    if (r == nullptr) continue;
    SIM_REQUIRE(is_running(*r));
    // Every admitted request progresses: one token per iteration when it is
    // generating; a prompt chunk as soon as the budget reaches it.
    if (ai::context_len(*r) - r->fed == 1 && !r->waiting_for_blocks) SIM_REQUIRE(s.count - s.drafts == 1);
    // Proposals only for a generating request, within ai.drafts and what
    // it may still produce after its next token.
    SIM_REQUIRE(s.drafts == r->n_draft);
    SIM_REQUIRE(s.drafts <= ai::drafts_for(*r));
    if (s.drafts > 0) {
      SIM_REQUIRE(ai::context_len(*r) - r->fed == 1);
      SIM_REQUIRE(r->n_generated + 1 + s.drafts <= r->n_predict);
    }
    uint32_t& streak = starved_[r->id];
    streak = (s.count == 0 && !r->waiting_for_blocks) ? streak + 1 : 0;
    INFO("request " << r->id << " got no token in " << streak << " schedules of its worker");
    SIM_REQUIRE(streak <= kMaxStarved);
    SIM_REQUIRE(r->fed + s.count - s.drafts <= ai::context_len(*r));
    if (s.count > 0) {
      SIM_REQUIRE(r->kv.n * B >= r->fed + s.count);
      uint32_t len = ai::context_len(*r);
      for (uint32_t i = 0; i < s.count; i++) {
        SIM_REQUIRE(p.slot[s.first + i] == &s);
        uint32_t at = r->fed + i;
        SIM_REQUIRE(p.items[s.first + i].token == (at < len ? ai::context_token(*r, at) : r->draft[at - len]));
        SIM_REQUIRE(p.items[s.first + i].session == s.session);
      }
    }
  }
  uint32_t covered = 0;
  for (uint32_t g = 0; g < p.n_groups; g++) {
    const ai::PlanGroup& group = p.groups[g];
    SIM_REQUIRE(group.first == covered);
    covered += group.count;
    for (uint32_t i = group.first; i < group.first + group.count; i++) {
      SIM_REQUIRE(p.slot[i]->request->model == group.model);
      SIM_REQUIRE(p.slot[i]->int8 == group.int8);
    }
  }
  SIM_REQUIRE(covered == p.n_items);
}

void Sim::run_and_commit(uint32_t w, bool fail_begin) {
  SIM_REQUIRE(in_pass_[w]);
  ai::WorkerBatch& wb = g_batches[w];
  ai::Plan& p = wb.plan;
  uint32_t B = opt_.block_size;
  // Step 2, unlocked: begin sessions, then the fake pass group by group.
  for (uint32_t i = 0; i < ai::kMaxBatch; i++) {
    ai::BatchSlot& s = wb.slots[i];
    if (s.request == nullptr || !s.fresh) continue;
    s.fresh = false;
    if (fail_begin) {
      s.failed = true;
      s.error = ai::Error::make(Errno::NoMem, "session", "no memory (simulated)");
      ai::plan_drop(p, &s);
      continue;
    }
    const ai::Request& r = *s.request;
    pos_[w][i] = r.fed;
    ckpt_[w][i] = UINT32_MAX;
    s.rewind = false;
    if (s.ckpt_read != ai::kNoCkpt) {
      // As the worker's restore: the checkpoint's state must be this
      // request's first fed tokens, and its tail rows land in the
      // request's own block after the cached ones.
      auto it = ckpt_state_.find({r.model, s.ckpt_read});
      SIM_REQUIRE(it != ckpt_state_.end());
      SIM_REQUIRE(it->second.size() == r.fed);
      for (uint32_t q = 0; q < r.fed; q++) SIM_REQUIRE(it->second[q] == ai::context_token(r, q));
      for (uint32_t q = r.fed / B * B; q < r.fed; q++) {
        SIM_REQUIRE(ai::kv_view(r.model).refs[r.kv.block[q / B]] == 1);   // its own block
        rows_[r.model][size_t(r.kv.block[q / B]) * B + q % B] = it->second[q];
      }
    }
    // A cached prefix must hold exactly this request's tokens.
    for (uint32_t q = 0; q < r.fed; q++)
      SIM_REQUIRE(rows_[r.model][size_t(r.kv.block[q / B]) * B + q % B] == ai::context_token(r, q));
  }
  // As the worker's prepare_sessions(): sessions whose positions were
  // rolled back move back to fed (a recurrent one only to its checkpoint);
  // a recurrent session keeps a checkpoint before positions that may be
  // rejected.
  for (uint32_t i = 0; i < ai::kMaxBatch; i++) {
    ai::BatchSlot& s = wb.slots[i];
    if (s.request == nullptr) continue;
    if (s.rewind) {
      s.rewind = false;
      SIM_REQUIRE(s.request->fed <= pos_[w][i]);
      if (opt_.recurrent) SIM_REQUIRE(ckpt_[w][i] == s.request->fed);
      pos_[w][i] = s.request->fed;
    }
    if (s.drafts > 0 && opt_.recurrent) ckpt_[w][i] = pos_[w][i];
  }
  for (uint32_t g = 0; g < p.n_groups; g++) {
    const ai::PlanGroup& group = p.groups[g];
    for (uint32_t i = group.first; i < group.first + group.count; i++) {
      ai::BatchSlot* s = p.slot[i];
      const ai::Request& r = *s->request;
      uint32_t idx = uint32_t(s - wb.slots);
      uint32_t pos = pos_[w][idx]++;
      uint32_t len = ai::context_len(r);
      SIM_REQUIRE(p.items[i].session == s->session);
      // The session is at fed when its pass starts: no position is computed
      // twice unless commit() rolled it back.
      SIM_REQUIRE(pos == r.fed + (i - s->first));
      SIM_REQUIRE(pos < len + r.n_draft);
      SIM_REQUIRE(p.items[i].token == (pos < len ? ai::context_token(r, pos) : r.draft[pos - len]));
      SIM_REQUIRE(p.items[i].want_next == (pos + 1 >= len));
      SIM_REQUIRE(p.want[i] == (pos + 1 >= len ? ai::Want::Argmax : ai::Want::Nothing));
      SIM_REQUIRE(pos / B < r.kv.n);
      uint32_t block = r.kv.block[pos / B];
      SIM_REQUIRE(ai::kv_view(r.model).refs[block] == 1);   // a shared block is never written
      rows_[r.model][size_t(block) * B + pos % B] = p.items[i].token;
      if (p.items[i].want_next) p.items[i].next = fake_next(r, pos);
    }
  }
  // A checkpoint's state at pos: the tokens of positions [0, pos).
  auto state_at = [&](const ai::Request& r, uint32_t pos) {
    std::vector<uint32_t> state(pos);
    for (uint32_t q = 0; q < pos; q++) state[q] = rows_[r.model][size_t(r.kv.block[q / B]) * B + q % B];
    return state;
  };
  // As the pass and the worker's save_pass_checkpoints(): each checkpoint
  // reserved for the pass is written by the item before its position.
  for (uint32_t i = 0; i < ai::kMaxBatch; i++) {
    ai::BatchSlot& s = wb.slots[i];
    if (s.request == nullptr || s.failed) continue;
    const ai::Request& r = *s.request;
    for (uint32_t c = 0; c < s.n_pass_ckpt; c++) {
      uint32_t pos = s.pass_ckpt[c].pos;
      SIM_REQUIRE((pos > r.fed && pos <= r.fed + s.count));
      SIM_REQUIRE(p.items[s.first + (pos - 1 - r.fed)].keep_state == &s.pass_ckpt[c].writer.sink);
      ckpt_state_[{r.model, s.pass_ckpt[c].id}] = state_at(r, pos);
    }
  }
  // As the worker's save_final_checkpoints(): the state at the request's end.
  auto save_final_checkpoints = [&] {
    for (uint32_t i = 0; i < ai::kMaxBatch; i++) {
      ai::BatchSlot& s = wb.slots[i];
      if (s.request == nullptr || s.ckpt_write == ai::kNoCkpt || s.failed) continue;
      ckpt_state_[{s.request->model, s.ckpt_write}] = state_at(*s.request, pos_[w][i]);
    }
  };
  // Step 3.
  SpinlockGuard guard(ai::lock);
  auto before = snapshot();
  ai::commit(wb);
  // A rollback gives back the whole blocks past the new end.
  for (const auto& s : wb.slots)
    if (s.request != nullptr && s.rewind) SIM_REQUIRE(s.request->kv.n == ai::kv_blocks_for(s.request->fed));
  // As the worker: requests that ended wait for their final checkpoint
  // (the session is at fed), then complete.
  if (ai::has_finishing(wb)) {
    for (uint32_t i = 0; i < ai::kMaxBatch; i++)
      if (wb.slots[i].request && wb.slots[i].finishing) SIM_REQUIRE(pos_[w][i] == wb.slots[i].request->fed);
    save_final_checkpoints();
    ai::finish_checkpointed(wb);
  }
  for (int i = 0; i < ai::kQueueCapacity; i++) {
    const ai::Request& r = ai::slots[i];
    if (before[i].state == ai::RequestState::Running && r.state != ai::RequestState::Running) {
      SIM_REQUIRE((r.state == ai::RequestState::Done || r.state == ai::RequestState::Failed ||
               r.state == ai::RequestState::Cancelled || r.state == ai::RequestState::Free));
      events_.push_back({Event::Finish, before[i].id, r.owner_pid, w, ai_host::now_ns, r.fed});
    } else if (before[i].state != ai::RequestState::Running) {
      SIM_REQUIRE(r.state == before[i].state);
    }
  }
  in_pass_[w] = false;
  commits_++;
  check_locked();
}

bool Sim::iterate(uint32_t w) {
  if (!schedule(w)) return false;
  run_and_commit(w);
  return true;
}

bool Sim::drain(uint32_t max_rounds) {
  for (uint32_t round = 0; round < max_rounds; round++) {
    bool busy = false;
    for (uint32_t w = 0; w < opt_.workers; w++) {
      if (in_pass_[w]) run_and_commit(w);
      busy |= iterate(w);
      advance(1000);
    }
    {
      SpinlockGuard guard(ai::lock);
      if (!busy && ai::queued_count() == 0 && ai::running_count() == 0) return true;
    }
  }
  return false;
}

void Sim::check() {
  SpinlockGuard guard(ai::lock);
  check_locked();
}

void Sim::check_locked() {
  using S = ai::RequestState;
  SIM_REQUIRE(ai::lock.holding());
  ai::Request* queued[ai::kQueueCapacity];
  uint32_t n_queued = ai::queued_in_order(queued);
  std::set<const ai::Request*> in_queue(queued, queued + n_queued);
  SIM_REQUIRE(in_queue.size() == n_queued);
  for (uint32_t i = 1; i < n_queued; i++) SIM_REQUIRE(queued[i - 1]->t_submit <= queued[i]->t_submit);
  uint32_t running = 0, in_use = 0;
  for (const auto& r : ai::slots) {
    INFO("request " << r.id << " state " << int(r.state));
    SIM_REQUIRE((r.state == S::Queued) == (in_queue.count(&r) == 1));
    if (r.state != S::Running) SIM_REQUIRE(r.kv.n == 0);
    in_use += r.state != S::Free;
    if (r.state != S::Running) continue;
    running++;
    uint32_t homes = 0;
    for (uint32_t w = 0; w < opt_.workers; w++)
      for (const auto& s : g_batches[w].slots)
        if (s.request == &r) {
          homes++;
          SIM_REQUIRE(r.worker == w);
        }
    SIM_REQUIRE(homes == 1);
  }
  for (uint32_t w = 0; w < opt_.workers; w++) {
    for (const auto& s : g_batches[w].slots) {
      if (s.request == nullptr) continue;
      SIM_REQUIRE(is_running(*s.request));
      if (in_pass_[w] && s.count > 0) SIM_REQUIRE(s.request->kv.n * opt_.block_size >= s.request->fed + s.count);
    }
  }
  // What ai_info reports is consistent with itself and with EAGAIN.
  SIM_REQUIRE(ai::running_count() == running);
  SIM_REQUIRE(ai::queued_count() == n_queued);
  SIM_REQUIRE(ai::slots_in_use() == in_use);
  SIM_REQUIRE(n_queued + running <= in_use);
  SIM_REQUIRE((in_use == uint32_t(ai::kQueueCapacity)) == !ai::slot_available());
  for (uint32_t m = 0; m < opt_.n_models; m++) check_kv(int(m));
}

void Sim::check_kv(int m) {
  ai::KvPoolView v = ai::kv_view(m);
  std::vector<uint32_t> owners(v.n_blocks, 0);
  for (const auto& r : ai::slots) {
    if (!is_running(r) || r.model != m) continue;
    std::set<uint32_t> mine;
    for (uint32_t i = 0; i < r.kv.n; i++) {
      SIM_REQUIRE(r.kv.block[i] < v.n_blocks);
      SIM_REQUIRE(mine.insert(r.kv.block[i]).second);   // not twice in one table
      owners[r.kv.block[i]]++;
    }
  }
  // Recurrent-state checkpoints own their blocks too (kv_checkpoint.h).
  std::vector<uint32_t> ckpt_blocks(v.n_blocks);
  uint32_t n_ckpt_blocks = ai::kv_ckpt_owned_blocks(int(m), ckpt_blocks.data(), v.n_blocks);
  for (uint32_t i = 0; i < n_ckpt_blocks; i++) owners[ckpt_blocks[i]]++;
  std::vector<int> where(v.n_blocks, 0);   // 1 free, 2 LRU, 3 in use
  for (uint32_t i = 0; i < v.n_free; i++) {
    uint32_t b = v.free_stack[i];
    SIM_REQUIRE(where[b] == 0);
    where[b] = 1;
    SIM_REQUIRE(v.refs[b] == 0);
    SIM_REQUIRE(!v.cached[b]);
  }
  std::vector<uint32_t> lru_pos(v.n_blocks, UINT32_MAX);
  uint32_t n_lru = 0;
  for (uint32_t b = v.lru_head; b != ai::kNoBlock; b = v.lru_next[b]) {
    SIM_REQUIRE(where[b] == 0);
    where[b] = 2;
    lru_pos[b] = n_lru++;
    SIM_REQUIRE(v.refs[b] == 0);
    SIM_REQUIRE(v.cached[b]);
  }
  SIM_REQUIRE(n_lru == v.n_lru);
  for (uint32_t b = 0; b < v.n_blocks; b++) {
    INFO("block " << b);
    SIM_REQUIRE(v.refs[b] == owners[b]);   // reference counts equal owners
    if (v.refs[b] > 0) {
      SIM_REQUIRE(where[b] == 0);
      where[b] = 3;
    }
    SIM_REQUIRE(where[b] != 0);            // leaked: in no list and owned by nobody
    if (v.cached[b] && v.parent[b] != ai::kNoBlock) {
      uint32_t p = v.parent[b];
      SIM_REQUIRE(v.cached[p]);            // nothing cached below an evicted parent
      SIM_REQUIRE(v.gen[p] == v.parent_gen[b]);
      if (where[b] == 2 && where[p] == 2) SIM_REQUIRE(lru_pos[b] < lru_pos[p]);   // leaves go first
    }
  }
  // A running request's leading cached blocks are what a lookup finds.
  for (const auto& r : ai::slots) {
    if (!is_running(r) || r.model != m) continue;
    uint32_t k = 0;
    while (k < r.kv.n && v.cached[r.kv.block[k]] && (k + 1) * opt_.block_size <= r.prompt_len) k++;
    ai::PrefixKey key{r.model, (r.flags & KAI_AI_INT8) != 0, r.domain, r.prompt, r.prompt_len};
    SIM_REQUIRE(ai::kv_cached_prefix_blocks(key) >= k);
  }
}

}  // namespace aisim
