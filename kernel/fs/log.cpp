// The log. On-disk: a header block (count, checksum, block numbers), then the
// logged copies. Commit = write the copies, write the header (the commit
// point), copy each block home, clear the header. All block writes of a phase
// are in flight together; each phase waits for the previous one, which is
// what crash consistency needs.
//
// A commit allocates nothing. Every system call of a transaction has already
// returned success when the commit runs, so a commit that could fail for
// want of memory would lose data the kernel acknowledged. The header buffer,
// the segment lists and the request structures are therefore static, sized
// for the largest transaction (one commit runs at a time: log.committing).
//
// A commit that fails on a disk error cannot be undone either. The log then
// turns the file system read-only (docs/fs.md, "The log"): the failed
// transaction's buffers stay pinned, so the running system keeps seeing
// what it was told, and every later change is refused with EROFS.
#include "log.h"
#include "../drivers/virtio_blk.h"
#include "../kalloc.h"
#include "../printf.h"
#include "../proc.h"
#include "../spinlock.h"
#include "../string.h"

namespace fs {
namespace {

// Bounded by the header's block list.
constexpr uint32_t LOGSIZE_MAX = 256;
static_assert(LOGSIZE_MAX <= (BSIZE - 8) / 4);

struct Log {
  Spinlock lock{"log"};
  uint32_t start = 0;        // header block
  uint32_t size = 0;         // usable log data blocks
  int outstanding = 0;       // system calls inside a transaction
  // Threads asleep in begin_op(), counted before they sleep: end_op() calls
  // wakeup() (a scan of the whole process table) only when there is one.
  int waiting = 0;
  bool committing = false;
  bool read_only = false;    // a commit failed: nothing is written from then on
  uint32_t dev = 0;
  uint32_t n = 0;            // blocks logged in the current transaction
  Buf* bufs[LOGSIZE_MAX] = {};
};

Log log;

// What one commit (or the recovery at mount) hands the disk driver. Only the
// committing thread touches it.
struct CommitIo {
  alignas(4096) LogHeader header;   // DMA buffer for the header block
  BlkSegment segs[LOGSIZE_MAX];     // one per logged block, in log order
  // Requests in flight at once: each takes nseg + 2 of the ring's 256
  // descriptors, and the driver kicks the device when it runs out.
  static constexpr uint32_t BATCH = 64;
  BlkRequest reqs[BATCH];
};
CommitIo io;

// Writes block i's data (i < count) to where(i), one request per run of
// consecutive destinations (the log area is one run; home locations are
// scattered), BATCH requests in flight, then waits for all of them.
template <typename Where>
ErrorOr<void> write_runs(uint32_t count, const uint8_t* (*data)(uint32_t), Where where) {
  const uint32_t maxseg = uint32_t(virtio_blk_max_segments());
  ErrorOr<void> result;
  uint32_t i = 0;
  while (i < count && !result.is_error()) {
    uint32_t submitted = 0;
    while (i < count && submitted < CommitIo::BATCH) {
      uint32_t first = where(i), k = 0;
      while (i + k < count && k < maxseg && where(i + k) == first + k) {
        io.segs[i + k] = {reinterpret_cast<uint64_t>(data(i + k)), BSIZE};
        k++;
      }
      BlkRequest& r = io.reqs[submitted];
      r = BlkRequest{};
      r.sector = uint64_t(first) * SECTORS_PER_BLOCK;
      r.write = true;
      r.segs = &io.segs[i];
      r.nseg = int(k);
      if (auto s = virtio_blk_submit(&r, false); s.is_error()) { result = s; break; }
      submitted++;
      i += k;
    }
    for (uint32_t j = 0; j < submitted; j++)
      if (auto w = virtio_blk_wait(&io.reqs[j]); w.is_error()) result = w;
  }
  return result;
}

const uint8_t* logged_data(uint32_t i) { return log.bufs[i]->data; }
const uint8_t* header_data(uint32_t) { return reinterpret_cast<const uint8_t*>(&io.header); }

ErrorOr<void> write_header(uint32_t n) {
  memset(&io.header, 0, sizeof(io.header));
  io.header.n = n;
  for (uint32_t i = 0; i < n; i++) io.header.block[i] = log.bufs[i]->blockno;
  io.header.checksum = log_checksum(n, io.header.block);
  return write_runs(1, header_data, [](uint32_t) { return log.start; });
}

// Writes each logged buffer to the log area (to_log) or to its home block.
ErrorOr<void> write_blocks(bool to_log) {
  if (to_log) return write_runs(log.n, logged_data, [](uint32_t i) { return log.start + 1 + i; });
  return write_runs(log.n, logged_data, [](uint32_t i) { return log.bufs[i]->blockno; });
}

void commit() {
  if (log.n == 0 || log.read_only) return;   // read-only: keep the failed one pinned
  auto r = write_blocks(true);
  if (!r.is_error()) r = write_header(log.n);     // the commit point
  if (!r.is_error()) r = write_blocks(false);
  if (!r.is_error()) r = write_header(0);
  if (r.is_error()) {
    // The disk holds the old state or the committed one (mount replays it);
    // which one depends on the phase that failed. Keeping the buffers pinned
    // keeps this boot's view of the files as it was acknowledged.
    kprintf("fs: disk write failed during a log commit (error %d): the file system is "
            "read-only from now on; the last %u changed blocks may be missing after a reboot\n",
            int(r.error()), log.n);
    SpinlockGuard guard(log.lock);
    log.read_only = true;
    return;
  }
  for (uint32_t i = 0; i < log.n; i++) bunpin(log.bufs[i]);
  log.n = 0;
}

// Replays a committed transaction left by a crash. It runs once, at mount,
// before any process can take memory, so it may borrow a page to copy through.
ErrorOr<void> recover() {
  LogHeader& header = io.header;
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
    // Read-only: nothing is logged any more, so there is no space to wait for.
    if (log.committing ||
        (!log.read_only && log.n + (log.outstanding + 1) * MAXOPBLOCKS > log.size)) {
      log.waiting++;
      sleep(&log, log.lock);
      log.waiting--;
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
    } else if (log.waiting) {
      wakeup(&log);   // begin_op may be waiting for log space
    }
  }
  if (do_commit) {
    commit();   // no locks held: it sleeps on the disk
    SpinlockGuard guard(log.lock);
    log.committing = false;
    if (log.waiting) wakeup(&log);
  }
}

void log_write(Buf* b) {
  SpinlockGuard guard(log.lock);
  if (log.outstanding < 1) panic("log_write outside of a transaction");
  // Read-only: the change stays in this buffer only. The calls that change
  // files refused at their start (log_writable()); what still gets here is
  // housekeeping, such as freeing an unlinked inode at its last close.
  if (log.read_only) return;
  for (uint32_t i = 0; i < log.n; i++)
    if (log.bufs[i] == b) return;   // absorbed: already in this transaction
  if (log.n >= log.size) panic("log_write: transaction too big (%u blocks)", log.n);
  log.bufs[log.n++] = b;
  bpin(b);
}

ErrorOr<void> log_writable() {
  SpinlockGuard guard(log.lock);
  if (log.outstanding < 1) panic("log_writable outside of a transaction");
  if (log.read_only) return Errno::ReadOnly;
  return {};
}

}  // namespace fs
