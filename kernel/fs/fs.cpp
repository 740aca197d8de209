// The file system as a whole: mounting (superblock checks, orphan inodes),
// the block allocator (free-space bitmap) and the free-space counters that
// statfs reports.
//
// In this file:
//   init            mount the root file system, or say why not
//   superblock      the mounted superblock
//   balloc, bfree   allocate / free one data block (inside a transaction)
//   fs_statfs       free blocks and inodes
// Elsewhere in kernel/fs: inode.cpp (inodes and block maps), readahead.cpp
// (reading file data), dir.cpp (directories, path names), log.cpp, bio.cpp.
//
// Locking: count_lock guards the counters and the allocation hint; the
// bitmap blocks themselves are guarded by their buffer's sleep lock.
#include "inode.h"
#include "bio.h"
#include "log.h"
#include "../drivers/virtio_blk.h"
#include "../printf.h"
#include "../spinlock.h"
#include "../string.h"

namespace fs {
namespace {

SuperBlock sb;
uint32_t fsdev = 0;
bool mounted = false;

// Counters for statfs, and where the block allocator looks first.
Spinlock count_lock("fs counts");
uint64_t free_blocks = 0;
uint64_t free_inodes = 0;
uint32_t alloc_hint = 0;

uint32_t ninodeblocks() { return (sb.ninodes + IPB - 1) / IPB; }
uint32_t nbitmap() { return (sb.nblocks + BPB - 1) / BPB; }

ErrorOr<void> bzero(uint32_t dev, uint32_t bno) {
  Buf* b = TRY(bget_overwrite(dev, bno));
  memset(b->data, 0, BSIZE);
  b->valid = true;
  log_write(b);
  brelse(b);
  return {};
}

}  // namespace

const SuperBlock& superblock() { return sb; }
uint32_t inode_block(uint32_t inum) { return sb.inodestart + inum / IPB; }

ErrorOr<uint32_t> mounted_dev() {
  if (!mounted) return Errno::NoDevice;
  return fsdev;
}

void count_inode_allocated() {
  SpinlockGuard g(count_lock);
  free_inodes--;
}

void count_inode_freed() {
  SpinlockGuard g(count_lock);
  free_inodes++;
}

// ---------------------------------------------------------------- blocks
// A zeroed free block, marked used; Errno::NoSpace when the disk is full.
// The search starts at the last allocated block, so a file written in one go
// gets consecutive blocks (what the large-read path likes).
ErrorOr<uint32_t> balloc(uint32_t dev) {
  uint32_t nb = nbitmap();
  uint32_t hint;
  {
    SpinlockGuard g(count_lock);
    hint = alloc_hint;
  }
  uint32_t first = hint / BPB;
  uint32_t first_word = (hint % BPB) / 64;
  // nb + 1 rounds: the first bitmap block is visited again for the words
  // before the hint.
  for (uint32_t i = 0; i <= nb; i++) {
    uint32_t bi = (first + i) % nb;
    uint32_t w_begin = i == 0 ? first_word : 0;
    uint32_t w_end = i == nb ? first_word + 1 : BSIZE / 8;
    Buf* b = TRY(bread(dev, sb.bmapstart + bi));
    auto* words = reinterpret_cast<uint64_t*>(b->data);
    for (uint32_t w = w_begin; w < w_end; w++) {
      if (words[w] == ~0ull) continue;
      uint32_t bit = __builtin_ctzll(~words[w]);
      uint64_t bno = uint64_t(bi) * BPB + w * 64 + bit;
      if (bno >= sb.nblocks) break;
      words[w] |= 1ull << bit;
      log_write(b);
      brelse(b);
      {
        SpinlockGuard g(count_lock);
        free_blocks--;
        alloc_hint = static_cast<uint32_t>(bno);
      }
      TRY(bzero(dev, static_cast<uint32_t>(bno)));
      return static_cast<uint32_t>(bno);
    }
    brelse(b);
  }
  return Errno::NoSpace;
}

void bfree(uint32_t dev, uint32_t bno) {
  if (bno < sb.datastart || bno >= sb.nblocks) {
    kprintf("fs: freeing block %u outside the data area (corrupt inode?)\n", bno);
    return;
  }
  auto r = bread(dev, sb.bmapstart + bno / BPB);
  if (r.is_error()) return;
  Buf* b = r.value();
  uint32_t bit = bno % BPB;
  if (!(b->data[bit / 8] & (1 << (bit % 8)))) {
    kprintf("fs: freeing free block %u\n", bno);
  } else {
    b->data[bit / 8] &= ~(1 << (bit % 8));
    log_write(b);
    SpinlockGuard g(count_lock);
    free_blocks++;
  }
  brelse(b);
}

// ---------------------------------------------------------------- mount
namespace {
ErrorOr<void> bad(const char* what, unsigned long a = 0, unsigned long b = 0) {
  kprintf("fs: cannot mount: ");
  kprintf(what, a, b);
  kprintf("\n");
  return Errno::Invalid;
}

ErrorOr<void> check_superblock(uint64_t disk_blocks) {
  if (sb.magic != FS_MAGIC) return bad("bad magic 0x%lx (not a kai file system)", sb.magic);
  if (sb.version != FS_VERSION) return bad("bad version %lu (this kernel reads version %lu)", sb.version, FS_VERSION);
  if (sb.block_size != BSIZE) return bad("block size %lu not supported (need %lu)", sb.block_size, BSIZE);
  if (sb.ndirect != NDIRECT) return bad("inode format with %lu direct blocks not supported (need %lu)", sb.ndirect, NDIRECT);
  if (sb.nblocks > disk_blocks)
    return bad("superblock says %lu blocks but the disk has only %lu", sb.nblocks, disk_blocks);
  if (sb.nblocks < 16 || sb.nblocks > MAX_BLOCKS)
    return bad("size of %lu blocks out of range (at most %lu)", sb.nblocks, MAX_BLOCKS);
  if (sb.ninodes < 2 || uint64_t(sb.ninodes) > uint64_t(sb.nblocks) * IPB)
    return bad("inode count %lu out of range", sb.ninodes);
  uint64_t inodestart = uint64_t(sb.logstart) + sb.nlog;
  uint64_t bmapstart = inodestart + ninodeblocks();
  uint64_t datastart = bmapstart + nbitmap();
  if (sb.logstart != SUPER_BLOCK + 1 || sb.nlog < 2 || sb.inodestart != inodestart ||
      sb.bmapstart != bmapstart || sb.datastart != datastart || datastart >= sb.nblocks)
    return bad("inconsistent layout (log at %lu, data at %lu)", sb.logstart, sb.datastart);
  return {};
}

void count_free(uint32_t dev) {
  uint64_t used = 0;
  for (uint32_t i = 0; i < nbitmap(); i++) {
    auto r = bread(dev, sb.bmapstart + i);
    if (r.is_error()) return;
    auto* w = reinterpret_cast<uint64_t*>(r.value()->data);
    for (uint32_t k = 0; k < BSIZE / 8; k++) used += __builtin_popcountll(w[k]);
    brelse(r.value());
  }
  uint64_t bits = uint64_t(nbitmap()) * BPB;
  free_blocks = bits - used - (bits - sb.nblocks);   // bits past the end are never set
}

// Inodes with no links left by a crash (unlinked while open) are freed now;
// free inodes are counted on the way.
ErrorOr<void> free_orphans(uint32_t dev) {
  uint64_t nfree = 0;
  for (uint32_t inum = 1; inum < sb.ninodes; inum++) {
    Buf* b = TRY(bread(dev, inode_block(inum)));
    DiskInode di = reinterpret_cast<DiskInode*>(b->data)[inum % IPB];
    brelse(b);
    if (di.type == 0) {
      nfree++;
      continue;
    }
    if (di.nlink != 0) continue;
    kprintf("fs: freeing orphan inode %u\n", inum);
    Transaction tx;
    auto ip = iget(dev, inum);
    if (!ip.is_error()) {
      ilock(ip.value());
      iunlock(ip.value());
      iput(ip.value());   // nlink 0, last reference: truncates and frees
    }
    nfree++;
  }
  free_inodes = nfree;
  return {};
}
}  // namespace

ErrorOr<void> init(int dev) {
  if (mounted) return Errno::Busy;
  if (!virtio_blk_present()) {
    kprintf("fs: cannot mount: no disk\n");
    return Errno::NoDevice;
  }
  fsdev = static_cast<uint32_t>(dev);
  binit();
  uint64_t disk_blocks = virtio_blk_capacity() / SECTORS_PER_BLOCK;
  bset_limit(disk_blocks > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(disk_blocks));
  if (disk_blocks < 2) {
    kprintf("fs: cannot mount: disk of %lu bytes is too small\n", static_cast<unsigned long>(disk_blocks * BSIZE));
    return Errno::Invalid;
  }
  {
    Buf* b = TRY(bread(fsdev, SUPER_BLOCK));
    memcpy(&sb, b->data, sizeof(sb));
    b->valid = false;   // the superblock is not cached across the mount
    brelse(b);
  }
  TRY(check_superblock(disk_blocks));
  bset_limit(sb.nblocks);
  TRY(initlog(fsdev, sb));
  {
    Buf* b = TRY(bread(fsdev, inode_block(ROOT_INO)));
    DiskInode root = reinterpret_cast<DiskInode*>(b->data)[ROOT_INO % IPB];
    brelse(b);
    if (root.type != KAI_T_DIR) {
      kprintf("fs: cannot mount: root inode is not a directory (type %u)\n", root.type);
      return Errno::Invalid;
    }
  }
  mounted = true;
  count_free(fsdev);
  TRY(free_orphans(fsdev));
  alloc_hint = sb.datastart;
  kprintf("fs: mounted %lu MiB: %lu blocks free, %lu of %u inodes free\n",
          static_cast<unsigned long>(uint64_t(sb.nblocks) * BSIZE >> 20),
          static_cast<unsigned long>(free_blocks), static_cast<unsigned long>(free_inodes), sb.ninodes - 1);
  return {};
}

void fs_statfs(kai_statfs* st) {
  SpinlockGuard g(count_lock);
  st->block_size = BSIZE;
  st->total_blocks = sb.nblocks;
  st->free_blocks = free_blocks;
  st->total_inodes = sb.ninodes ? sb.ninodes - 1 : 0;
  st->free_inodes = free_inodes;
}


}  // namespace fs
