// The KV cache as paged memory: virtual memory applied to attention.
//
// Each resident model gets a pool of KV blocks in kernel memory
// (`ai.kv_mb=M` megabytes per model), each block holding the K and V rows of
// kv_block_size consecutive positions for every full-attention layer
// (lib/llm_session.h, KvPool). A running request has a block table,
// table[i] = the block of its positions [i*B, (i+1)*B): the runtime finds a
// row through it exactly as the MMU finds a byte through a page table.
//
//   OS idea                        here
//   physical page frame            KV block (one pool per model)
//   page table                     Request::kv (a BlockTable)
//   demand paging                  a block is taken only when the request reaches it
//   shared pages, reference counts a prompt prefix's full blocks shared by requests (refs)
//   copy-on-write                  a shared block is never written: sharers write only
//                                  positions past the shared prefix, into their own blocks
//   page cache + LRU replacement   finished requests' full prompt blocks stay cached
//                                  (refs 0), evicted least recently used first
//   swapping out a process         preempting a running request when blocks run out:
//                                  its blocks are freed and it is recomputed later
//
// Invariants (ai::lock protects everything here):
//   - a block is in exactly one of: the free list; in use (refs > 0); the LRU
//     list of cached, unreferenced blocks;
//   - a cached block's tokens and parent are those of the prefix it holds, and
//     it is in the lookup table under that (parent, parent's generation,
//     tokens) key; the first block of a prefix carries the activation kind
//     instead of a parent (int8 and float K/V differ); a block is looked up
//     only by an exact comparison of all of it, never by hash alone;
//   - a block with refs > 0 is never freed, evicted or handed out again.
//   - a request's blocks go back tail first (kv_release): the LRU list then
//     holds a cached prefix's leaves before its root, so eviction takes the
//     leaves first and a root stays matchable as long as anything below it
//     is (evicting a root bumps its generation and strands its descendants).
//
// The manager hands out blocks and says what it did; it writes only the
// block tables it is given (its own type, BlockTable) and never a request's
// other fields: the scheduler decides what the results mean for a request.
#pragma once
#include <stdint.h>
#include "limits.h"
#include "llm_config.h"
#include "llm_session.h"
#include "counters.h"

