// The inode layer, directories and path names (internal to kernel/fs/).
#pragma once
#include <stdint.h>
#include "../error.h"
#include "../sleeplock.h"
#include "fs.h"
#include "layout.h"

namespace fs {

// An in-memory inode: a cached copy of a DiskInode plus bookkeeping.
struct Inode {
  uint32_t dev = 0;
  uint32_t inum = 0;
  int ref = 0;                  // C++ pointers to it (itable lock)
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
};

// Read-ahead state of one open file (see readi_stream).
struct ReadAhead;

// readi for an open file: a sequential reader gets the next runs of the file
// read ahead into kernel buffers while it copies the current one, so the
// device latency overlaps the copying. *ra is created on demand.
ErrorOr<uint64_t> readi_stream(Inode* ip, ReadAhead** ra, bool user_dst, uint64_t dst, uint64_t off,
                               uint64_t n);
// Waits for read-ahead in flight and frees it (at close).
void readahead_free(ReadAhead* ra);

const SuperBlock& superblock();

ErrorOr<Inode*> ialloc(uint32_t dev, uint16_t type);
ErrorOr<void> iupdate(Inode* ip);                // ip locked, inside a transaction
void itrunc(Inode* ip);                          // ip locked, inside a transaction
ErrorOr<uint64_t> writei(Inode* ip, bool user_src, uint64_t src, uint64_t off, uint64_t n);
void stati(Inode* ip, kai_stat* st);

ErrorOr<Inode*> dirlookup(Inode* dp, const char* name, uint64_t* poff);
ErrorOr<void> dirlink(Inode* dp, const char* name, uint32_t inum);
ErrorOr<bool> dir_is_empty(Inode* dp);
// The parent directory of path (unlocked) and the last element in name
// (KAI_NAME_MAX + 1 bytes).
ErrorOr<Inode*> nameiparent(const char* path, char* name);

// Free blocks and inodes, kept up to date by the allocators.
void fs_statfs(kai_statfs* st);

}  // namespace fs
