// The file table and the operations on open files (pipes, inodes, devices).
//
// In this file:
//   filealloc, filedup, fileclose   the table's reference counts (ftable.lock)
//   fileread, filewrite, fileseek, filestat   dispatch on the kind of file
//
// A File is shared by every descriptor dup'ed or fork'ed from it, so its
// offset is shared too. Inode-backed operations take the inode's sleep lock
// for the offset and the data; a write runs in chunks of one transaction
// each (WRITE_CHUNK), so a large write never overflows the log.
#include "file.h"
#include "inode.h"
#include "log.h"
#include "../param.h"
#include "../spinlock.h"
#include "../proc.h"

namespace fs {

DeviceOps devsw[NDEV];

namespace {
struct FileTable {
  Spinlock lock{"ftable"};
  File file[NFILE];
};
FileTable ftable;

// Bytes of one write transaction: the data blocks plus the inode, map and
// bitmap blocks they may touch must fit in MAXOPBLOCKS (docs/fs.md).
constexpr uint64_t WRITE_CHUNK = (MAXOPBLOCKS - 16) * BSIZE;
}  // namespace

File* filealloc() {
  SpinlockGuard g(ftable.lock);
  for (File& f : ftable.file) {
    if (f.ref == 0) {
      f = File{};
      f.ref = 1;
      return &f;
    }
  }
  return nullptr;
}

File* filedup(File* f) {
  SpinlockGuard g(ftable.lock);
  f->ref++;
  return f;
}

void fileclose(File* f) {
  File copy;
  {
    SpinlockGuard g(ftable.lock);
    if (--f->ref > 0) return;
    copy = *f;
    f->ref = 0;
    f->kind = File::Kind::None;
  }
  if (copy.kind == File::Kind::Pipe) {
    pipeclose(copy.pipe, copy.writable);
  } else if (copy.kind == File::Kind::Inode || copy.kind == File::Kind::Device) {
    readahead_free(copy.ra);
    Transaction tx;   // the last reference to an unlinked file frees it
    iput(copy.ip);
  }
}

ErrorOr<void> filestat(File* f, UserPtr<kai_stat> out) {
  if (f->kind != File::Kind::Inode && f->kind != File::Kind::Device) return Errno::Invalid;
  kai_stat st{};
  ilock(f->ip);
  stati(f->ip, &st);
  iunlock(f->ip);
  return copy_to_user(out, &st);
}

ErrorOr<uint64_t> fileread(File* f, UserPtr<uint8_t> buf, uint64_t n) {
  if (!f->readable) return Errno::BadFd;
  switch (f->kind) {
    case File::Kind::Pipe:
      return piperead(f->pipe, buf, n);
    case File::Kind::Device:
      if (f->major >= NDEV || !devsw[f->major].read) return Errno::NoDevice;
      return devsw[f->major].read(true, buf.addr(), n);
    case File::Kind::Inode: {
      ilock(f->ip);
      auto r = readi_stream(f->ip, &f->ra, true, buf.addr(), f->off, n);
      if (!r.is_error()) f->off += r.value();
      iunlock(f->ip);
      return r;
    }
    default:
      return Errno::BadFd;
  }
}

ErrorOr<uint64_t> filewrite(File* f, UserPtr<uint8_t> buf, uint64_t n) {
  if (!f->writable) return Errno::BadFd;
  switch (f->kind) {
    case File::Kind::Pipe:
      return pipewrite(f->pipe, buf, n);
    case File::Kind::Device:
      if (f->major >= NDEV || !devsw[f->major].write) return Errno::NoDevice;
      return devsw[f->major].write(true, buf.addr(), n);
    case File::Kind::Inode: {
      // One transaction per chunk keeps each within the log's limits.
      uint64_t done = 0;
      while (done < n) {
        uint64_t m = n - done < WRITE_CHUNK ? n - done : WRITE_CHUNK;
        ErrorOr<uint64_t> r = Errno::IO;
        {
          Transaction tx;
          if (auto w = log_writable(); w.is_error()) {
            r = w.error();
          } else {
            ilock(f->ip);
            if (f->append) f->off = f->ip->size;
            r = writei(f->ip, true, (buf + done).addr(), f->off, m);
            if (!r.is_error()) f->off += r.value();
            iunlock(f->ip);
          }
        }
        if (r.is_error()) {
          if (done > 0) return done;
          return r.error();
        }
        done += r.value();
        if (r.value() != m) break;   // short write: the disk filled up
      }
      return done;
    }
    default:
      return Errno::BadFd;
  }
}

ErrorOr<uint64_t> fileseek(File* f, int64_t offset, int whence) {
  if (f->kind != File::Kind::Inode) return Errno::IllegalSeek;
  ilock(f->ip);
  int64_t base = 0;
  if (whence == KAI_SEEK_SET) base = 0;
  else if (whence == KAI_SEEK_CUR) base = static_cast<int64_t>(f->off);
  else if (whence == KAI_SEEK_END) base = static_cast<int64_t>(f->ip->size);
  else {
    iunlock(f->ip);
    return Errno::Invalid;
  }
  int64_t pos = base + offset;
  if (pos < 0 || (offset > 0 && pos < base)) {
    iunlock(f->ip);
    return Errno::Invalid;
  }
  f->off = static_cast<uint64_t>(pos);
  iunlock(f->ip);
  return static_cast<uint64_t>(pos);
}

}  // namespace fs
