// The log. On-disk: a header block (count, checksum, block numbers), then the
// logged copies. Commit = write the copies, write the header (the commit
// point), copy each block home, clear the header. All block writes of a phase
// are in flight together; each phase waits for the previous one, which is
// what crash consistency needs.
#include "log.h"
#include "../drivers/virtio_blk.h"
#include "../kalloc.h"
#include "../printf.h"
#include "../proc.h"
#include "../spinlock.h"
#include "../string.h"

namespace fs {
namespace {

// Bounded by the header's block list and by one page of segments in write_blocks.
constexpr uint32_t LOGSIZE_MAX = 256;
static_assert(LOGSIZE_MAX <= (BSIZE - 8) / 4 && LOGSIZE_MAX * sizeof(BlkSegment) <= BSIZE);

struct Log {
  Spinlock lock{"log"};
  uint32_t start = 0;        // header block
  uint32_t size = 0;         // usable log data blocks
  int outstanding = 0;       // system calls inside a transaction
  bool committing = false;
  uint32_t dev = 0;
  uint32_t n = 0;            // blocks logged in the current transaction
  Buf* bufs[LOGSIZE_MAX] = {};
};

Log log;
alignas(4096) LogHeader header;   // DMA buffer for the header block

ErrorOr<void> write_header(uint32_t n) {
  memset(&header, 0, sizeof(header));
  header.n = n;
  for (uint32_t i = 0; i < n; i++) header.block[i] = log.bufs[i]->blockno;
  header.checksum = log_checksum(n, header.block);
  BlkSegment seg{reinterpret_cast<uint64_t>(&header), BSIZE};
  return blocks_io(log.start, 1, &seg, 1, true);
}

// Writes each logged buffer to blocks[i] (or to the log area when to_log).
ErrorOr<void> write_blocks(bool to_log) {
  if (to_log) {
    // The log copies are consecutive on disk: one scatter/gather stream.
    BlkSegment* segs = static_cast<BlkSegment*>(kalloc());
    if (!segs) return Errno::NoMem;
    for (uint32_t i = 0; i < log.n; i++) segs[i] = {reinterpret_cast<uint64_t>(log.bufs[i]->data), BSIZE};
    auto r = blocks_io(log.start + 1, log.n, segs, static_cast<int>(log.n), true);
    kfree(segs);
    return r;
  }
  // Home locations are scattered: one request each, many in flight.
  constexpr uint32_t BATCH = 64;
  BlkSegment segs[BATCH];
  BlkRequest reqs[BATCH];
  ErrorOr<void> result;
  for (uint32_t base = 0; base < log.n; base += BATCH) {
    uint32_t k = log.n - base < BATCH ? log.n - base : BATCH;
    uint32_t submitted = 0;
    for (uint32_t i = 0; i < k; i++) {
      Buf* b = log.bufs[base + i];
      segs[i] = {reinterpret_cast<uint64_t>(b->data), BSIZE};
      reqs[i] = BlkRequest{};
      reqs[i].sector = uint64_t(b->blockno) * SECTORS_PER_BLOCK;
      reqs[i].write = true;
      reqs[i].segs = &segs[i];
      reqs[i].nseg = 1;
      if (auto s = virtio_blk_submit(&reqs[i], false); s.is_error()) { result = s; break; }
      submitted++;
    }
    for (uint32_t i = 0; i < submitted; i++)
      if (auto w = virtio_blk_wait(&reqs[i]); w.is_error()) result = w;
    if (result.is_error()) break;
  }
  return result;
}

void commit() {
  if (log.n == 0) return;
  auto r = write_blocks(true);
  if (!r.is_error()) r = write_header(log.n);     // the commit point
  if (!r.is_error()) r = write_blocks(false);
  if (!r.is_error()) r = write_header(0);
  if (r.is_error()) kprintf("fs: log commit failed (error %d); the disk may be stale\n", int(r.error()));
  for (uint32_t i = 0; i < log.n; i++) bunpin(log.bufs[i]);
  log.n = 0;
}

// Replays a committed transaction left by a crash.
ErrorOr<void> recover() {
  BlkSegment seg{reinterpret_cast<uint64_t>(&header), BSIZE};
  TRY(blocks_io(log.start, 1, &seg, 1, false));
  uint32_t n = header.n;
  if (n == 0) return {};
  if (n > log.size || header.checksum != log_checksum(n, header.block)) {
    kprintf("fs: log header is torn (n=%u); ignoring it\n", n);
    memset(&header, 0, sizeof(header));
    TRY(blocks_io(log.start, 1, &seg, 1, true));
    return {};
  }
  uint8_t* page = static_cast<uint8_t*>(kalloc());
  if (!page) return Errno::NoMem;
  ErrorOr<void> r;
  for (uint32_t i = 0; i < n && !r.is_error(); i++) {
    BlkSegment s{reinterpret_cast<uint64_t>(page), BSIZE};
    r = blocks_io(log.start + 1 + i, 1, &s, 1, false);
    if (!r.is_error()) r = blocks_io(header.block[i], 1, &s, 1, true);
  }
  kfree(page);
  TRY(r);
  kprintf("fs: replayed %u logged blocks\n", n);
  memset(&header, 0, sizeof(header));
  return blocks_io(log.start, 1, &seg, 1, true);
}

}  // namespace

ErrorOr<void> initlog(uint32_t dev, const SuperBlock& sb) {
  log.dev = dev;
  log.start = sb.logstart;
  log.size = sb.nlog - 1 < LOGSIZE_MAX ? sb.nlog - 1 : LOGSIZE_MAX;
  if (log.size < 2 * MAXOPBLOCKS) {
    kprintf("fs: log of %u blocks is too small (need %u)\n", log.size, 2 * MAXOPBLOCKS);
    return Errno::Invalid;
  }
  return recover();
}

void begin_op() {
  SpinlockGuard guard(log.lock);
  for (;;) {
    if (log.committing ||
        log.n + (log.outstanding + 1) * MAXOPBLOCKS > log.size) {
      sleep(&log, log.lock);
    } else {
      log.outstanding++;
      return;
    }
  }
}

void end_op() {
  bool do_commit = false;
  {
    SpinlockGuard guard(log.lock);
    log.outstanding--;
    if (log.committing) panic("end_op: committing");
    if (log.outstanding == 0) {
      do_commit = true;
      log.committing = true;
    } else {
      wakeup(&log);   // begin_op may be waiting for log space
    }
  }
  if (do_commit) {
    commit();   // no locks held: it sleeps on the disk
    SpinlockGuard guard(log.lock);
    log.committing = false;
    wakeup(&log);
  }
}

void log_write(Buf* b) {
  SpinlockGuard guard(log.lock);
  if (log.outstanding < 1) panic("log_write outside of a transaction");
  for (uint32_t i = 0; i < log.n; i++)
    if (log.bufs[i] == b) return;   // absorbed: already in this transaction
  if (log.n >= log.size) panic("log_write: transaction too big (%u blocks)", log.n);
  log.bufs[log.n++] = b;
  bpin(b);
}

}  // namespace fs
