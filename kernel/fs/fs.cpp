// Mounting, block and inode allocation, block maps, readi/writei,
// directories and path lookup. Locking follows xv6: the itable spinlock
// guards ref counts, an inode's sleep lock guards its contents, and every
// modification happens inside a log transaction.
#include <new>
#include "inode.h"
#include "bio.h"
#include "log.h"
#include "../drivers/virtio_blk.h"
#include "../kalloc.h"
#include "../printf.h"
#include "../proc.h"
#include "../spinlock.h"
#include "../string.h"
#include "../vm.h"

namespace fs {
namespace {

SuperBlock sb;
uint32_t fsdev = 0;
bool mounted = false;

struct ITable {
  Spinlock lock{"itable"};
  Inode inode[NINODE];
};
ITable itable;

// Counters for statfs, and where the block allocator looks first.
Spinlock count_lock("fs counts");
uint64_t free_blocks = 0;
uint64_t free_inodes = 0;
uint32_t alloc_hint = 0;

uint32_t ninodeblocks() { return (sb.ninodes + IPB - 1) / IPB; }
uint32_t nbitmap() { return (sb.nblocks + BPB - 1) / BPB; }
uint32_t inode_block(uint32_t inum) { return sb.inodestart + inum / IPB; }

// ---------------------------------------------------------------- blocks
ErrorOr<void> bzero(uint32_t dev, uint32_t bno) {
  Buf* b = TRY(bget_overwrite(dev, bno));
  memset(b->data, 0, BSIZE);
  b->valid = true;
  log_write(b);
  brelse(b);
  return {};
}

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

// ---------------------------------------------------------------- inodes
ErrorOr<Inode*> iget(uint32_t dev, uint32_t inum) {
  if (inum == 0 || inum >= sb.ninodes) {
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

// Frees every block of a map block (level 1: data; level 2: indirect blocks).
void free_map(uint32_t dev, uint32_t map_block, int level) {
  auto r = bread(dev, map_block);
  if (r.is_error()) return;
  Buf* b = r.value();
  // copy the entries: freeing may need other buffers
  uint32_t* entries = static_cast<uint32_t*>(kalloc());
  if (!entries) {
    brelse(b);
    kprintf("fs: out of memory while truncating; blocks leaked\n");
    return;
  }
  memcpy(entries, b->data, BSIZE);
  brelse(b);
  for (uint32_t i = 0; i < NINDIRECT; i++) {
    if (!entries[i]) continue;
    if (level > 1) free_map(dev, entries[i], level - 1);
    bfree(dev, entries[i]);
  }
  kfree(entries);
}

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
    uint64_t pa = user_va_to_pa(p->pagetable, dst);
    if (pa == 0) return Errno::Fault;
    TRY(copyout(p->pagetable, dst, src, 1));   // permission check (and the first byte)
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
    segs = static_cast<BlkSegment*>(kalloc_contiguous(SEG_PAGES * PAGE_SIZE));
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
      uint64_t pa = user_va_to_pa(p->pagetable, va);
      if (pa == 0) return Errno::Fault;
      // The device writes this page: make sure the process may write it too
      // (copyout checks the write permission that user_va_to_pa does not).
      uint8_t probe;
      TRY(copyin(p->pagetable, &probe, va, 1));
      TRY(copyout(p->pagetable, va, &probe, 1));
      if (nseg > 0 && segs[nseg - 1].addr + segs[nseg - 1].len == pa)
        segs[nseg - 1].len += static_cast<uint32_t>(len);
      else
        segs[nseg++] = {pa, static_cast<uint32_t>(len)};
      va += len;
    }
  }
  TRY(blocks_io(first, count, segs, nseg, false));
  return bytes;
}

}  // namespace

const SuperBlock& superblock() { return sb; }

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

// ---------------------------------------------------------------- inodes
ErrorOr<Inode*> ialloc(uint32_t dev, uint16_t type) {
  for (uint32_t inum = 1; inum < sb.ninodes; inum++) {
    Buf* b = TRY(bread(dev, inode_block(inum)));
    auto* di = &reinterpret_cast<DiskInode*>(b->data)[inum % IPB];
    if (di->type == 0) {
      memset(di, 0, sizeof(*di));
      di->type = type;
      log_write(b);
      brelse(b);
      {
        SpinlockGuard g(count_lock);
        free_inodes--;
      }
      return iget(dev, inum);
    }
    brelse(b);
  }
  return Errno::NoSpace;
}

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
    {
      SpinlockGuard g(count_lock);
      free_inodes++;
    }
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
  for (uint32_t i = 0; i < NDIRECT; i++) {
    if (ip->addrs[i]) bfree(ip->dev, ip->addrs[i]);
    ip->addrs[i] = 0;
  }
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

// ---------------------------------------------------------------- data
// ---------------------------------------------------------------- read-ahead
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
    s.mem = static_cast<uint8_t*>(kalloc_contiguous(uint64_t(ReadAhead::BUF_BLOCKS) * BSIZE));
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
  uint64_t tot = 0;
  BlkSegment* segs = nullptr;
  ErrorOr<void> err;
  if (rap && !*rap) {
    void* page = kalloc();
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
    if (!held) {
      ra_drop_all(ra);
      ra->next_fbn = off / BSIZE;
      for (auto& sl : ra->slot) ra_issue(ip, ra, sl);
    }
  }
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
        tot += got.value();
        off += got.value();
        dst += got.value();
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
        tot += got.value();
        off += got.value();
        dst += got.value();
        // A big read: read the next runs ahead.
        if (ra && got.value() >= RA_TRIGGER_BLOCKS * BSIZE) {
          ra_drop_all(ra);
          ra->next_fbn = off / BSIZE;
          for (auto& sl : ra->slot) ra_issue(ip, ra, sl);
        }
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
    tot += m;
    off += m;
    dst += m;
  }
  if (segs) kfree_contiguous(segs, SEG_PAGES * PAGE_SIZE);
  if (ra) ra->last_end = off;
  if (err.is_error() && tot == 0) return err.error();
  return tot;
}

