// What the file system offers the rest of the kernel: mounting, the log
// transaction guard, path lookup and inode references, open files and the
// device switch. The shapes follow xv6's file layer.
#pragma once
#include <stdint.h>
#include "../error.h"
#include <kai/fs_abi.h>

namespace fs {

struct Inode;
struct File;

// Mounts the root file system. Must run in process context (it sleeps on
// disk I/O), so the first user process calls it before exec("/init").
// A corrupt or foreign image: prints why and returns the error (no panic).
ErrorOr<void> init(int dev);

// Every file-system system call brackets its updates in one transaction.
// Use the Transaction guard below rather than calling these by hand.
void begin_op();
void end_op();

// One log transaction as a scope: begin_op() in the constructor, end_op() in
// the destructor, so every return path ends it (a forgotten end_op would
// stop every later commit). Open one around anything that may write to the
// disk, and that includes iput(): dropping the last reference to an unlinked
// inode frees its blocks. Keep it short: while any transaction is open no
// commit can start, so a long one (a multi-MiB read) stalls every writer.
//   { fs::Transaction tx; ip = TRY(fs::namei(path)); }   // lookups only
class Transaction {
 public:
  Transaction() { begin_op(); }
  ~Transaction() { end_op(); }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
};

// Path lookup relative to the current process's cwd (or "/").
ErrorOr<Inode*> namei(const char* path);
void ilock(Inode* ip);
void iunlock(Inode* ip);
void iput(Inode* ip);          // inside a Transaction (it may free the inode)
void iunlockput(Inode* ip);    // inside a Transaction
Inode* idup(Inode* ip);
bool iholding(Inode* ip);      // is ip locked by the calling process?
// Reads up to n bytes at off into dst (user or kernel address); ip locked.
// Returns bytes read (0 at end of file).
ErrorOr<uint64_t> readi(Inode* ip, bool user_dst, uint64_t dst, uint64_t off, uint64_t n);
uint16_t inode_type(Inode* ip);    // KAI_T_*, ip locked
uint64_t inode_size(Inode* ip);    // ip locked
// Truncations of ip, and of every file, so far: a mapping compares them with
// what it saw (mmap.h). No lock needed (atomic reads).
uint64_t inode_truncations(Inode* ip);
uint64_t truncations_total();

// Open files (for fork/exit and the console).
File* filedup(File* f);
void fileclose(File* f);

// Device switch: the console registers its read/write here.
struct DeviceOps {
  ErrorOr<uint64_t> (*read)(bool user_dst, uint64_t dst, uint64_t n);
  ErrorOr<uint64_t> (*write)(bool user_src, uint64_t src, uint64_t n);
};
extern DeviceOps devsw[];   // indexed by major number (KAI_DEV_*)

}  // namespace fs
