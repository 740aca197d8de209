// Write-ahead log (xv6's design): every file-system system call runs as a
// transaction between begin_op() and end_op(); the blocks it modifies are
// recorded with log_write() and reach their home locations only after the
// whole set has been written to the log and the log header committed. A
// crash before the commit loses the transaction; after it, mount replays it.
#pragma once
#include "../error.h"
#include "bio.h"
#include "layout.h"

namespace fs {

// Most blocks one transaction may write. Callers split bigger writes.
constexpr uint32_t MAXOPBLOCKS = 64;

// Sets up the log from the superblock and replays a committed transaction.
ErrorOr<void> initlog(uint32_t dev, const SuperBlock& sb);
// Records that b (locked, modified) belongs to the current transaction.
void log_write(Buf* b);
// Inside a transaction: EROFS once a commit has failed on a disk error (the
// file system is read-only until the next boot). Every system call that
// changes a file or directory asks right after its Transaction begins; a
// commit cannot start while that transaction is open, so the answer holds
// until the call ends.
ErrorOr<void> log_writable();

}  // namespace fs
