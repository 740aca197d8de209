// Buffer cache. Lookups go through a small hash table (the large-read path
// asks "is this block cached?" for every block it reads), recycling follows
// an LRU list, and each buffer's data is a page of its own for DMA.
#include "bio.h"
#include "../drivers/virtio_blk.h"
#include "../kalloc.h"
#include "../mem_policy.h"
#include "../printf.h"
#include "../spinlock.h"
#include "../string.h"

namespace fs {
namespace {

constexpr int NBUF = 512;        // 2 MiB of cached blocks
constexpr int NHASH = 251;

struct BCache {
  Spinlock lock{"bcache"};
  Buf head;                      // LRU list sentinel
  Buf* hash[NHASH] = {};
};

BCache bcache;
Buf bufs[NBUF];
alignas(4096) uint8_t buf_data[NBUF][BSIZE];
uint32_t block_limit = 0xffffffffu;
uint64_t disk_reads = 0;         // bcache.lock; blocks buf_io has read

uint32_t hash_of(uint32_t dev, uint32_t blockno) { return (blockno * 31u + dev) % NHASH; }

void hash_remove(Buf* b) {
  Buf** pp = &bcache.hash[hash_of(b->dev, b->blockno)];
  while (*pp && *pp != b) pp = &(*pp)->hnext;
  if (*pp) *pp = b->hnext;
  b->hnext = nullptr;
}

void hash_insert(Buf* b) {
  Buf** pp = &bcache.hash[hash_of(b->dev, b->blockno)];
  b->hnext = *pp;
  *pp = b;
}

Buf* lookup(uint32_t dev, uint32_t blockno) {
  for (Buf* b = bcache.hash[hash_of(dev, blockno)]; b; b = b->hnext)
    if (b->dev == dev && b->blockno == blockno) return b;
  return nullptr;
}

// A buffer for the block, locked; not necessarily valid.
ErrorOr<Buf*> bget(uint32_t dev, uint32_t blockno) {
  if (blockno >= block_limit) {
    kprintf("fs: block %u is outside the file system (corrupt image?)\n", blockno);
    return Errno::IO;
  }
  bcache.lock.acquire();
  if (Buf* b = lookup(dev, blockno)) {
    b->refcnt++;
    bcache.lock.release();
    b->lock.acquire();
    return b;
  }
  // Recycle the least recently used unreferenced buffer.
  for (Buf* b = bcache.head.prev; b != &bcache.head; b = b->prev) {
    if (b->refcnt == 0) {
      hash_remove(b);
      b->dev = dev;
      b->blockno = blockno;
      b->valid = false;
      b->refcnt = 1;
      hash_insert(b);
      bcache.lock.release();
      b->lock.acquire();
      return b;
    }
  }
  bcache.lock.release();
  kprintf("fs: buffer cache exhausted\n");
  return Errno::NoMem;
}

ErrorOr<void> buf_io(Buf* b, bool write) {
  BlkSegment seg{reinterpret_cast<uint64_t>(b->data), BSIZE};
  BlkRequest r;
  r.sector = uint64_t(b->blockno) * SECTORS_PER_BLOCK;
  r.write = write;
  r.segs = &seg;
  r.nseg = 1;
  return virtio_blk_rw(&r);
}

}  // namespace

void binit() {
  bcache.head.prev = &bcache.head;
  bcache.head.next = &bcache.head;
  for (int i = 0; i < NBUF; i++) {
    Buf* b = &bufs[i];
    b->data = buf_data[i];
    b->blockno = 0xffffffffu;
    b->next = bcache.head.next;
    b->prev = &bcache.head;
    bcache.head.next->prev = b;
    bcache.head.next = b;
  }
}

void bset_limit(uint32_t nblocks) { block_limit = nblocks; }

ErrorOr<Buf*> bread(uint32_t dev, uint32_t blockno) {
  Buf* b = TRY(bget(dev, blockno));
  if (!b->valid) {
    if (auto r = buf_io(b, false); r.is_error()) {
      brelse(b);
      return r.error();
    }
    b->valid = true;
    SpinlockGuard guard(bcache.lock);
    disk_reads++;
  }
  return b;
}

ErrorOr<Buf*> bget_overwrite(uint32_t dev, uint32_t blockno) {
  return bget(dev, blockno);
}

ErrorOr<void> bwrite(Buf* b) {
  if (!b->lock.holding()) panic("bwrite: buffer not locked");
  return buf_io(b, true);
}

void brelse(Buf* b) {
  b->lock.release();
  SpinlockGuard guard(bcache.lock);
  b->refcnt--;
  if (b->refcnt == 0) {
    // most recently used: move to the front
    b->next->prev = b->prev;
    b->prev->next = b->next;
    b->next = bcache.head.next;
    b->prev = &bcache.head;
    bcache.head.next->prev = b;
    bcache.head.next = b;
  }
}

void bpin(Buf* b) {
  SpinlockGuard guard(bcache.lock);
  b->refcnt++;
}

void bunpin(Buf* b) {
  SpinlockGuard guard(bcache.lock);
  b->refcnt--;
}

// A buffer nobody holds (refcnt 0) is clean: a write goes through the log,
// which pins (bpin) every block it has yet to install, and a read in
// progress holds its buffer. So forgetting one loses nothing but speed.
void bdrop_unheld() {
  SpinlockGuard guard(bcache.lock);
  for (Buf& b : bufs) {
    if (b.refcnt != 0 || !b.valid) continue;
    hash_remove(&b);
    b.valid = false;
    b.blockno = 0xffffffffu;   // as binit leaves it: in no hash chain
  }
}

BufCacheStats bcache_stats() {
  SpinlockGuard guard(bcache.lock);
  BufCacheStats s{0, disk_reads};
  for (const Buf& b : bufs) s.blocks += b.valid;
  return s;
}

uint32_t bcached_first(uint32_t dev, uint32_t start, uint32_t count) {
  SpinlockGuard guard(bcache.lock);
  uint32_t best = count;
  for (const Buf& b : bufs) {
    if (b.dev != dev || !(b.valid || b.refcnt > 0) || b.blockno < start) continue;
    if (b.blockno - start < best) best = b.blockno - start;
  }
  return best;
}

ErrorOr<void> blocks_io(uint32_t blockno, uint32_t count, const BlkSegment* segs, int nseg, bool write) {
  if (uint64_t(blockno) + count > block_limit) return Errno::IO;
  // Split the segment list into requests of at most max_segments segments
  // and 4 MiB each; cutting a segment where needed (all cuts fall on
  // block boundaries because every request covers whole blocks).
  constexpr int MAXREQ = 64;
  constexpr uint64_t MAX_REQ_BYTES = 4u << 20;
  BlkRequest reqs[MAXREQ];
  const int maxseg = virtio_blk_max_segments();
  uint64_t sector = uint64_t(blockno) * SECTORS_PER_BLOCK;
  int si = 0;
  uint64_t seg_off = 0;   // bytes of segs[si] already issued
  ErrorOr<void> result;
  int inflight = 0;
  // A segment may be split between two requests, so every request in
  // flight carries its own segment array (one page each).
  static constexpr int SEGCAP = 256;
  struct Chunk { BlkSegment segs[SEGCAP]; };
  static_assert(sizeof(Chunk) <= 4096);
  Chunk* chunks[MAXREQ] = {};
  auto flush = [&]() {
    for (int i = 0; i < inflight; i++) {
      auto r = virtio_blk_wait(&reqs[i]);
      if (r.is_error()) result = r;
    }
    inflight = 0;
  };
  uint64_t total = uint64_t(count) * BSIZE;
  uint64_t done = 0;
  while (done < total && !result.is_error()) {
    if (inflight == MAXREQ) flush();
    if (!chunks[inflight]) {
      // A process's read (the large-read path) is what calls this: its
      // pages stay above the kernel's reserve, and the caller falls back to
      // the buffer cache when refused (mem_policy.h).
      chunks[inflight] = static_cast<Chunk*>(mem::take_page(mem::For::Process));
      if (!chunks[inflight]) { result = Errno::NoMem; break; }
    }
    Chunk* c = chunks[inflight];
    int n = 0;
    uint64_t bytes = 0;
    int cap = maxseg < SEGCAP ? maxseg : SEGCAP;
    while (n < cap && si < nseg && bytes < MAX_REQ_BYTES) {
      uint64_t left = segs[si].len - seg_off;
      uint64_t take = left < MAX_REQ_BYTES - bytes ? left : MAX_REQ_BYTES - bytes;
      c->segs[n++] = {segs[si].addr + seg_off, static_cast<uint32_t>(take)};
      bytes += take;
      seg_off += take;
      if (seg_off == segs[si].len) { si++; seg_off = 0; }
    }
    // Whole blocks per request: give back a partial tail block.
    uint64_t tail = bytes % BSIZE;
    if (tail) {
      if (bytes == tail) { result = Errno::Invalid; break; }   // segments too fragmented
      while (tail) {
        BlkSegment& last = c->segs[n - 1];
        uint64_t back = last.len < tail ? last.len : tail;
        last.len -= static_cast<uint32_t>(back);
        tail -= back;
        bytes -= back;
        if (seg_off >= back) {
          seg_off -= back;
        } else {
          si--;
          seg_off = segs[si].len - (back - seg_off);
        }
        if (last.len == 0) n--;
      }
    }
    BlkRequest& r = reqs[inflight];
    r = BlkRequest{};
    r.sector = sector;
    r.write = write;
    r.segs = c->segs;
    r.nseg = n;
    if (auto s = virtio_blk_submit(&r, false); s.is_error()) { result = s; break; }
    inflight++;
    sector += bytes / 512;
    done += bytes;
  }
  flush();
  for (auto* c : chunks)
    if (c) kfree(c);
  return result;
}

}  // namespace fs
