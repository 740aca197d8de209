// Buffer cache: the in-memory copies of disk blocks (xv6's bio, as C++).
// A buffer is handed out locked (sleep lock); only one process uses a block
// at a time. Released buffers stay cached, least recently used recycled first.
#pragma once
#include <stdint.h>
#include "../error.h"
#include "../sleeplock.h"
#include "layout.h"

struct BlkSegment;   // drivers/virtio_blk.h

namespace fs {

struct Buf {
  Sleeplock lock{"buffer"};
  bool valid = false;       // data holds the block's contents
  uint32_t dev = 0;
  uint32_t blockno = 0;
  int refcnt = 0;           // users + pins by the log
  Buf* prev = nullptr;      // LRU list, most recent first
  Buf* next = nullptr;
  Buf* hnext = nullptr;     // hash chain
  uint8_t* data = nullptr;  // BSIZE bytes, page aligned
};

void binit();
// The block, read from disk if not cached; returned locked.
ErrorOr<Buf*> bread(uint32_t dev, uint32_t blockno);
// The block without reading it, for callers that overwrite all of it: they
// fill data and then set valid (if the fill fails, a buffer that was not
// valid before stays invalid).
ErrorOr<Buf*> bget_overwrite(uint32_t dev, uint32_t blockno);
ErrorOr<void> bwrite(Buf* b);     // b locked
void brelse(Buf* b);              // b locked; unlocks
void bpin(Buf* b);                // keep cached (the log holds it)
void bunpin(Buf* b);
// Forgets every cached block nobody holds (dropcaches(): a cold start reads
// directories, inodes and small files from the disk again, as Linux's
// drop_caches=3 drops its dentries and inodes too). (`free` shows the
// blocks left: bcache_stats()).
void bdrop_unheld();
struct BufCacheStats {
  uint64_t blocks;       // valid copies held
  uint64_t disk_reads;   // blocks read from the disk since boot
};
BufCacheStats bcache_stats();
// The smallest i < count such that block start + i is in the cache (valid or
// being read), else count. The large-read path reads uncached blocks
// straight from the disk and the rest through the cache.
// One pass over the buffers under one lock: taking a spinlock per block costs
// microseconds under QEMU (interrupt enable/disable are CSR writes).
uint32_t bcached_first(uint32_t dev, uint32_t start, uint32_t count);
// Upper limit of valid block numbers (set at mount; before that: the disk).
void bset_limit(uint32_t nblocks);

// Reads or writes `count` consecutive blocks starting at `blockno` from/to
// physical memory segments without the cache, as few large requests, all in
// flight together. segs cover count*BSIZE bytes.
ErrorOr<void> blocks_io(uint32_t blockno, uint32_t count, const ::BlkSegment* segs, int nseg, bool write);

}  // namespace fs