namespace ai {

constexpr uint32_t kNoBlock = 0xffffffffu;
constexpr uint32_t kNoCkpt = 0xffffffffu;   // no recurrent-state checkpoint (kv_checkpoint.h)

// Boot options (set by start(); read-only afterwards).
extern uint32_t kv_mb, kv_block_size;
extern uint32_t kv_blocks_override;   // ai.kv_blocks=N: exactly N blocks per model (0: from kv_mb)
extern bool prefix_cache_enabled;

// One request's page table: block[i] holds its positions [i*B, (i+1)*B).
struct BlockTable {
  uint32_t n;            // entries in use
  uint32_t registered;   // leading prompt blocks already offered to the prefix cache
  // The newest recurrent-state checkpoint this request took (kNoCkpt:
  // none): not evicted while the request holds blocks, so that a preempted
  // request comes back there (kv_checkpoint.h, "held").
  uint32_t held_ckpt;
  uint32_t block[kMaxKvBlocks];
};

// What identifies a request's cacheable prefix: its model, its activation
// kind (int8 and float K/V differ) and its prompt.
struct PrefixKey {
  int model;
  bool int8;
  // The cache domain (sharing.h): only requests of the same domain share
  // blocks. It goes into the first block's key, so every block after it
  // belongs to that domain too, through its parent.
  uint32_t domain;
  const uint32_t* prompt;
  uint32_t prompt_len;
  // The tokens generated after the prompt so far (a recurrent model's
  // requests: their blocks and checkpoints past the prompt are cached too,
  // so that the next turn of a chat, whose prompt holds this whole
  // sequence, resumes near its end). Position i of the sequence is token(i).
  const uint32_t* output = nullptr;
  uint32_t output_len = 0;
  uint32_t len() const { return prompt_len + output_len; }
  uint32_t token(uint32_t i) const { return i < prompt_len ? prompt[i] : output[i - prompt_len]; }
};

// Tokens [from, from + n) of key's sequence as one array: a pointer into
// the prompt when they all lie there, else copied into scratch[n].
const uint32_t* key_tokens(const PrefixKey& key, uint32_t from, uint32_t n, uint32_t* scratch);

// What the first block of a prompt is keyed by, in place of a parent
// block: its cache domain (sharing.h) and the activation kind (int8 and
// float K/V rows differ). Different domains or kinds never give the same tag.
constexpr uint32_t first_block_tag(uint32_t domain, bool int8) { return domain << 1 | (int8 ? 1u : 0u); }

// The pools' occupancy now (the counters of hits and preemptions are in
// counters.h).
struct KvStats {
  uint64_t blocks_total, blocks_used, blocks_cached;   // used: by requests (not checkpoints)
  uint64_t checkpoints, checkpoint_blocks, checkpoint_bytes;   // recurrent-state checkpoints (kv_checkpoint.h)
};

// Creates the pool of model m (the loader calls it once the weights are in
// memory; `config` is the model's, `name` is for the console). A model whose
// pool cannot be made (no memory, or runtime_seq_len needs more than
// kMaxKvBlocks blocks) runs with a contiguous KV cache per request instead,
// and kv_pool(m) is nullptr. `max_requests` bounds the pool to what that
// many full-length requests could use.
void kv_init_model(int m, const llm::Config& config, const char* name, uint32_t max_requests);
const llm::KvPool* kv_pool(int m);   // nullptr: this model is not paged

// Blocks a request of this model needs for n positions.
uint32_t kv_blocks_for(uint32_t positions);
// True if a request needing `positions` positions could ever run (the pool
// is big enough when nobody else holds a block). Lock held.
bool kv_could_fit(int m, uint32_t positions);

// Admission: fills the empty `table` with the cached prefix of `key` (the
// longest run of full prompt blocks found in the cache, leaving at least one
// of the `context` positions to compute) and blocks for the first
// `positions` positions. Returns the prompt tokens the cache supplied, or
// -1, changing nothing, if the free and evictable blocks are not enough.
// Lock held.
// A model with linear-attention layers resumes only from a recurrent-state
// checkpoint (kv_checkpoint.h): then the prefix ends at the deepest one
// found, which is pinned and returned in *ckpt (kNoCkpt: none; a caller
// without ckpt gets no reuse for such a model) until kv_ckpt_unpin().
int32_t kv_admit(const PrefixKey& key, uint32_t context, uint32_t positions, BlockTable& table,
                 uint32_t* ckpt = nullptr);
// Growth: makes `table` cover `positions` positions. False if no block is
// free or evictable (the caller preempts someone); the blocks taken so far
// stay in the table. Lock held.
bool kv_grow(int m, BlockTable& table, uint32_t positions);
// After the session has computed positions [0, fed): registers the newly
// full prompt blocks of `table` in the prefix cache. Lock held.
void kv_publish(const PrefixKey& key, uint32_t fed, BlockTable& table);
// Rollback (positions computed and not accepted): `table` keeps the blocks
// that cover its first `positions` positions (a partly used last block
// stays); whole blocks past them go back, tail first. Lock held.
void kv_shrink(int m, BlockTable& table, uint32_t positions);
// The table's owner no longer needs its blocks (finished, cancelled or
// preempted): each goes back, tail first, to the free list or, if it holds
// a cached prefix, to the LRU list of unreferenced cached blocks. The table
// is left empty. A preempted owner's newest checkpoint stays awaited
// (kv_pool.h, Checkpoint::awaited). Lock held.
void kv_release(int m, BlockTable& table, bool preempted = false);

KvStats kv_stats();   // lock held

// ---- for checking (the host tests; lock held) ----------------------------
// Model m's pool as the invariants above see it: how many blocks, which
// are free, referenced or cached, each block's reference count.
struct KvPoolView {
  uint32_t n_blocks, n_free, n_lru;
  const uint32_t* refs;          // [n_blocks]
  const uint8_t* cached;         // [n_blocks]
  const uint32_t* free_stack;    // [n_free]
  uint32_t lru_head;             // then lru_next[] to the tail
  const uint32_t* lru_next;      // [n_blocks]
  const uint32_t* gen;           // [n_blocks]
  const uint32_t* parent;        // [n_blocks] (cached blocks)
  const uint32_t* parent_gen;    // [n_blocks] (cached blocks)
};
KvPoolView kv_view(int m);
// Model m's blocks in use (neither free nor cached) and cached (the trace's KV events).
inline uint32_t kv_blocks_in_use(int m) {
  KvPoolView v = kv_view(m);
  return v.n_blocks - v.n_free - v.n_lru;
}
inline uint32_t kv_blocks_cached(int m) { return kv_view(m).n_lru; }
// How many leading full prompt blocks of `key` a lookup finds in the cache
// right now (changes nothing).
uint32_t kv_cached_prefix_blocks(const PrefixKey& key);
// Gives model m's pool back and forgets it (the host tests start each case
// from nothing; the kernel never calls it).
void kv_drop_model(int m);

}  // namespace ai
