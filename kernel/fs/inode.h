// The inode layer, directories and path names: what the files of kernel/fs/
// use of each other (the rest of the kernel sees only fs.h).
#pragma once
#include <stdint.h>
#include "../error.h"
#include "../sleeplock.h"
#include "fs.h"
#include "layout.h"

namespace fs {

// An in-memory inode: a cached copy of a DiskInode plus bookkeeping.
//
// The life of an inode
// --------------------
// The kernel keeps a fixed table of NINODE in-memory inodes (inode.cpp). One
// entry stands for one file on disk while anybody in the kernel uses it, and
// four separate facts describe it:
//
//   ref     How many C++ pointers to this entry exist: open files, current
//           directories, a path lookup in progress. iget() and idup() add
//           one, iput() drops one. An entry with ref == 0 is free for reuse
//           by another inode number. Guarded by the itable spinlock.
//   nlink   How many directory entries name the file on disk. It is part of
//           the file, not of the table: link/unlink change it inside a
//           transaction. A file with nlink == 0 still exists while ref > 0
//           (an unlinked file that is still open); the iput() that drops the
//           last reference then frees its blocks and the disk inode. That is
//           why every iput() runs inside a Transaction.
//   valid   Whether type, size, addrs... below have been read from the disk.
//           iget() does not read anything (it only claims a table entry);
//           the first ilock() does.
//   lock    The sleep lock that guards everything from `valid` down. Held
//           across disk I/O, so it is a sleep lock, not a spinlock.
//
// The typical sequence:
//     ip = namei(path);     // iget inside: ref+1, not locked, maybe not valid
//     ilock(ip);            // lock; read the disk inode if !valid
//     ... readi / writei / change ip->nlink, then iupdate(ip) ...
//     iunlock(ip);
//     iput(ip);             // ref-1; the last one of an unlinked file frees it
//
// Why are getting (iget) and locking (ilock) separate? Holding a reference
// only promises that the entry stays this inode; locking promises exclusive
// use of its contents. A path lookup must hold a reference to a directory
// while it locks the next one: if iget also locked, looking up "." (the
// directory itself) would deadlock, and two processes walking "a/b" and
// "b/.." could lock in opposite orders. Keeping them apart lets namex()
// lock one directory at a time. It also lets open files keep a long-lived
// reference (ref) without holding the lock between system calls.
struct Inode {
  uint32_t dev = 0;             // (itable lock) which disk...
  uint32_t inum = 0;            // (itable lock) ...and which inode on it
  int ref = 0;                  // (itable lock) C++ pointers to this entry
  Sleeplock lock{"inode"};      // protects everything below
  bool valid = false;           // fields below loaded from disk
  uint16_t type = 0;
  uint16_t major = 0;
  uint16_t minor = 0;
  uint16_t nlink = 0;
  uint64_t size = 0;
  uint32_t addrs[NDIRECT] = {};
  uint32_t indirect = 0;
  uint32_t dindirect = 0;
  uint64_t gen = 0;             // bumped by every write/truncate: read-ahead validity
  // Bumped (atomically, read without the lock) by every itrunc: a mapping
  // that saw an older count may hold pages the truncation detached (mmap.h).
  uint64_t truncations = 0;
};

// Read-ahead state of one open file (see readi_stream).
struct ReadAhead;

// readi for an open file: a sequential reader gets the next runs of the file
// read ahead into kernel buffers while it copies the current one, so the
// device latency overlaps the copying. *ra is created on demand.
ErrorOr<uint64_t> readi_stream(Inode* ip, ReadAhead** ra, bool user_dst, uint64_t dst, uint64_t off,
                               uint64_t n);
// The page cache's fill (readahead.cpp): file pages [index, index + count)
// into the given zeroed pages; returns the bytes read from the device. ip locked.
ErrorOr<uint64_t> read_file_pages(Inode* ip, uint64_t index, uint8_t* const* pages, uint32_t count);
// Waits for read-ahead in flight and frees it (at close).
void readahead_free(ReadAhead* ra);

const SuperBlock& superblock();

ErrorOr<Inode*> ialloc(uint32_t dev, uint16_t type);
ErrorOr<void> iupdate(Inode* ip);                // ip locked, inside a transaction
void itrunc(Inode* ip);                          // ip locked, inside a transaction
ErrorOr<uint64_t> writei(Inode* ip, bool user_src, uint64_t src, uint64_t off, uint64_t n);
// A shared writable map's page back to its file (mmap.h): the bytes of file
// page index that lie within the file, through the log like a write(); the
// file's size never changes. ip locked, inside a transaction (page_cache.h's
// WRITEBACK_PAGES_PER_TX pages at most: each is a data block and, for a
// hole, its map and bitmap blocks, and the inode).
ErrorOr<void> write_page_back(Inode* ip, uint64_t index, const uint8_t* page);
void stati(Inode* ip, kai_stat* st);

ErrorOr<Inode*> dirlookup(Inode* dp, const char* name, uint64_t* poff);
ErrorOr<void> dirlink(Inode* dp, const char* name, uint32_t inum);
ErrorOr<bool> dir_is_empty(Inode* dp);
// The parent directory of path (unlocked) and the last element in name
// (KAI_NAME_MAX + 1 bytes).
ErrorOr<Inode*> nameiparent(const char* path, char* name);

// Free blocks and inodes, kept up to date by the allocators.
void fs_statfs(kai_statfs* st);

// -- Shared between the files of kernel/fs/ only.
// fs.cpp: the mounted device, the block allocator, the statfs counters.
ErrorOr<uint32_t> mounted_dev();              // Errno::NoDevice before mount
uint32_t inode_block(uint32_t inum);          // disk block holding inode inum
ErrorOr<uint32_t> balloc(uint32_t dev);       // a zeroed block, marked used; inside a transaction
void bfree(uint32_t dev, uint32_t bno);       // inside a transaction
void count_inode_allocated();
void count_inode_freed();
// inode.cpp: the inode table and the block map.
ErrorOr<Inode*> iget(uint32_t dev, uint32_t inum);   // referenced, not locked
// Disk block of file block bn (0: a hole), allocating it if alloc. ip locked.
ErrorOr<uint32_t> bmap(Inode* ip, uint64_t bn, bool alloc);
// Entry idx of map block map_block (allocating a missing one if alloc).
ErrorOr<uint32_t> map_entry(Inode* ip, uint32_t map_block, uint32_t idx, bool alloc);

}  // namespace fs
