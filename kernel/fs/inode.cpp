// The inode layer: the table of in-memory inodes (iget, idup, iput), their
// contents (ilock loads them, iupdate stores them), allocation and
// truncation, the block map from file blocks to disk blocks, and writei.
// The life cycle of an inode is explained beside struct Inode in inode.h.
//
// In this file:
//   iget, idup, iput, iunlockput    references (the itable lock)
//   ilock, iunlock                  contents (the inode's sleep lock)
//   ialloc, iupdate, itrunc, stati  the disk inode
//   bmap, map_entry                 file block -> disk block
//   writei                          writing file data (reads: readahead.cpp)
//
// Locking: itable.lock (a spinlock) guards every ref, dev and inum; an
// inode's sleep lock guards everything else in it. Take them in that order
// and never hold itable.lock while sleeping on the disk.
#include "inode.h"
#include "bio.h"
#include "log.h"
#include "page_cache.h"
#include "../printf.h"
#include "../proc.h"
#include "../sleeplock.h"
#include "../spinlock.h"
#include "../string.h"

namespace fs {
namespace {

struct ITable {
  Spinlock lock{"itable"};
  Inode inode[NINODE];
};
ITable itable;
// Truncations of any file so far (atomic): see inode_truncations.
uint64_t all_truncations = 0;

// Where free_map copies a map block's entries: freeing a block needs the
// bitmap's buffer, so the map block's own buffer is released first. One
// array per level of map (a double-indirect block's entries stay while each
// indirect block's are freed). Static, so that a truncation never needs
// memory: running out of pages must not leak disk blocks. One truncation at
// a time uses it, under truncate_lock (taken with the inode locked, before
// any buffer: no path holds a buffer and then waits for it).
Sleeplock truncate_lock{"truncate"};
uint32_t map_copy[2][NINDIRECT];

// Frees every block of a map block (level 1: data; level 2: indirect
// blocks). truncate_lock held.
void free_map(uint32_t dev, uint32_t map_block, int level) {
  auto r = bread(dev, map_block);
  if (r.is_error()) return;
  Buf* b = r.value();
  uint32_t* entries = map_copy[level - 1];
  memcpy(entries, b->data, BSIZE);
  brelse(b);
  for (uint32_t i = 0; i < NINDIRECT; i++) {
    if (!entries[i]) continue;
    if (level > 1) free_map(dev, entries[i], level - 1);
    bfree(dev, entries[i]);
  }
}

}  // namespace

// ---------------------------------------------------------------- references
ErrorOr<Inode*> iget(uint32_t dev, uint32_t inum) {
  if (inum == 0 || inum >= superblock().ninodes) {
    kprintf("fs: inode number %u out of range (corrupt directory?)\n", inum);
    return Errno::IO;
  }
  SpinlockGuard g(itable.lock);
  Inode* empty = nullptr;
  for (Inode& ip : itable.inode) {
    if (ip.ref > 0 && ip.dev == dev && ip.inum == inum) {
      ip.ref++;
      return &ip;
    }
    if (!empty && ip.ref == 0) empty = &ip;
  }
  if (!empty) return Errno::FileTable;
  empty->dev = dev;
  empty->inum = inum;
  empty->ref = 1;
  empty->valid = false;
  return empty;
}

// ---------------------------------------------------------------- block map
// Block number for file block bn of ip, or 0 for a hole (alloc == false).
// Allocates missing blocks (and map blocks) when alloc is true.
ErrorOr<uint32_t> map_entry(Inode* ip, uint32_t map_block, uint32_t idx, bool alloc) {
  Buf* b = TRY(bread(ip->dev, map_block));
  auto* a = reinterpret_cast<uint32_t*>(b->data);
  uint32_t addr = a[idx];
  if (addr == 0 && alloc) {
    auto nb = balloc(ip->dev);
    if (nb.is_error()) {
      brelse(b);
      return nb.error();
    }
    addr = a[idx] = nb.value();
    log_write(b);
  }
  brelse(b);
  return addr;
}

ErrorOr<uint32_t> bmap(Inode* ip, uint64_t bn, bool alloc) {
  auto ensure = [&](uint32_t& slot) -> ErrorOr<uint32_t> {
    if (slot == 0 && alloc) slot = TRY(balloc(ip->dev));
    return slot;
  };
  if (bn < NDIRECT) return ensure(ip->addrs[bn]);
  bn -= NDIRECT;
  if (bn < NINDIRECT) {
    uint32_t ind = TRY(ensure(ip->indirect));
    if (ind == 0) return 0u;
    return map_entry(ip, ind, static_cast<uint32_t>(bn), alloc);
  }
  bn -= NINDIRECT;
  if (bn < uint64_t(NINDIRECT) * NINDIRECT) {
    uint32_t dind = TRY(ensure(ip->dindirect));
    if (dind == 0) return 0u;
    uint32_t ind = TRY(map_entry(ip, dind, static_cast<uint32_t>(bn / NINDIRECT), alloc));
    if (ind == 0) return 0u;
    return map_entry(ip, ind, static_cast<uint32_t>(bn % NINDIRECT), alloc);
  }
  return Errno::FileTooBig;
}

// ---------------------------------------------------------------- contents
ErrorOr<Inode*> ialloc(uint32_t dev, uint16_t type) {
  for (uint32_t inum = 1; inum < superblock().ninodes; inum++) {
    Buf* b = TRY(bread(dev, inode_block(inum)));
    auto* di = &reinterpret_cast<DiskInode*>(b->data)[inum % IPB];
    if (di->type == 0) {
      memset(di, 0, sizeof(*di));
      di->type = type;
      log_write(b);
      brelse(b);
      count_inode_allocated();
      return iget(dev, inum);
    }
    brelse(b);
  }
  return Errno::NoSpace;
}

namespace {
// The fields an in-memory Inode mirrors from its DiskInode, copied in
// either direction (ilock loads them, iupdate stores them).
template <typename To, typename From>
void copy_inode_fields(To& to, const From& from) {
  to.type = from.type;
  to.major = from.major;
  to.minor = from.minor;
  to.nlink = from.nlink;
  to.size = from.size;
  memcpy(to.addrs, from.addrs, sizeof(to.addrs));
  to.indirect = from.indirect;
  to.dindirect = from.dindirect;
}
}  // namespace

ErrorOr<void> iupdate(Inode* ip) {
  Buf* b = TRY(bread(ip->dev, inode_block(ip->inum)));
  auto* di = &reinterpret_cast<DiskInode*>(b->data)[ip->inum % IPB];
  copy_inode_fields(*di, *ip);
  log_write(b);
  brelse(b);
  return {};
}

Inode* idup(Inode* ip) {
  SpinlockGuard g(itable.lock);
  ip->ref++;
  return ip;
}

void ilock(Inode* ip) {
  ip->lock.acquire();
  if (ip->valid) return;
  auto r = bread(ip->dev, inode_block(ip->inum));
  if (r.is_error()) {
    ip->type = 0;   // unreadable: looks like a free inode, callers refuse it
    return;
  }
  Buf* b = r.value();
  const DiskInode* di = &reinterpret_cast<DiskInode*>(b->data)[ip->inum % IPB];
  copy_inode_fields(*ip, *di);
  brelse(b);
  ip->valid = true;
  if (ip->type == 0) kprintf("fs: inode %u is free but in use (corrupt directory?)\n", ip->inum);
  if (ip->type > KAI_T_DEVICE || ip->size > MAXFILE_BYTES) {
    // Corrupt: refuse it like a free inode (a huge size would make
    // directory scans run for ages).
    kprintf("fs: inode %u is corrupt (type %u, size %lu)\n", ip->inum, ip->type,
            static_cast<unsigned long>(ip->size));
    ip->type = 0;
    ip->size = 0;
  }
}

void iunlock(Inode* ip) { ip->lock.release(); }

bool iholding(Inode* ip) { return ip->lock.holding(); }

void iput(Inode* ip) {
  itable.lock.acquire();
  if (ip->ref == 1 && ip->valid && ip->nlink == 0 && ip->type != 0) {
    // Last reference to an unlinked inode: free it. Nobody else can hold its
    // lock (ref == 1), so this does not block.
    ip->lock.acquire();
    itable.lock.release();
    itrunc(ip);
    ip->type = 0;
    MUST(iupdate(ip), "a disk inode left with no links is freed at the next mount");
    ip->valid = false;
    count_inode_freed();
    ip->lock.release();
    itable.lock.acquire();
  }
  ip->ref--;
  itable.lock.release();
}

void iunlockput(Inode* ip) {
  iunlock(ip);
  iput(ip);
}

void itrunc(Inode* ip) {
  ip->gen++;
  // Its cached pages go (a mapping keeps its page, detached: page_cache.h;
  // so does a loaded model, whose file may be deleted but not truncated).
  page_cache_drop(ip, 0, (ip->size + BSIZE - 1) / BSIZE);
  page_cache_unpin_file(ip);
  for (uint32_t i = 0; i < NDIRECT; i++) {
    if (ip->addrs[i]) bfree(ip->dev, ip->addrs[i]);
    ip->addrs[i] = 0;
  }
  SleeplockGuard guard(truncate_lock);
  if (ip->indirect) {
    free_map(ip->dev, ip->indirect, 1);
    bfree(ip->dev, ip->indirect);
    ip->indirect = 0;
  }
  if (ip->dindirect) {
    free_map(ip->dev, ip->dindirect, 2);
    bfree(ip->dev, ip->dindirect);
    ip->dindirect = 0;
  }
  ip->size = 0;
  MUST(iupdate(ip), "freed blocks cannot be taken back; the next update of the inode retries");
  // Last, after the pages left the cache: a process that reads the new
  // counts unmaps what it mapped of this file before (vm_sync_truncations),
  // and whatever it maps after them comes from the cache as it is now.
  __atomic_add_fetch(&ip->truncations, 1, __ATOMIC_RELEASE);
  __atomic_add_fetch(&all_truncations, 1, __ATOMIC_RELEASE);
}

void stati(Inode* ip, kai_stat* st) {
  st->dev = ip->dev;
  st->ino = ip->inum;
  st->type = ip->type;
  st->nlink = ip->nlink;
  st->pad = 0;
  st->size = ip->size;
}

uint16_t inode_type(Inode* ip) { return ip->type; }
uint64_t inode_size(Inode* ip) { return ip->size; }
uint64_t inode_truncations(Inode* ip) { return __atomic_load_n(&ip->truncations, __ATOMIC_ACQUIRE); }
uint64_t truncations_total() { return __atomic_load_n(&all_truncations, __ATOMIC_ACQUIRE); }

// ---------------------------------------------------------------- data
ErrorOr<uint64_t> writei(Inode* ip, bool user_src, uint64_t src, uint64_t off, uint64_t n) {
  if (off + n < off || off + n > MAXFILE_BYTES) return Errno::FileTooBig;
  // A loaded model's file: its cached pages are the service's weights.
  if (page_cache_file_pinned(ip)) return Errno::Busy;
  ip->gen++;   // read-ahead issued before this write is stale
  uint64_t tot = 0;
  ErrorOr<void> err;
  while (tot < n) {
    uint64_t bn = off / BSIZE;
    uint64_t in_block = off % BSIZE;
    uint64_t m = BSIZE - in_block < n - tot ? BSIZE - in_block : n - tot;
    auto addr = bmap(ip, bn, true);
    if (addr.is_error()) {
      err = addr.error();
      break;
    }
    // A whole-block overwrite of a block past the old end need not read it.
    bool whole = m == BSIZE;
    auto b = whole ? bget_overwrite(ip->dev, addr.value()) : bread(ip->dev, addr.value());
    if (b.is_error()) {
      err = b.error();
      break;
    }
    bool was_valid = b.value()->valid;
    auto r = either_copyin(b.value()->data + in_block, user_src, src, m);
    if (r.is_error()) {
      // A partly filled buffer that held the block before keeps the bytes
      // that did arrive (a short write); one that did not stays invalid.
      if (was_valid) log_write(b.value());
      brelse(b.value());
      page_cache_drop(ip, bn, bn + 1);   // partly written: let the next read fetch it
      err = r;
      break;
    }
    b.value()->valid = true;
    log_write(b.value());
    page_cache_update(ip, bn, b.value()->data, in_block, m);   // a reader or a mapping sees the write
    brelse(b.value());
    tot += m;
    off += m;
    src += m;
  }
  if (off > ip->size && tot > 0) ip->size = off;
  // bmap may have changed the block map even when nothing was written.
  TRY(iupdate(ip));
  if (err.is_error() && tot == 0) return err.error();
  return tot;
}

ErrorOr<void> write_page_back(Inode* ip, uint64_t index, const uint8_t* page) {
  uint64_t off = index * BSIZE;
  if (off >= ip->size) return {};   // truncated since: nothing of it is in the file
  // Only the bytes within the file: a map never makes a file longer, and
  // whatever a store put past the end of the last page stays in memory.
  uint64_t n = ip->size - off < BSIZE ? ip->size - off : BSIZE;
  ip->gen++;   // read-ahead issued before this write is stale
  uint32_t block = TRY(bmap(ip, index, true));   // a hole gets its block now
  auto b = n == BSIZE ? bget_overwrite(ip->dev, block) : bread(ip->dev, block);
  if (b.is_error()) return b.error();
  memcpy(b.value()->data, page, n);
  b.value()->valid = true;
  log_write(b.value());
  brelse(b.value());
  // No page_cache_update: the page is the source (and may take new stores
  // meanwhile, which a copy back would lose).
  return iupdate(ip);   // bmap may have changed the block map
}

}  // namespace fs
