// Reading file data (readi, readi_stream): the path every read takes, and
// the two mechanisms that make big reads run near the disk's speed.
//
//  1. The cache path: one block at a time through the buffer cache (bread),
//     as in xv6. Always correct; slow for megabytes (a copy per block and
//     one device request per block).
//  2. The large-read path (read_direct): a read that covers whole blocks
//     forming a run of consecutive disk blocks, none of them cached, goes
//     straight from the device into the destination pages in one request.
//  3. Read-ahead (struct ReadAhead, one per open file): after a big read the
//     next runs of the file are requested into kernel buffers, so the device
//     works while the reader copies.
//
// In this file:
//   MapCursor       walks a run of file blocks keeping the map block buffered
//   copy_fast, copy_out_fast  memory-speed copies for the big paths
//   read_direct     the large-read path
//   ReadAhead, ra_issue, ra_serve, readahead_free   read-ahead
//   readi_stream, readi   the entry points
//
// Locking: the caller holds the inode's sleep lock throughout, so the block
// map cannot change under a read; a write or truncation bumps ip->gen, which
// makes every read-ahead buffer issued before it stale.
#include <new>
#include "inode.h"
#include "bio.h"
#include "page_cache.h"
#include "../drivers/virtio_blk.h"
#include "../kalloc.h"
#include "../mem_policy.h"
#include "../proc.h"
#include "../string.h"

namespace fs {
namespace {

// Walks a run of file blocks, keeping the current map blocks' buffers so a
// large read does not look up the same indirect block for every block.
class MapCursor {
 public:
  explicit MapCursor(Inode* ip) : ip_(ip) {}
  ~MapCursor() { drop(); }
  MapCursor(const MapCursor&) = delete;
  MapCursor& operator=(const MapCursor&) = delete;

  // Block for file block bn (0 = hole), without allocating.
  ErrorOr<uint32_t> lookup(uint64_t bn) {
    if (bn < NDIRECT) return ip_->addrs[bn];
    bn -= NDIRECT;
    if (bn < NINDIRECT) {
      if (!ip_->indirect) return 0u;
      TRY(hold(ip_->indirect));
      return reinterpret_cast<uint32_t*>(buf_->data)[bn];
    }
    bn -= NINDIRECT;
    if (bn >= uint64_t(NINDIRECT) * NINDIRECT || !ip_->dindirect) return 0u;
    uint32_t slot = static_cast<uint32_t>(bn / NINDIRECT);
    if (dind_slot_ != slot) {
      drop();   // never hold one map block while reading another (a corrupt map could name it twice)
      uint32_t ind = TRY(map_entry(ip_, ip_->dindirect, slot, false));
      dind_slot_ = slot;
      dind_value_ = ind;
    }
    if (!dind_value_) return 0u;
    TRY(hold(dind_value_));
    return reinterpret_cast<uint32_t*>(buf_->data)[bn % NINDIRECT];
  }

