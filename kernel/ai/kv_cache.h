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
//   page table                     Request::kv_table
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
#pragma once
#include <stdint.h>
#include "../error.h"
#include "llm_session.h"

namespace ai {

struct Request;

constexpr uint32_t kNoBlock = 0xffffffffu;
constexpr uint32_t kMaxKvBlocks = 1024;         // block-table entries per request
constexpr uint32_t kDefaultKvMb = 96;           // per model: SmolLM2 shape, ~130 blocks
constexpr uint32_t kDefaultKvBlock = 16;        // positions per block

// Boot options (set by start(); read-only afterwards).
extern uint32_t kv_mb, kv_block_size;
extern uint32_t kv_blocks_override;   // ai.kv_blocks=N: exactly N blocks per model (0: from kv_mb)
extern bool prefix_cache_enabled;

struct KvStats {
  uint64_t blocks_total, blocks_used, blocks_cached;
  uint64_t prefix_hit_requests, prefix_hit_tokens, preemptions;
};

// Creates the pool of model m (the loader calls it once the weights are in
// memory). A model whose pool cannot be made (no memory, or runtime_seq_len
// needs more than kMaxKvBlocks blocks) runs with a contiguous KV cache per
// request instead, and kv_pool(m) is nullptr.
void kv_init_model(int m);
const llm::KvPool* kv_pool(int m);   // nullptr: this model is not paged

// Blocks a request of this model needs for n positions.
uint32_t kv_blocks_for(uint32_t positions);
// True if a request needing `positions` positions could ever run (the pool
// is big enough when nobody else holds a block). Lock held.
bool kv_could_fit(int m, uint32_t positions);

// Admission: gives r its cached prefix (the longest run of full prompt blocks
// found in the cache, leaving at least one position to compute) and blocks
// for its first `positions` positions. Returns false, changing nothing, if
// the free and evictable blocks are not enough. Lock held.
bool kv_admit(Request* r, uint32_t positions);
// Growth: makes r's table cover `positions` positions. False if no block
// is free or evictable (the caller preempts someone). Lock held.
bool kv_grow(Request* r, uint32_t positions);
// After r's session has fed up to position r->fed: registers r's newly full
// prompt blocks in the prefix cache. Lock held.
void kv_publish(Request* r);
// r no longer needs its blocks (finished, cancelled or preempted): each
// goes back to the free list, or, if it holds a cached prefix, to the LRU
// list of unreferenced cached blocks. Lock held.
void kv_release(Request* r);

KvStats kv_stats();   // lock held
void kv_count_preemption();

}  // namespace ai
