// aistat: the AI service's models, queue and counters (ai_info): how the
// model is shared (prefix-cache domains, preemptions by cause) and, once
// any process has submitted, the fair policy's per-process counters; for
// each loaded model, how much of it is pinned page-cache pages.
#include "kai.h"

static const char* model_state(int32_t s) {
  switch (s) {
    case KAI_AI_MODEL_LOADING: return "loading";
    case KAI_AI_MODEL_READY: return "ready";
    case KAI_AI_MODEL_FAILED: return "failed";
    default: return "?";
  }
}

int main(int argc, char** argv) {
  no_arguments("aistat", argc, argv);
  static kai_ai_info info;
  int r = ai_info(&info);
  if (r < 0) {
    fprintf(2, "aistat: %s\n", strerror(r));
    return 1;
  }
  printf("models: %u\n", info.n_models);
  for (uint32_t i = 0; i < info.n_models; i++) {
    const kai_ai_model_info& m = info.models[i];
    printf("  %-8s %-8s %-7s dim=%u layers=%u vocab=%u seq=%u params=%lu bytes=%lu load_ms=%lu",
           m.name, m.family, model_state(m.state), m.dim, m.n_layers, m.vocab_size, m.runtime_seq_len,
           (unsigned long)m.n_params, (unsigned long)m.bytes, (unsigned long)(m.load_ns / 1000000));
    // One copy of a model: the weights that are the bundle's page-cache
    // pages (free's "ai service: pinned=" line is the sum over models).
    if (m.state == KAI_AI_MODEL_READY)
      printf(" pinned_pages=%lu pinned_bytes=%lu", (unsigned long)m.pinned_pages,
             (unsigned long)(m.pinned_pages * 4096));
    if (m.state == KAI_AI_MODEL_FAILED) printf(" error=%s", strerror(m.error));
    printf("\n");
  }
  printf("queue: capacity=%u workers=%u queued=%u running=%u\n", info.queue_capacity, info.n_workers,
         info.queued, info.running);
  static const char* const policies[] = {"fcfs", "sjf", "priority", "fair"};
  static_assert(sizeof policies / sizeof policies[0] == KAI_AI_POLICY_FAIR + 1, "one name per policy");
  printf("scheduling: policy=%s aging_ms=%u max_per_process=%u preempt_gap=%u\n",
         info.policy <= KAI_AI_POLICY_FAIR ? policies[info.policy] : "?", info.aging_ms, info.max_per_process,
         info.preempt_gap);
  printf("requests: submitted=%lu completed=%lu failed=%lu cancelled=%lu rejected=%lu in_flight=%lu\n",
         (unsigned long)info.submitted, (unsigned long)info.completed, (unsigned long)info.failed,
         (unsigned long)info.cancelled, (unsigned long)info.rejected, (unsigned long)info.in_flight);
  // Iteration-level batching: how full the batches were on average.
  uint64_t it = info.iterations;
  uint64_t req_x100 = it ? info.batch_requests * 100 / it : 0;
  uint64_t tok_x100 = it ? info.batch_tokens * 100 / it : 0;
  printf("engine: max_batch=%u budget=%u harts=%u harts_in_use=%u iterations=%lu mean_batch=%lu.%02lu "
         "tokens_per_iteration=%lu.%02lu\n",
         info.max_batch, info.budget, info.harts, info.harts_in_use, (unsigned long)it, (unsigned long)(req_x100 / 100),
         (unsigned long)(req_x100 % 100), (unsigned long)(tok_x100 / 100), (unsigned long)(tok_x100 % 100));
  printf("kv: block=%u blocks_total=%lu used=%lu cached=%lu prefix_cache=%s prefix_hits=%lu prefix_tokens=%lu preemptions=%lu\n",
         info.kv_block, (unsigned long)info.kv_blocks_total, (unsigned long)info.kv_blocks_used,
         (unsigned long)info.kv_blocks_cached, info.prefix_cache ? "on" : "off",
         (unsigned long)info.prefix_hit_requests, (unsigned long)info.prefix_hit_tokens,
         (unsigned long)info.preemptions);
  printf("checkpoints: count=%lu kib=%lu\n", (unsigned long)info.kv_checkpoints,
         (unsigned long)(info.kv_checkpoint_bytes >> 10));
  printf("drafts: max=%u proposer=%s drafted=%lu accepted=%lu rolled_back=%lu\n", info.max_drafts,
         info.proposer == KAI_AI_PROPOSER_ECHO ? "echo" : "ngram", (unsigned long)info.drafted,
         (unsigned long)info.accepted, (unsigned long)info.rolled_back);
  // Constrained decoding: grammar memory (DFA tables and mask caches) held now, at most, and grammars compiled.
  printf("grammar: requests=%u bytes=%lu peak_bytes=%lu compiled=%lu\n", info.grammar_requests,
         (unsigned long)info.grammar_bytes, (unsigned long)info.grammar_peak_bytes, (unsigned long)info.grammars);
  static const char* const shares[] = {"session", "global", "off"};
  printf("sharing: prefix_share=%s preemptions_memory=%lu preemptions_priority=%lu\n",
         info.prefix_share <= KAI_AI_PREFIX_SHARE_OFF ? shares[info.prefix_share] : "?",
         (unsigned long)(info.preemptions - info.priority_preemptions), (unsigned long)info.priority_preemptions);
  // The fair policy's virtual token counters (kept under every policy, so
  // they can be compared): one line per process that has used the service.
  for (uint32_t i = 0; i < info.n_clients && i < KAI_AI_MAX_CLIENTS; i++) {
    const kai_ai_client& c = info.clients[i];
    printf("client: pid=%d served=%lu prompt_tokens=%lu output_tokens=%lu rejected_drafts=%u\n", c.pid,
           (unsigned long)c.served, (unsigned long)c.prompt_tokens, (unsigned long)c.output_tokens,
           c.rejected_drafts);
  }
  return 0;
}