 private:
  ErrorOr<void> hold(uint32_t bno) {
    if (buf_ && buf_->blockno == bno) return {};
    drop();
    buf_ = TRY(bread(ip_->dev, bno));
    return {};
  }
  void drop() {
    if (buf_) brelse(buf_);
    buf_ = nullptr;
  }
  Inode* ip_;
  Buf* buf_ = nullptr;
  uint32_t dind_slot_ = 0xffffffffu;
  uint32_t dind_value_ = 0;
};

alignas(4096) const uint8_t zero_page[BSIZE] = {};

// Moves 64 bytes per iteration. The large-read path's copies (read-ahead
// buffer -> reader) run at memory speed only with an unrolled loop; the
// attribute keeps the compiler from turning it back into a memcpy call.
__attribute__((optimize("no-tree-loop-distribute-patterns")))
void copy_fast(void* dst, const void* src, uint64_t n) {
  if ((reinterpret_cast<uint64_t>(dst) | reinterpret_cast<uint64_t>(src) | n) & 63) {
    memcpy(dst, src, n);
    return;
  }
  auto* d = static_cast<uint64_t*>(dst);
  auto* s = static_cast<const uint64_t*>(src);
  for (uint64_t i = 0; i < n / 8; i += 8) {
    uint64_t a = s[i], b = s[i + 1], c = s[i + 2], e = s[i + 3];
    uint64_t f = s[i + 4], g = s[i + 5], h = s[i + 6], k = s[i + 7];
    d[i] = a; d[i + 1] = b; d[i + 2] = c; d[i + 3] = e;
    d[i + 4] = f; d[i + 5] = g; d[i + 6] = h; d[i + 7] = k;
  }
}

// either_copyout for big copies: page by page through user_va_to_pa, each
// destination page checked for write permission with a one-byte copyout.
ErrorOr<void> copy_out_fast(bool user_dst, uint64_t dst, const uint8_t* src, uint64_t n) {
  if (!user_dst) {
    copy_fast(reinterpret_cast<void*>(dst), src, n);
    return {};
  }
  Process* p = current_process();
  if (!p || !p->pagetable) return Errno::Fault;
  while (n > 0) {
    uint64_t page_end = (dst | (PAGE_SIZE - 1)) + 1;
    uint64_t len = page_end - dst < n ? page_end - dst : n;
    // The permission check first: it also gives a copy-on-write page its
    // own copy (mmap.h), so pa below is the page this process may write.
    TRY(copyout(p->pagetable, dst, src, 1));
    uint64_t pa = user_va_to_pa(p->pagetable, dst);
    if (pa == 0) return Errno::Fault;
    copy_fast(reinterpret_cast<void*>(pa), src, len);
    dst += len;
    src += len;
    n -= len;
  }
  return {};
}

// The large-read path: reads up to max_blocks whole blocks starting at file
// block bn straight into dst, if they form a run of consecutive disk blocks
// none of which is in the buffer cache (a cached block may be newer than the
// disk: it could be logged but not yet installed). Returns bytes read; 0 means
// "use the cache for this block".
constexpr uint32_t RUN_MAX = 1024;   // 4 MiB per batch of requests into user pages
// Into kernel memory (one physically contiguous segment, e.g. a model being
// loaded) a batch may be much bigger: 16 requests of 4 MiB in flight at once.
constexpr uint32_t RUN_MAX_KERNEL = 16384;
constexpr uint32_t SEG_PAGES = 5;    // room for RUN_MAX + 1 segments

ErrorOr<uint64_t> read_direct(Inode* ip, bool user_dst, uint64_t dst, uint64_t bn,
                              uint64_t max_blocks, BlkSegment*& segs) {
  uint64_t cap = user_dst ? RUN_MAX : RUN_MAX_KERNEL;
  if (max_blocks > cap) max_blocks = cap;
  uint32_t first, count = 0;
  {
    MapCursor cur(ip);
    first = TRY(cur.lookup(bn));
    if (first == 0) return uint64_t(0);
    count = 1;
    while (count < max_blocks) {
      uint32_t a = TRY(cur.lookup(bn + count));
      if (a != first + count) break;
      count++;
    }
  }
  count = bcached_first(ip->dev, first, count);
  if (count == 0) return uint64_t(0);
  if (!segs) {
    // From the kernel's reserve: 5 pages held for one read() only, so they
    // are always given back. A speed-up's floor (For::Cache) would refuse
    // them exactly when memory is short, and then every read would go one
    // block per disk request through the buffer cache (1.2 MB/s instead of
    // ~95, docs/notebook/2026-12-06-virtual-memory.md).
    segs = static_cast<BlkSegment*>(mem::take_contiguous(SEG_PAGES * PAGE_SIZE, mem::For::Kernel));
    if (!segs) return uint64_t(0);   // fall back to the cache path
  }
  uint64_t bytes = uint64_t(count) * BSIZE;
  int nseg = 0;
  if (!user_dst) {
    segs[nseg++] = {dst, static_cast<uint32_t>(bytes)};
  } else {
    Process* p = current_process();
    if (!p || !p->pagetable) return Errno::Fault;
    for (uint64_t va = dst; va < dst + bytes;) {
      uint64_t page_end = (va | (PAGE_SIZE - 1)) + 1;
      uint64_t len = (page_end < dst + bytes ? page_end : dst + bytes) - va;
      // The device writes this page: make sure the process may write it too
      // (copyout checks the write permission that user_va_to_pa does not,
      // and gives a copy-on-write page its own copy first).
      uint8_t probe;
      TRY(copyin(p->pagetable, &probe, va, 1));
      TRY(copyout(p->pagetable, va, &probe, 1));
      uint64_t pa = user_va_to_pa(p->pagetable, va);
      if (pa == 0) return Errno::Fault;
      if (nseg > 0 && segs[nseg - 1].addr + segs[nseg - 1].len == pa)
        segs[nseg - 1].len += static_cast<uint32_t>(len);
      else
        segs[nseg++] = {pa, static_cast<uint32_t>(len)};
      va += len;
    }
  }
  if (auto r = blocks_io(first, count, segs, nseg, false); r.is_error()) {
    if (r.error() == Errno::NoMem) return uint64_t(0);   // the cache path needs no memory
    return r.error();
  }
  return bytes;
}

}  // namespace

// The page cache's fill: file pages [index, index + count) into pages (one
// each, zeroed). Runs of consecutive disk blocks that are not in the buffer
// cache go to the device as one request with a segment per page (merged
// where pages happen to be adjacent); a block the buffer cache holds may be
// newer than the disk and is copied from there; a hole stays zero. Returns
// the bytes read from the device.
ErrorOr<uint64_t> read_file_pages(Inode* ip, uint64_t index, uint8_t* const* pages, uint32_t count) {
  static_assert(BSIZE == PAGE_SIZE);
  uint64_t from_disk = 0;
  BlkSegment* segs = static_cast<BlkSegment*>(mem::take_page(mem::For::Cache));
  uint32_t seg_cap = PAGE_SIZE / sizeof(BlkSegment);
  ErrorOr<void> err;
  MapCursor cur(ip);
  uint32_t i = 0;
  while (i < count && !err.is_error()) {
    auto first = cur.lookup(index + i);
    if (first.is_error()) {
      err = first.error();
      break;
    }
    if (first.value() == 0) {   // a hole: zeros
      i++;
      continue;
    }
    // The run of consecutive disk blocks from here.
    uint32_t run = 1;
    while (i + run < count && run < seg_cap) {
      auto a = cur.lookup(index + i + run);
      if (a.is_error() || a.value() != first.value() + run) break;
      run++;
    }
    uint32_t direct = segs ? bcached_first(ip->dev, first.value(), run) : 0;
    if (direct == 0) {   // the buffer cache has the first block: copy it from there
      auto b = bread(ip->dev, first.value());
      if (b.is_error()) {
        err = b.error();
        break;
      }
      memcpy(pages[i], b.value()->data, BSIZE);
      brelse(b.value());
      i++;
      continue;
    }
    int nseg = 0;
    for (uint32_t k = 0; k < direct; k++) {
      uint64_t pa = reinterpret_cast<uint64_t>(pages[i + k]);
      if (nseg > 0 && segs[nseg - 1].addr + segs[nseg - 1].len == pa) segs[nseg - 1].len += BSIZE;
      else segs[nseg++] = {pa, BSIZE};
    }
    err = blocks_io(first.value(), direct, segs, nseg, false);
    from_disk += uint64_t(direct) * BSIZE;
    i += direct;
  }
  if (segs) kfree(segs);
  if (err.is_error()) return err.error();
  return from_disk;
}

namespace {
// The page-cache path of readi_stream: each page of [off, off + n) from the
// cache, a miss filling the rest of the request (and `ahead` pages more for
// a sequential reader) in one device request. Returns bytes copied, or
// NoMem when not even one page could be cached (the caller then reads past
// the cache).
constexpr uint32_t SEQUENTIAL_AHEAD = 32;   // 128 KiB beyond a sequential read
// A miss reads at least this many pages (exec reads a program a page at a
// time: one request per 64 KiB instead of one per page).
constexpr uint32_t MIN_FILL = 16;

ErrorOr<uint64_t> read_cached(Inode* ip, bool user_dst, uint64_t dst, uint64_t off, uint64_t n,
                              bool sequential) {
  uint64_t tot = 0;
  uint64_t last_page = (off + n - 1) / PAGE_SIZE;
  while (tot < n) {
    uint64_t index = off / PAGE_SIZE, in_page = off % PAGE_SIZE;
    uint64_t ahead = last_page - index + 1 + (sequential ? SEQUENTIAL_AHEAD : 0);
    if (ahead < MIN_FILL) ahead = MIN_FILL;
    auto page = page_cache_get(ip, index, ahead > 0xffff ? 0xffff : uint32_t(ahead), nullptr);
    if (page.is_error()) {
      if (tot > 0) return tot;
      return page.error();
    }
    uint64_t m = PAGE_SIZE - in_page < n - tot ? PAGE_SIZE - in_page : n - tot;
    auto r = copy_out_fast(user_dst, dst, page.value() + in_page, m);
    kfree(page.value());
    if (r.is_error()) {
      if (tot > 0) return tot;
      return r.error();
    }
    tot += m;
    off += m;
    dst += m;
  }
  return tot;
}

// A read into kernel memory this big (the AI service loading a model) goes
// past the cache: the caller keeps its own copy, a second one would double
// the memory a model takes.
constexpr uint64_t KERNEL_BYPASS_BYTES = 1ull << 20;
}  // namespace

// Two kernel buffers per open file, each filled by one device request for a
// run of consecutive uncached disk blocks. While the reader copies one, the
// other is in flight. A buffer is valid only if the inode's gen did not move
// since it was issued (any write or truncation bumps gen), so it never returns
// data older than the file. The caller holds the inode lock throughout.
struct ReadAhead {
  static constexpr uint32_t BUF_BLOCKS = 1024;  // 4 MiB per buffer
  static constexpr int NSLOTS = 3;
  struct Slot {
    uint8_t* mem = nullptr;
    uint64_t fbn = 0;        // first file block held
    uint32_t count = 0;      // blocks held (0 = empty)
    uint64_t gen = 0;
    bool inflight = false;
    BlkSegment seg{};
    BlkRequest req;
  };
  Slot slot[NSLOTS];
  uint64_t next_fbn = 0;     // where the next read-ahead starts
  uint64_t last_end = ~0ull; // where the previous read of this file ended
};

namespace {
constexpr uint32_t RA_TRIGGER_BLOCKS = 16;   // a direct read this big starts read-ahead

void ra_settle(ReadAhead::Slot& s) {
  if (s.inflight) {
    auto r = virtio_blk_wait(&s.req);
    s.inflight = false;
    if (r.is_error()) s.count = 0;
  }
}

void ra_drop_all(ReadAhead* ra) {
  for (auto& s : ra->slot) {
    ra_settle(s);
    s.count = 0;
  }
}

// Starts reading the run at ra->next_fbn into slot s (already settled).
void ra_issue(Inode* ip, ReadAhead* ra, ReadAhead::Slot& s) {
  s.count = 0;
  uint64_t start = ra->next_fbn;
  if (start * BSIZE >= ip->size) {
    // End of file: give the buffer back now rather than at close.
    if (s.mem) kfree_contiguous(s.mem, uint64_t(ReadAhead::BUF_BLOCKS) * BSIZE);
    s.mem = nullptr;
    return;
  }
  uint64_t left = (ip->size - start * BSIZE + BSIZE - 1) / BSIZE;
  uint32_t maxb = left < ReadAhead::BUF_BLOCKS ? static_cast<uint32_t>(left) : ReadAhead::BUF_BLOCKS;
  uint32_t first = 0, count = 0;
  {
    MapCursor cur(ip);
    auto f = cur.lookup(start);
    if (f.is_error() || f.value() == 0) return;
    first = f.value();
    count = 1;
    while (count < maxb) {
      auto a = cur.lookup(start + count);
      if (a.is_error() || a.value() != first + count) break;
      count++;
    }
  }
  count = bcached_first(ip->dev, first, count);
  if (count == 0) return;
  if (!s.mem) {
    s.mem = static_cast<uint8_t*>(mem::take_contiguous(uint64_t(ReadAhead::BUF_BLOCKS) * BSIZE, mem::For::Cache));
    if (!s.mem) return;
  }
  s.seg = {reinterpret_cast<uint64_t>(s.mem), count * BSIZE};
  s.req = BlkRequest{};
  s.req.sector = uint64_t(first) * SECTORS_PER_BLOCK;
  s.req.segs = &s.seg;
  s.req.nseg = 1;
  if (virtio_blk_submit(&s.req).is_error()) return;
  s.inflight = true;
  s.fbn = start;
  s.count = count;
  s.gen = ip->gen;
  ra->next_fbn = start + count;
}

// Forgets what is read ahead and starts reading every slot's run from file
// block fbn on (the reader has jumped there, or a big read just ended there).
void ra_restart(Inode* ip, ReadAhead* ra, uint64_t fbn) {
  ra_drop_all(ra);
  ra->next_fbn = fbn;
  for (auto& s : ra->slot) ra_issue(ip, ra, s);
}

// Copies from a read-ahead buffer holding file offset off, if there is one.
// Returns bytes copied (0: not held).
ErrorOr<uint64_t> ra_serve(Inode* ip, ReadAhead* ra, bool user_dst, uint64_t dst, uint64_t off,
                           uint64_t n) {
  uint64_t bn = off / BSIZE;
  for (auto& s : ra->slot) {
    if (s.count == 0 || bn < s.fbn || bn >= s.fbn + s.count) continue;
    ra_settle(s);
    if (s.count == 0 || s.gen != ip->gen) {
      ra_drop_all(ra);   // stale: the file changed since it was read ahead
      return uint64_t(0);
    }
    uint64_t end = (s.fbn + s.count) * BSIZE;
    uint64_t m = end - off < n ? end - off : n;
    TRY(copy_out_fast(user_dst, dst, s.mem + (off - s.fbn * BSIZE), m));
    if (off + m == end) ra_issue(ip, ra, s);   // used up: refill it further on
    return m;
  }
  return uint64_t(0);
}
}  // namespace

void readahead_free(ReadAhead* ra) {
  if (!ra) return;
  for (auto& s : ra->slot) {
    ra_settle(s);
    if (s.mem) kfree_contiguous(s.mem, uint64_t(ReadAhead::BUF_BLOCKS) * BSIZE);
  }
  ra->~ReadAhead();
  kfree(ra);
}

ErrorOr<uint64_t> readi_stream(Inode* ip, ReadAhead** rap, bool user_dst, uint64_t dst, uint64_t off,
                               uint64_t n) {
  if (off >= ip->size || n == 0) return uint64_t(0);
  if (n > ip->size - off) n = ip->size - off;
  if (page_cache_wanted(ip) && (user_dst || n < KERNEL_BYPASS_BYTES)) {
    ReadAhead* seq = rap ? *rap : nullptr;
    bool sequential = rap && (!seq || seq->last_end == off);
    if (rap && !seq) {
      void* page = mem::take_page(mem::For::Cache);
      if (page) *rap = seq = new (page) ReadAhead();
    }
    auto got = read_cached(ip, user_dst, dst, off, n, sequential);
    if (!got.is_error() || got.error() != Errno::NoMem) {
      if (seq && !got.is_error()) seq->last_end = off + got.value();
      return got;
    }
    // No page to cache into: read past the cache below.
  }
  uint64_t tot = 0;
  BlkSegment* segs = nullptr;
  ErrorOr<void> err;
  if (rap && !*rap) {
    void* page = mem::take_page(mem::For::Cache);
    if (page) *rap = new (page) ReadAhead();
    static_assert(sizeof(ReadAhead) <= PAGE_SIZE);
  }
  ReadAhead* ra = rap ? *rap : nullptr;
  // A read that continues the previous one, with plenty of file left: a
  // sequential reader using small buffers. Read ahead for it too (unless the
  // read-ahead already holds this offset).
  if (ra && off == ra->last_end && ip->size - off >= RA_TRIGGER_BLOCKS * BSIZE) {
    bool held = false;
    for (auto& sl : ra->slot) held |= sl.count && off / BSIZE >= sl.fbn && off / BSIZE < sl.fbn + sl.count;
    if (!held) ra_restart(ip, ra, off / BSIZE);
  }
  // Every path below moves the same three cursors by the bytes it copied.
  auto advance = [&](uint64_t m) {
    tot += m;
    off += m;
    dst += m;
  };
  // Each round serves the next bytes the fastest way that applies: from a
  // read-ahead buffer, else a direct run of whole blocks, else one block
  // through the buffer cache (or zeros for a hole).
  while (tot < n) {
    uint64_t bn = off / BSIZE;
    uint64_t in_block = off % BSIZE;
    if (ra) {
      auto got = ra_serve(ip, ra, user_dst, dst, off, n - tot);
      if (got.is_error()) {
        err = got.error();
        break;
      }
      if (got.value() > 0) {
        advance(got.value());
        continue;
      }
    }
    if (in_block == 0 && n - tot >= BSIZE) {
      auto got = read_direct(ip, user_dst, dst, bn, (n - tot) / BSIZE, segs);
      if (got.is_error()) {
        err = got.error();
        break;
      }
      if (got.value() > 0) {
        advance(got.value());
        // A big read: read the next runs ahead.
        if (ra && got.value() >= RA_TRIGGER_BLOCKS * BSIZE) ra_restart(ip, ra, off / BSIZE);
        continue;
      }
    }
    uint64_t m = BSIZE - in_block < n - tot ? BSIZE - in_block : n - tot;
    auto addr = bmap(ip, bn, false);
    if (addr.is_error()) {
      err = addr.error();
      break;
    }
    if (addr.value() == 0) {
      auto r = either_copyout(user_dst, dst, zero_page + in_block, m);
      if (r.is_error()) {
        err = r;
        break;
      }
    } else {
      auto b = bread(ip->dev, addr.value());
      if (b.is_error()) {
        err = b.error();
        break;
      }
      auto r = either_copyout(user_dst, dst, b.value()->data + in_block, m);
      brelse(b.value());
      if (r.is_error()) {
        err = r;
        break;
      }
    }
    advance(m);
  }
  if (segs) kfree_contiguous(segs, SEG_PAGES * PAGE_SIZE);
  if (ra) ra->last_end = off;
  if (err.is_error() && tot == 0) return err.error();
  return tot;
}

ErrorOr<uint64_t> readi(Inode* ip, bool user_dst, uint64_t dst, uint64_t off, uint64_t n) {
  return readi_stream(ip, nullptr, user_dst, dst, off, n);
}

}  // namespace fs
