// Recurrent-state checkpoints: prefix reuse for models with linear-attention
// layers (Qwen3.5's Gated DeltaNet).
//
// A full-attention layer keeps one K/V row per position, so a cached prefix
// is just its blocks (kv_cache.h). A linear-attention layer keeps one state
// that every token changes in place: after a prefix, its state is a single
// snapshot, not something that can be cut out of per-position rows. So a
// request of such a model can resume at position p only from a copy of the
// whole recurrent state taken at p by an earlier request with the same
// tokens: a checkpoint (llm::Session::snapshot_spans: every linear layer's
// DeltaNet state and conv window, plus the K/V rows of the positions after
// the last whole block below p, which are in no cached block).
//
//   OS idea                        here
//   a process image on disk        a checkpoint: the state at one position
//   (a core dump you can resume)
//   page cache accounting          its bytes are KV pool blocks (refs 1), so
//                                  checkpoints and cached prefixes compete
//                                  for the same memory and are evicted alike
//
// Where checkpoints are taken (kv_next_checkpoint): at the end of a prompt's
// last whole block (a longer prompt with this one as prefix resumes there),
// and one position before the prompt's end (the same prompt again resumes
// there: its last token must still be fed for its logits, so a checkpoint at
// the very end would be of no use to it). The scheduler cuts prefill chunks
// at those positions; the scheduler reserves a checkpoint for the pass that
// reaches one, anywhere in the pass: the item at the position before it
// carries a sink (llm::BatchItem::keep_state, CkptWriter below) through
// which the pass copies each linear layer's state into the checkpoint's
// blocks right after that item, so a prompt chunk need not stop there
// (stopping cost a whole extra pass over the weights: a 5-token prompt ran
// as 4 + 1 positions). After the pass the worker adds the K/V rows
// (kv_ckpt_copy_rows); commit() publishes it once its anchor block is in
// the prefix cache and the position stood.
//
// Keys (the same rules as prefix blocks, so the same session domains):
// a checkpoint at position p is keyed by its anchor, the cached block that
// holds positions [p/B*B - B, p/B*B) (the chain below it names every earlier
// token, the cache domain and the activation kind), the anchor's generation
// and the tail tokens [p/B*B, p). A checkpoint with p < B has no anchor: the
// first block's tag (domain, activation kind) stands in for it. A match is
// always an exact comparison of all of it.
//
// Invariants (ai::lock):
//   - a record not Free owns exactly blocks_per_ckpt blocks (refs 1, not
//     cached, not free); a Free one owns none;
//   - a Cached checkpoint's anchor is a cached block whose generation is
//     anchor_tag: evicting the anchor (take_block) drops the checkpoint;
//   - a checkpoint is evicted only when Cached, readers == 0 and not held:
//     a request admitted to resume from it pins it until its session has
//     restored it (commit of that iteration); a Writing one belongs to the
//     pass writing it; the newest one a request took is held until the
//     request lets its blocks go (kv_release: finished, or preempted, and
//     then it is where the request comes back; BlockTable::held_ckpt);
//   - at most one Cached checkpoint per key.
// Eviction: when no block is free, the least recently used cached block
// goes first (its checkpoints with it), then the least recently used
// checkpoint: a cached block of a recurrent model is of use only below a
// checkpoint, and the leaves of the block tree go before the roots.
#pragma once
#include <stdint.h>
#include "kv_cache.h"

namespace ai {

// The next position after `fed` where a request of this key should leave a
// checkpoint (0: none: the model has no linear layers, reuse is off, fed is
// past them, or one is already cached there). Lock held.
uint32_t kv_next_checkpoint(const PrefixKey& key, const BlockTable& table, uint32_t fed);
// Reserves a Writing checkpoint for position pos of a request with this key
// and table (a position the coming pass reaches). kNoCkpt if none
// can be had without preempting anyone. Lock held.
uint32_t kv_ckpt_reserve(const PrefixKey& key, const BlockTable& table, uint32_t pos);
// At a request's end (its last token chosen; positions [0, fed) computed
// and no rollback pending): reserves a checkpoint at fed, keyed by the
// whole sequence, prompt and output (PrefixKey::output). The next turn of a
// chat, whose prompt is this sequence plus the template's tail and a new
// message, resumes there: chat templates rewrite the end of a turn, so the
// state one token before the last (often the end-of-turn id) is the one
// that still matches. It takes free blocks, or older checkpoints' blocks
// (least recently used first: a chat's earlier turns), never cached prefix
// blocks (it is a bet on a next turn). kNoCkpt: none (reuse off, an equal
// one is cached, or not enough blocks that way). Lock held.
uint32_t kv_final_checkpoint(const PrefixKey& key, const BlockTable& table, uint32_t fed);
// After the pass and kv_publish(): the Writing checkpoint `id` becomes
// Cached if its anchor is now in the prefix cache (and no equal one is),
// else it goes back. Lock held.
void kv_ckpt_publish(const PrefixKey& key, BlockTable& table, uint32_t id);
// A Writing checkpoint whose pass failed or whose request left: goes back.
void kv_ckpt_drop(int m, uint32_t id);
// The request admitted to resume from `id` has restored it (or left).
void kv_ckpt_unpin(int m, uint32_t id);
// Copies between the session and checkpoint `id` (into the checkpoint if
// `save`): the session's snapshot_spans(p/B*B, p), p the checkpoint's
// position. No lock: the record is Writing or pinned, so its blocks stay.
void kv_ckpt_copy(int m, uint32_t id, llm::Session& s, bool save);
// Writing checkpoint `id` while the pass runs: writer->sink, set on the
// item at position pos - 1, puts the session's recurrent state straight
// into the checkpoint's blocks (from any hart: the pieces never overlap).
// After the pass, kv_ckpt_copy_rows adds the K/V rows of [pos/B*B, pos),
// which the pass wrote in the session's own blocks and nothing after pos
// overwrites. The writer must stay where it is until the pass ends.
struct CkptWriter {
  llm::StateSink sink;
  const llm::KvPool* pool;
  const uint32_t* blocks;
  size_t half;   // floats per half block (K or V)
};
void kv_ckpt_writer(int m, uint32_t id, CkptWriter* writer);
void kv_ckpt_copy_rows(int m, uint32_t id, llm::Session& s);
// For checking (the host tests; lock held): the blocks model m's
// checkpoints own, at most cap of them into out; returns how many.
uint32_t kv_ckpt_owned_blocks(int m, uint32_t* out, uint32_t cap);

}  // namespace ai