ErrorOr<uint64_t> readi(Inode* ip, bool user_dst, uint64_t dst, uint64_t off, uint64_t n) {
  return readi_stream(ip, nullptr, user_dst, dst, off, n);
}

ErrorOr<uint64_t> writei(Inode* ip, bool user_src, uint64_t src, uint64_t off, uint64_t n) {
  if (off + n < off || off + n > MAXFILE_BYTES) return Errno::FileTooBig;
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
      err = r;
      break;
    }
    b.value()->valid = true;
    log_write(b.value());
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

// ---------------------------------------------------------------- directories
namespace {
bool name_eq(const char* a, const char* b) { return strncmp(a, b, KAI_NAME_MAX + 1) == 0; }
}  // namespace

// Calls fn(entry, offset) for every slot of directory dp; fn returns true to stop.
template <typename Fn>
ErrorOr<bool> for_each_dirent(Inode* dp, Fn fn) {
  for (uint64_t off = 0; off < dp->size; off += BSIZE) {
    uint32_t addr = TRY(bmap(dp, off / BSIZE, false));
    if (addr == 0) continue;
    Buf* b = TRY(bread(dp->dev, addr));
    auto* de = reinterpret_cast<kai_dirent*>(b->data);
    uint64_t n = dp->size - off < BSIZE ? (dp->size - off) / sizeof(kai_dirent) : DPB;
    for (uint64_t i = 0; i < n; i++) {
      if (fn(de[i], off + i * sizeof(kai_dirent))) {
        brelse(b);
        return true;
      }
    }
    brelse(b);
  }
  return false;
}

ErrorOr<Inode*> dirlookup(Inode* dp, const char* name, uint64_t* poff) {
  if (dp->type != KAI_T_DIR) return Errno::NotDir;
  uint32_t inum = 0;
  uint64_t where = 0;
  bool found = TRY(for_each_dirent(dp, [&](const kai_dirent& de, uint64_t off) {
    if (de.inum == 0 || !name_eq(de.name, name)) return false;
    inum = de.inum;
    where = off;
    return true;
  }));
  if (!found) return Errno::NoEnt;
  if (poff) *poff = where;
  return iget(dp->dev, inum);
}

ErrorOr<void> dirlink(Inode* dp, const char* name, uint32_t inum) {
  if (auto existing = dirlookup(dp, name, nullptr); !existing.is_error()) {
    iput(existing.value());
    return Errno::Exists;
  }
  uint64_t slot = dp->size;
  TRY(for_each_dirent(dp, [&](const kai_dirent& de, uint64_t off) {
    if (de.inum != 0) return false;
    slot = off;
    return true;
  }));
  kai_dirent de{};
  de.inum = inum;
  strncpy(de.name, name, KAI_NAME_MAX);
  de.name[KAI_NAME_MAX] = 0;
  uint64_t n = TRY(writei(dp, false, reinterpret_cast<uint64_t>(&de), slot, sizeof(de)));
  if (n != sizeof(de)) return Errno::NoSpace;
  return {};
}

ErrorOr<bool> dir_is_empty(Inode* dp) {
  bool nonempty = TRY(for_each_dirent(dp, [&](const kai_dirent& de, uint64_t) {
    return de.inum != 0 && !name_eq(de.name, ".") && !name_eq(de.name, "..");
  }));
  return !nonempty;
}

// ---------------------------------------------------------------- path names
namespace {
// Copies the next element of path into name; returns the rest of the path
// (nullptr when there is no element). Elements longer than KAI_NAME_MAX fail.
ErrorOr<const char*> skipelem(const char* path, char* name) {
  while (*path == '/') path++;
  if (*path == 0) return static_cast<const char*>(nullptr);
  const char* s = path;
  while (*path != '/' && *path != 0) path++;
  uint64_t len = static_cast<uint64_t>(path - s);
  if (len > KAI_NAME_MAX) return Errno::NameTooLong;
  memcpy(name, s, len);
  name[len] = 0;
  while (*path == '/') path++;
  return path;
}

ErrorOr<Inode*> namex(const char* path, bool parent, char* name) {
  if (!mounted) return Errno::NoDevice;
  if (*path == 0) return Errno::NoEnt;
  Inode* ip;
  Process* p = current_process();
  if (*path == '/' || !p || !p->cwd)
    ip = TRY(iget(fsdev, ROOT_INO));
  else
    ip = idup(p->cwd);
  for (;;) {
    auto next_path = skipelem(path, name);
    if (next_path.is_error()) {
      iput(ip);
      return next_path.error();
    }
    if (!next_path.value()) break;
    path = next_path.value();
    ilock(ip);
    if (ip->type != KAI_T_DIR) {
      iunlockput(ip);
      return Errno::NotDir;
    }
    if (parent && *path == 0) {
      iunlock(ip);
      return ip;   // stop one level early
    }
    auto next = dirlookup(ip, name, nullptr);
    iunlockput(ip);
    if (next.is_error()) return next.error();
    ip = next.value();
  }
  if (parent) {
    iput(ip);   // path had no last element ("/")
    return Errno::NoEnt;
  }
  return ip;
}
}  // namespace

ErrorOr<Inode*> namei(const char* path) {
  char name[KAI_NAME_MAX + 1];
  return namex(path, false, name);
}

ErrorOr<Inode*> nameiparent(const char* path, char* name) { return namex(path, true, name); }

}  // namespace fs
