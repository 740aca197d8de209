// Open files: what a file descriptor points to (internal to kernel/fs/).
#pragma once
#include <stdint.h>
#include "../error.h"
#include "fs.h"
#include "../user_ptr.h"

namespace fs {

struct Pipe;
struct ReadAhead;

struct File {
  enum class Kind : uint8_t { None, Pipe, Inode, Device };
  Kind kind = Kind::None;
  int ref = 0;
  bool readable = false;
  bool writable = false;
  bool append = false;
  Pipe* pipe = nullptr;
  Inode* ip = nullptr;
  uint64_t off = 0;       // Kind::Inode (guarded by ip's lock)
  uint16_t major = 0;     // Kind::Device
  ReadAhead* ra = nullptr;  // Kind::Inode: sequential read-ahead (guarded by ip's lock)
};

File* filealloc();
ErrorOr<void> filestat(File* f, UserPtr<kai_stat> st);
ErrorOr<uint64_t> fileread(File* f, UserPtr<uint8_t> buf, uint64_t n);
ErrorOr<uint64_t> filewrite(File* f, UserPtr<uint8_t> buf, uint64_t n);
ErrorOr<uint64_t> fileseek(File* f, int64_t offset, int whence);

ErrorOr<void> pipealloc(File** f0, File** f1);
void pipeclose(Pipe* pi, bool writable);
ErrorOr<uint64_t> piperead(Pipe* pi, UserPtr<uint8_t> buf, uint64_t n);
ErrorOr<uint64_t> pipewrite(Pipe* pi, UserPtr<uint8_t> buf, uint64_t n);

}  // namespace fs
