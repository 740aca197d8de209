// Recurrent-state checkpoints in the KV pool: see kv_checkpoint.h for the
// idea, the keys and the invariants. Map: finding one (key match, the
// deepest for an admission); the positions where requests leave one;
// reserve, publish, drop, unpin; eviction (for take_block); copying a
// session's snapshot in and out of a checkpoint's blocks; stats.
// Locking: ai::lock for everything but kv_ckpt_copy (see there).
#include "kv_checkpoint.h"
#include "kv_pool.h"
#include "platform.h"

namespace ai {

namespace {

uint32_t* blocks_of(const ModelKv& k, uint32_t c) { return k.ckpt_blocks + size_t(c) * k.blocks_per_ckpt; }
uint32_t* tail_of(const ModelKv& k, uint32_t c) { return k.ckpt_tokens + size_t(c) * k.pool.block_size; }

// Record c back to Free, its blocks to the free list.
void release(ModelKv& k, uint32_t c) {
  uint32_t* b = blocks_of(k, c);
  for (uint32_t i = k.blocks_per_ckpt; i-- > 0;) put_block(k, b[i]);
  k.ckpt[c] = Checkpoint{};
  k.n_ckpt--;
}

// Is Cached checkpoint c the one of (anchor, tag, pos, key's tokens)?
bool matches(const ModelKv& k, uint32_t c, uint32_t anchor, uint32_t tag, uint32_t pos, const PrefixKey& key) {
  const Checkpoint& r = k.ckpt[c];
  if (r.state != CkptState::Cached || r.anchor != anchor || r.anchor_tag != tag || r.pos != pos) return false;
  uint32_t B = k.pool.block_size, from = pos / B * B;
  const uint32_t* tail = tail_of(k, c);
  for (uint32_t i = from; i < pos; i++)
    if (tail[i - from] != key.token(i)) return false;
  return true;
}

// The anchor of position pos in a request's table, and its key tag (the
// anchor need not be cached yet: the caller checks).
uint32_t anchor_in(const BlockTable& t, uint32_t pos, uint32_t B) {
  uint32_t j = pos / B;
  return j > 0 ? t.block[j - 1] : kNoBlock;
}

uint32_t find(const ModelKv& k, uint32_t anchor, uint32_t tag, uint32_t pos, const PrefixKey& key) {
  for (uint32_t c = 0; c < kMaxCheckpoints; c++)
    if (matches(k, c, anchor, tag, pos, key)) return c;
  return kNoCkpt;
}

bool anchor_cached(const ModelKv& k, uint32_t anchor) { return anchor == kNoBlock || k.cached[anchor]; }

// The anchor a checkpoint at pos of this key has in the cache: the
// table's own block below pos's block if that is cached, else the cached
// block at the end of the chain of key's prompt blocks 0..pos/B-1 (a
// request whose own blocks stayed private, because the same tokens were
// cached by someone else first, anchors its checkpoints there: those
// blocks hold the same rows). False if the cache does not hold them all.
bool cached_anchor(const ModelKv& k, const PrefixKey& key, uint32_t own, uint32_t pos, uint32_t* anchor) {
  *anchor = own;
  if (anchor_cached(k, own)) return true;
  uint32_t B = k.pool.block_size, parent = kNoBlock, scratch[256];
  for (uint32_t i = 0; i < pos / B; i++) {
    parent = lookup(k, parent, parent_tag(k, parent, key), key_tokens(key, i * B, B, scratch));
    if (parent == kNoBlock) return false;
  }
  *anchor = parent;
  return true;
}

}  // namespace

// ---- for kv_cache.cpp -----------------------------------------------------

uint32_t ckpt_find_deepest(const ModelKv& k, const PrefixKey& key, const uint32_t* hits, uint32_t n_hits,
                           uint32_t context, uint32_t* j_out) {
  uint32_t B = k.pool.block_size;
  for (uint32_t j = n_hits + 1; j-- > 0;) {
    uint32_t anchor = j > 0 ? hits[j - 1] : kNoBlock;
    uint32_t tag = parent_tag(k, anchor, key);
    uint32_t best = kNoCkpt;
    for (uint32_t c = 0; c < kMaxCheckpoints; c++) {
      const Checkpoint& r = k.ckpt[c];
      // Its tokens are the key's, and at least one position is left to
      // compute (the newest token's logits).
      if (r.state != CkptState::Cached || r.pos / B != j || r.pos > key.len() || r.pos >= context) continue;
      if (!matches(k, c, anchor, tag, r.pos, key)) continue;
      if (best == kNoCkpt || r.pos > k.ckpt[best].pos) best = c;
    }
    if (best != kNoCkpt) {
      *j_out = j;
      return best;
    }
  }
  *j_out = 0;
  return kNoCkpt;
}

bool evictable(const Checkpoint& r) { return r.state == CkptState::Cached && r.readers == 0 && !r.held; }

uint32_t ckpt_evictable_blocks(const ModelKv& k, uint32_t except) {
  uint32_t n = 0;
  for (uint32_t c = 0; c < kMaxCheckpoints; c++)
    if (c != except && evictable(k.ckpt[c])) n += k.blocks_per_ckpt;
  return n;
}

void ckpt_let_go(ModelKv& k, uint32_t c, bool preempted) {
  if (c >= kMaxCheckpoints || k.ckpt[c].state != CkptState::Cached || !k.ckpt[c].held)
    panic("ai: checkpoint %u let go while not held", c);
  k.ckpt[c].held = false;
  k.ckpt[c].awaited = preempted;
  k.ckpt[c].stamp = ++k.clock;
}

void ckpt_anchor_evicted(ModelKv& k, uint32_t b) {
  if (k.n_ckpt == 0) return;
  for (uint32_t c = 0; c < kMaxCheckpoints; c++)
    if (k.ckpt[c].state == CkptState::Cached && k.ckpt[c].anchor == b) {
      // Its anchor is cached and unreferenced (it is being evicted), so no
      // admission can have pinned this checkpoint. A held one (its request
      // runs on a private copy of the anchor) stays until the request lets
      // go: it can never match again (the anchor's generation moved on).
      if (k.ckpt[c].readers != 0) panic("ai: checkpoint %u pinned while its anchor block %u is evicted", c, b);
      if (k.ckpt[c].held) continue;
      release(k, c);
    }
}

bool ckpt_evict_oldest(ModelKv& k, bool spare_awaited) {
  uint32_t oldest = kNoCkpt;
  for (uint32_t c = 0; c < kMaxCheckpoints; c++) {
    const Checkpoint& r = k.ckpt[c];
    if (evictable(r) && !(spare_awaited && r.awaited) && (oldest == kNoCkpt || r.stamp < k.ckpt[oldest].stamp))
      oldest = c;
  }
  if (oldest == kNoCkpt) return false;
  release(k, oldest);
  return true;
}

// ---- the scheduler's side ---------------------------------------------------

uint32_t kv_next_checkpoint(const PrefixKey& key, const BlockTable& table, uint32_t fed) {
  const ModelKv& k = pools[key.model];
  if (!k.paged || !k.recurrent || !k.reuses_prefixes) return 0;
  uint32_t B = k.pool.block_size, L = key.prompt_len;
  // Both candidates in increasing order: the end of the last whole block
  // and one before the prompt's end (the other way round when the prompt
  // ends at a block's end).
  uint32_t whole = L / B * B;
  uint32_t at[2] = {whole < L - 1 ? whole : L - 1, whole < L - 1 ? L - 1 : whole};
  for (uint32_t pos : at) {
    if (pos == 0 || pos <= fed || pos > L) continue;
    // Already cached under the same key: no need to stop there.
    uint32_t anchor;
    if (cached_anchor(k, key, anchor_in(table, pos, B), pos, &anchor) &&
        find(k, anchor, parent_tag(k, anchor, key), pos, key) != kNoCkpt)
      continue;
    return pos;
  }
  return 0;
}

uint32_t kv_final_checkpoint(const PrefixKey& key, const BlockTable& table, uint32_t fed) {
  ModelKv& k = pools[key.model];
  if (!k.paged || !k.recurrent || !k.reuses_prefixes || fed == 0 || fed > key.len()) return kNoCkpt;
  uint32_t B = k.pool.block_size, anchor;
  if (cached_anchor(k, key, anchor_in(table, fed, B), fed, &anchor) &&
      find(k, anchor, parent_tag(k, anchor, key), fed, key) != kNoCkpt)
    return kNoCkpt;   // this sequence's state at fed is cached already
  // A bet on a next turn that may never come: it takes free blocks, or
  // the blocks of older checkpoints, least recently used first (in a
  // chat, the earlier turns' states, which the next turn has gone past),
  // but never a cached prefix block, nor a checkpoint that a running
  // request (held), an admitted one (pinned) or a preempted one (awaited)
  // counts on.
  while (k.n_free < k.blocks_per_ckpt && ckpt_evict_oldest(k, true)) {
  }
  if (k.n_free < k.blocks_per_ckpt) return kNoCkpt;
  return kv_ckpt_reserve(key, table, fed);
}

uint32_t kv_ckpt_reserve(const PrefixKey& key, const BlockTable& table, uint32_t pos) {
  ModelKv& k = pools[key.model];
  if (!k.paged || !k.recurrent || !k.reuses_prefixes || pos == 0 || pos / k.pool.block_size > table.n) return kNoCkpt;
  // A Free record: when all are in use, the least recently used one goes.
  if (k.n_ckpt == kMaxCheckpoints && !ckpt_evict_oldest(k)) return kNoCkpt;
  uint32_t c = 0;
  while (k.ckpt[c].state != CkptState::Free) c++;
  // Its blocks, taken as any block is (free first, then evicting the least
  // recently used); a record that cannot have them all gives them back.
  uint32_t* b = blocks_of(k, c);
  for (uint32_t i = 0; i < k.blocks_per_ckpt; i++) {
    b[i] = take_block(k);
    if (b[i] == kNoBlock) {
      while (i-- > 0) put_block(k, b[i]);
      return kNoCkpt;
    }
  }
  Checkpoint& r = k.ckpt[c];
  r = Checkpoint{};
  r.state = CkptState::Writing;
  r.pos = pos;
  r.anchor = anchor_in(table, pos, k.pool.block_size);
  uint32_t from = pos / k.pool.block_size * k.pool.block_size;
  for (uint32_t i = from; i < pos; i++) tail_of(k, c)[i - from] = key.token(i);
  k.n_ckpt++;
  return c;
}

void kv_ckpt_publish(const PrefixKey& key, BlockTable& table, uint32_t id) {
  ModelKv& k = pools[key.model];
  Checkpoint& r = k.ckpt[id];
  if (r.state != CkptState::Writing) panic("ai: checkpoint %u published twice", id);
  // The anchor must be the cached block of this prefix: for a private copy
  // (someone else cached the same tokens first), the cached one.
  if (!cached_anchor(k, key, r.anchor, r.pos, &r.anchor)) {
    release(k, id);
    return;
  }
  uint32_t tag = parent_tag(k, r.anchor, key);
  if (find(k, r.anchor, tag, r.pos, key) != kNoCkpt) {   // an equal one is cached already
    release(k, id);
    return;
  }
  r.anchor_tag = tag;
  r.state = CkptState::Cached;
  r.stamp = ++k.clock;
  // The request's newest: kept while it runs (its older one, if any, is
  // evictable from now on).
  if (table.held_ckpt != kNoCkpt) ckpt_let_go(k, table.held_ckpt);
  r.held = true;
  table.held_ckpt = id;
}

void kv_ckpt_drop(int m, uint32_t id) {
  ModelKv& k = pools[m];
  if (k.ckpt[id].state != CkptState::Writing) panic("ai: checkpoint %u dropped while not being written", id);
  release(k, id);
}

void kv_ckpt_unpin(int m, uint32_t id) {
  ModelKv& k = pools[m];
  Checkpoint& r = k.ckpt[id];
  if (r.state != CkptState::Cached || r.readers == 0) panic("ai: checkpoint %u unpinned while not pinned", id);
  r.readers--;
  r.awaited = false;     // if its preempted request was the reader, it is back
  r.stamp = ++k.clock;   // just used: the last to be evicted
}

uint32_t kv_ckpt_owned_blocks(int m, uint32_t* out, uint32_t cap) {
  const ModelKv& k = pools[m];
  uint32_t n = 0;
  for (uint32_t c = 0; c < kMaxCheckpoints; c++)
    if (k.ckpt[c].state != CkptState::Free)
      for (uint32_t i = 0; i < k.blocks_per_ckpt && n < cap; i++) out[n++] = blocks_of(k, c)[i];
  return n;
}

// ---- copying ------------------------------------------------------------------

namespace {

// A checkpoint's floats as one stream over its blocks: each block gives
// its K half, then its V half (half = n_full * B * kv_dim floats each).
// Copies n floats between span and the stream's floats [at, at + n).
void copy_at(const llm::KvPool& pool, const uint32_t* blocks, size_t half, size_t at, float* span, size_t n,
             bool save) {
  while (n > 0) {
    size_t seg = at / half, off = at % half;
    float* base = (seg % 2 == 0 ? pool.k : pool.v) + size_t(blocks[seg / 2]) * half + off;
    size_t take = half - off < n ? half - off : n;
    if (save) memcpy(base, span, take * sizeof(float));
    else memcpy(span, base, take * sizeof(float));
    span += take;
    n -= take;
    at += take;
  }
}

size_t half_block(const ModelKv& k) { return size_t(k.config.n_full_layers()) * k.pool.block_size * k.config.kv_dim(); }

// A walk over the stream from float `at` on (Session::snapshot_spans).
struct Stream {
  const llm::KvPool* pool;
  const uint32_t* blocks;
  size_t half;     // floats per half block
  size_t at;       // the next float of the stream
  bool save;       // session -> checkpoint
};

void copy_span(void* ctx, float* span, size_t n) {
  auto& s = *static_cast<Stream*>(ctx);
  copy_at(*s.pool, s.blocks, s.half, s.at, span, n, s.save);
  s.at += n;
}

// The pass's sink: a piece of the recurrent state, at its place.
void put_state(void* ctx, size_t at, const float* src, size_t n) {
  const auto& w = *static_cast<const CkptWriter*>(ctx);
  copy_at(*w.pool, w.blocks, w.half, at, const_cast<float*>(src), n, true);
}

}  // namespace

void kv_ckpt_copy(int m, uint32_t id, llm::Session& session, bool save) {
  // No lock: a Writing record belongs to the pass that writes it, a Cached
  // one with readers > 0 cannot be evicted, and neither's blocks move.
  const ModelKv& k = pools[m];
  uint32_t B = k.pool.block_size, pos = k.ckpt[id].pos;
  Stream s{&k.pool, blocks_of(k, id), half_block(k), 0, save};
  session.snapshot_spans(pos / B * B, pos, copy_span, &s);
}

void kv_ckpt_writer(int m, uint32_t id, CkptWriter* writer) {
  const ModelKv& k = pools[m];
  if (k.ckpt[id].state != CkptState::Writing) panic("ai: checkpoint %u written while not reserved", id);
  *writer = CkptWriter{{put_state, writer}, &k.pool, blocks_of(k, id), half_block(k)};
}

void kv_ckpt_copy_rows(int m, uint32_t id, llm::Session& session) {
  // No lock, as kv_ckpt_copy: the record is Writing, its blocks stay.
  const ModelKv& k = pools[m];
  uint32_t B = k.pool.block_size, pos = k.ckpt[id].pos;
  Stream s{&k.pool, blocks_of(k, id), half_block(k), llm::Session::recurrent_floats(k.config), true};
  session.snapshot_row_spans(pos / B * B, pos, copy_span, &s);
}

}  // namespace ai
