// Inside the KV block manager: one model's pool as kv_cache.cpp (blocks,
// the prefix cache) and kv_checkpoint.cpp (recurrent-state checkpoints
// stored in the same blocks) both see it. Only those two files include
// this header; everyone else goes through kv_cache.h and kv_checkpoint.h.
// Locking: ai::lock for every field.
#pragma once
#include <stdint.h>
#include "kv_cache.h"

namespace ai {

// At most this many checkpoints per model (the record table is static).
constexpr uint32_t kMaxCheckpoints = 32;

// A recurrent-state checkpoint (kv_checkpoint.h): a snapshot of a session at
// position `pos`, stored in `blocks_per_ckpt` pool blocks of its own.
//   Free     the record is unused, it holds no block;
//   Writing  reserved by the scheduler for a pass that ends at pos; the
//            worker copies the session's snapshot into it after the pass;
//            commit() makes it Cached or gives it back (never matched);
//   Cached   findable by its key; evictable when no request is restoring
//            from it (readers == 0).
enum class CkptState : uint8_t { Free, Writing, Cached };
struct Checkpoint {
  CkptState state = CkptState::Free;
  uint32_t readers = 0;      // admitted requests that have not yet restored from it
  bool held = false;         // Cached: the newest one of a request that still holds its blocks
  // Cached: the newest one of a request that was preempted and has not yet
  // come back (kv_ckpt_unpin clears it). Evictable as any other when blocks
  // are short, but a final checkpoint, a bet on a chat's next turn, never
  // takes it (kv_final_checkpoint): the preempted request is a sure use.
  bool awaited = false;
  uint32_t anchor = kNoBlock;   // the cached block just below pos's block (kNoBlock: pos < B)
  uint32_t anchor_tag = 0;      // Cached: the anchor's gen (or first_block_tag) when published
  uint32_t pos = 0;             // the snapshot's position; the tokens [anchor end, pos) are below
  uint64_t stamp = 0;           // LRU clock when last published or restored
};

// One model's pool. Per-block arrays are indexed by block id.
struct ModelKv {
  bool paged = false;
  bool reuses_prefixes = false;    // prefix cache on, and the model's state can be resumed
  bool recurrent = false;          // linear-attention layers: reuse needs a checkpoint
  uint64_t half_bytes = 0, meta_bytes = 0;   // the allocations (kv_drop_model gives them back)
  void* meta = nullptr;
  llm::KvPool pool;
  llm::Config config;              // the model's shape (a checkpoint's size and layout)
  void* kmem = nullptr;
  void* vmem = nullptr;
  uint32_t n_blocks = 0;
  uint32_t* refs = nullptr;        // requests (or one checkpoint) whose table holds the block
  uint32_t* gen = nullptr;         // bumped each time the block is given new content
  uint8_t* cached = nullptr;       // holds a registered prefix block (parent + tokens below)
  uint32_t* parent = nullptr;      // cached: the block before it in its prefix, or kNoBlock
  uint32_t* parent_gen = nullptr;  // ... and that block's gen when this one was registered
  uint32_t* tokens = nullptr;      // cached: [n_blocks][B] the prompt tokens it holds
  uint32_t* lru_prev = nullptr;    // the LRU list of cached blocks with refs == 0
  uint32_t* lru_next = nullptr;
  uint32_t lru_head = kNoBlock, lru_tail = kNoBlock, n_lru = 0;
  uint32_t* free_stack = nullptr;  // never-cached free blocks
  uint32_t n_free = 0;
  uint32_t* bucket = nullptr;      // lookup table: head of each hash chain
  uint32_t* chain_next = nullptr;
  uint32_t n_buckets = 0;
  // Checkpoints (recurrent models with reuse on): each non-Free record owns
  // blocks_per_ckpt blocks (refs 1, neither free nor cached), listed in
  // ckpt_blocks[c * blocks_per_ckpt ...]; its tail tokens (those after its
  // anchor block, pos % B of them) in ckpt_tokens[c * B ...].
  Checkpoint ckpt[kMaxCheckpoints];
  uint32_t blocks_per_ckpt = 0;
  uint32_t* ckpt_blocks = nullptr;
  uint32_t* ckpt_tokens = nullptr;
  uint32_t n_ckpt = 0;             // records not Free
  uint64_t clock = 0;              // the checkpoints' LRU clock
};

extern ModelKv pools[KAI_AI_MAX_MODELS];

// kv_cache.cpp: a block for new content (free, else evicted; kNoBlock if
// none can be had) and giving one back.
uint32_t take_block(ModelKv& k);
void put_block(ModelKv& k, uint32_t b);
// The key of the block after `parent` in key's prefix chain, and a lookup.
uint32_t parent_tag(const ModelKv& k, uint32_t parent, const PrefixKey& key);
uint32_t lookup(const ModelKv& k, uint32_t parent, uint32_t pgen, const uint32_t* toks);

// kv_checkpoint.cpp, for take_block: block b is being evicted (the
// checkpoints anchored on it can never be found again: they go too), and
// the oldest checkpoint nobody is restoring from, evicted to free its
// blocks (false if there is none; with spare_awaited, none that a
// preempted request awaits).
void ckpt_anchor_evicted(ModelKv& k, uint32_t b);
bool ckpt_evict_oldest(ModelKv& k, bool spare_awaited = false);
// The request that held checkpoint c (BlockTable::held_ckpt) let its
// blocks go: c is evictable from now on, as the most recently used, and
// awaited if the request was preempted.
void ckpt_let_go(ModelKv& k, uint32_t c, bool preempted = false);
// Blocks of Cached checkpoints that nobody is restoring from, but for
// `except` (admission counts them as evictable).
uint32_t ckpt_evictable_blocks(const ModelKv& k, uint32_t except);
// Admission of a recurrent model: the deepest Cached checkpoint of key's
// prompt at a position < context whose anchor is hits[j - 1] (the first
// j blocks of the prompt found in the cache, j <= n_hits), deepest j
// first. Sets *j; kNoCkpt if there is none.
uint32_t ckpt_find_deepest(const ModelKv& k, const PrefixKey& key, const uint32_t* hits, uint32_t n_hits,
                           uint32_t context, uint32_t* j);

}  // namespace ai
