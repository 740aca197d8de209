// File-system system calls: argument checking, file descriptors, and the
// directory-changing operations (create, link, unlink) built on the inode
// layer.
//
// In this file:
//   argfd, fdalloc, argpath   arguments and the per-process descriptor table
//   create                    a new inode linked under its parent (open, mkdir, mknod)
//   sys_read ... sys_pipe     one function per system call
//
// Rules: each call that may modify the disk runs inside one fs::Transaction
// (also those that only look up a path: dropping the last reference to an
// unlinked inode frees it). Inodes are locked parent before child, the
// order namex uses, so two calls cannot deadlock. A pointer argument is a
// UserPtr, reached only through copy_to_user/copy_from_user.
#include "../param.h"
#include "../drivers/virtio_blk.h"
#include "../mmap.h"
#include "../proc.h"
#include "../string.h"
#include "../syscall.h"
#include "../vm.h"
#include "file.h"
#include "inode.h"
#include "log.h"
#include "page_cache.h"

using namespace fs;

namespace {

struct FdArg {
  int fd;
  File* file;
};

ErrorOr<FdArg> argfd(int n) {
  int64_t fd = arg_int(n);
  Process* p = current_process();
  if (!p || fd < 0 || fd >= NOFILE || !p->ofile[fd]) return Errno::BadFd;
  return FdArg{static_cast<int>(fd), p->ofile[fd]};
}

ErrorOr<int> fdalloc(File* f) {
  Process* p = current_process();
  for (int fd = 0; fd < NOFILE; fd++) {
    if (!p->ofile[fd]) {
      p->ofile[fd] = f;
      return fd;
    }
  }
  return Errno::TooManyFiles;
}

ErrorOr<void> argpath(int n, char* path) {
  TRY(arg_str(n, path, MAXPATH));
  return {};
}

bool is_dot(const char* name) { return strcmp(name, ".") == 0 || strcmp(name, "..") == 0; }

// Creates path as a new inode of the given type and returns it locked. An
// existing regular file or device satisfies a request for a file (open with
// O_CREATE); anything else existing is an error.
ErrorOr<Inode*> create(const char* path, uint16_t type, uint16_t major, uint16_t minor) {
  char name[KAI_NAME_MAX + 1];
  Inode* dp = TRY(nameiparent(path, name));
  ilock(dp);
  if (auto existing = dirlookup(dp, name, nullptr); !existing.is_error()) {
    Inode* ip = existing.value();
    iunlockput(dp);
    ilock(ip);
    if (type == KAI_T_FILE && (ip->type == KAI_T_FILE || ip->type == KAI_T_DEVICE)) return ip;
    Errno e = ip->type == KAI_T_DIR && type == KAI_T_FILE ? Errno::IsDir : Errno::Exists;
    iunlockput(ip);
    return e;
  } else if (existing.error() != Errno::NoEnt) {
    iunlockput(dp);
    return existing.error();
  }

  auto allocated = ialloc(dp->dev, type);
  if (allocated.is_error()) {
    iunlockput(dp);
    return allocated.error();
  }
  Inode* ip = allocated.value();
  ilock(ip);
  ip->major = major;
  ip->minor = minor;
  ip->nlink = 1;
  ErrorOr<void> r = iupdate(ip);
  if (!r.is_error() && type == KAI_T_DIR) {
    r = dirlink(ip, ".", ip->inum);
    if (!r.is_error()) r = dirlink(ip, "..", dp->inum);
  }
  if (!r.is_error()) r = dirlink(dp, name, ip->inum);
  if (r.is_error()) {
    // Undo: with nlink 0 the final iput frees the inode and its blocks.
    ip->nlink = 0;
    MUST(iupdate(ip), "the iupdate above pinned this inode's block in the transaction");
    iunlockput(ip);
    iunlockput(dp);
    return r.error();
  }
  if (type == KAI_T_DIR) {
    dp->nlink++;   // the new directory's ".."
    MUST(iupdate(dp), "dirlink's writei pinned the parent's inode block in the transaction");
  }
  iunlockput(dp);
  return ip;
}

}  // namespace

SyscallResult sys_read() {
  FdArg f = TRY(argfd(0));
  int64_t n = arg_int(2);
  if (n < 0) return Errno::Invalid;
  vm_prefault(arg_raw(1), static_cast<uint64_t>(n), true);   // before the file's lock (mmap.h)
  return fileread(f.file, arg_ptr<uint8_t>(1), static_cast<uint64_t>(n));
}

SyscallResult sys_write() {
  FdArg f = TRY(argfd(0));
  int64_t n = arg_int(2);
  if (n < 0) return Errno::Invalid;
  vm_prefault(arg_raw(1), static_cast<uint64_t>(n), false);
  return filewrite(f.file, arg_ptr<uint8_t>(1), static_cast<uint64_t>(n));
}

SyscallResult sys_close() {
  FdArg f = TRY(argfd(0));
  current_process()->ofile[f.fd] = nullptr;
  fileclose(f.file);
  return uint64_t(0);
}

SyscallResult sys_dup() {
  FdArg f = TRY(argfd(0));
  int fd = TRY(fdalloc(f.file));
  filedup(f.file);
  return static_cast<uint64_t>(fd);
}

SyscallResult sys_fstat() {
  FdArg f = TRY(argfd(0));
  TRY(filestat(f.file, arg_ptr<kai_stat>(1)));
  return uint64_t(0);
}

SyscallResult sys_lseek() {
  FdArg f = TRY(argfd(0));
  return fileseek(f.file, arg_int(1), static_cast<int>(arg_int(2)));
}

SyscallResult sys_open() {
  char path[MAXPATH];
  TRY(argpath(0, path));
  int64_t flags = arg_int(1);
  int acc = static_cast<int>(flags & 3);
  if (acc == 3) return Errno::Invalid;
  bool want_write = acc == KAI_O_WRONLY || acc == KAI_O_RDWR;

  Transaction tx;
  if (flags & (KAI_O_CREATE | KAI_O_TRUNC)) TRY(log_writable());
  Inode* ip;
  if (flags & KAI_O_CREATE) {
    ip = TRY(create(path, KAI_T_FILE, 0, 0));
  } else {
    ip = TRY(namei(path));
    ilock(ip);
  }
  Errno e{};
  if (ip->type == 0) e = Errno::IO;                                  // corrupt
  else if (ip->type == KAI_T_DIR && (want_write || (flags & KAI_O_TRUNC))) e = Errno::IsDir;
  else if (ip->type == KAI_T_DEVICE && ip->major >= NDEV) e = Errno::NoDevice;
  // A loaded model's file (the AI service's weights are its cached pages):
  // refused for writing, as Linux refuses a running program (ETXTBSY).
  else if ((want_write || (flags & KAI_O_TRUNC)) && page_cache_file_pinned(ip)) e = Errno::Busy;
  if (e != Errno{}) {
    iunlockput(ip);
    return e;
  }
  File* f = filealloc();
  if (!f) {
    iunlockput(ip);
    return Errno::FileTable;
  }
  auto fd = fdalloc(f);
  if (fd.is_error()) {
    fileclose(f);
    iunlockput(ip);
    return fd.error();
  }
  if (ip->type == KAI_T_DEVICE) {
    f->kind = File::Kind::Device;
    f->major = ip->major;
  } else {
    f->kind = File::Kind::Inode;
  }
  f->ip = ip;
  f->off = 0;
  f->readable = acc != KAI_O_WRONLY;
  f->writable = want_write;
  f->append = (flags & KAI_O_APPEND) != 0;
  if ((flags & KAI_O_TRUNC) && ip->type == KAI_T_FILE && want_write) itrunc(ip);
  iunlock(ip);
  return static_cast<uint64_t>(fd.value());
}

SyscallResult sys_mkdir() {
  char path[MAXPATH];
  TRY(argpath(0, path));
  Transaction tx;
  TRY(log_writable());
  Inode* ip = TRY(create(path, KAI_T_DIR, 0, 0));
  iunlockput(ip);
  return uint64_t(0);
}

SyscallResult sys_mknod() {
  char path[MAXPATH];
  TRY(argpath(0, path));
  int64_t major = arg_int(1), minor = arg_int(2);
  if (major < 0 || major >= NDEV || minor < 0 || minor > 0xffff) return Errno::Invalid;
  Transaction tx;
  TRY(log_writable());
  Inode* ip = TRY(create(path, KAI_T_DEVICE, static_cast<uint16_t>(major), static_cast<uint16_t>(minor)));
  if (ip->type != KAI_T_DEVICE) {   // an existing regular file
    iunlockput(ip);
    return Errno::Exists;
  }
  iunlockput(ip);
  return uint64_t(0);
}

SyscallResult sys_chdir() {
  char path[MAXPATH];
  TRY(argpath(0, path));
  Process* p = current_process();
  Transaction tx;
  Inode* ip = TRY(namei(path));
  ilock(ip);
  if (ip->type != KAI_T_DIR) {
    iunlockput(ip);
    return Errno::NotDir;
  }
  iunlock(ip);
  if (p->cwd) iput(p->cwd);
  p->cwd = ip;
  return uint64_t(0);
}

SyscallResult sys_stat() {
  char path[MAXPATH];
  TRY(argpath(0, path));
  kai_stat st{};
  {
    Transaction tx;
    Inode* ip = TRY(namei(path));
    ilock(ip);
    stati(ip, &st);
    iunlockput(ip);
  }
  TRY(copy_to_user(arg_ptr<kai_stat>(1), &st));
  return uint64_t(0);
}

SyscallResult sys_statfs() {
  kai_statfs st{};
  fs_statfs(&st);
  BlkStats disk = virtio_blk_stats();
  st.disk_reads = disk.reads;
  st.disk_read_bytes = disk.read_bytes;
  st.disk_writes = disk.writes;
  st.disk_write_bytes = disk.write_bytes;
  st.disk_clock_bytes_per_second = disk.clock_bytes_per_second;
  st.disk_clock_iops = disk.clock_iops;
  st.disk_clock_stalls = disk.clock_stalls;
  st.disk_clock_stolen_ns = disk.clock_stolen_ns;
  TRY(copy_to_user(arg_ptr<kai_statfs>(0), &st));
  return uint64_t(0);
}

SyscallResult sys_link() {
  char oldpath[MAXPATH], newpath[MAXPATH], name[KAI_NAME_MAX + 1];
  TRY(argpath(0, oldpath));
  TRY(argpath(1, newpath));
  Transaction tx;
  TRY(log_writable());
  Inode* ip = TRY(namei(oldpath));
  ilock(ip);
  if (ip->type == KAI_T_DIR || ip->type == 0) {
    Errno e = ip->type == 0 ? Errno::IO : Errno::Perm;   // corrupt, or a directory
    iunlockput(ip);
    return e;
  }
  if (ip->nlink == 0xffff) {
    iunlockput(ip);
    return Errno::TooManyLinks;
  }
  ip->nlink++;
  // Written before the new entry exists: a link count too low on disk would
  // let an unlink free the inode while a name still points at it.
  if (auto r = iupdate(ip); r.is_error()) {
    ip->nlink--;
    iunlockput(ip);
    return r.error();
  }
  iunlock(ip);

  ErrorOr<void> r;
  auto dp = nameiparent(newpath, name);
  if (dp.is_error()) {
    r = dp.error();
  } else {
    ilock(dp.value());
    if (dp.value()->dev != ip->dev) r = Errno::CrossDevice;
    else r = dirlink(dp.value(), name, ip->inum);
    iunlockput(dp.value());
  }
  if (r.is_error()) {
    ilock(ip);
    ip->nlink--;
    MUST(iupdate(ip), "the nlink++ update above pinned this inode's block in the transaction");
    iunlockput(ip);
    return r.error();
  }
  iput(ip);
  return uint64_t(0);
}

SyscallResult sys_unlink() {
  char path[MAXPATH], name[KAI_NAME_MAX + 1];
  TRY(argpath(0, path));
  Transaction tx;
  TRY(log_writable());
  Inode* dp = TRY(nameiparent(path, name));
  ilock(dp);
  if (is_dot(name)) {
    iunlockput(dp);
    return Errno::Invalid;
  }
  uint64_t off = 0;
  auto found = dirlookup(dp, name, &off);
  if (found.is_error()) {
    iunlockput(dp);
    return found.error();
  }
  Inode* ip = found.value();
  ilock(ip);
  Errno e{};
  if (ip->nlink < 1 || ip->type == 0) {
    e = Errno::IO;   // corrupt
  } else if (ip->type == KAI_T_DIR) {
    auto empty = dir_is_empty(ip);
    if (empty.is_error()) e = empty.error();
    else if (!empty.value()) e = Errno::NotEmpty;
  }
  if (e == Errno{}) {
    kai_dirent de{};
    auto w = writei(dp, false, reinterpret_cast<uint64_t>(&de), off, sizeof(de));
    if (w.is_error()) e = w.error();
  }
  if (e != Errno{}) {
    iunlockput(ip);
    iunlockput(dp);
    return e;
  }
  if (ip->type == KAI_T_DIR) {
    dp->nlink--;   // its ".." is gone
    MUST(iupdate(dp), "the writei that cleared the entry pinned the parent's inode block");
  }
  iunlockput(dp);
  ip->nlink--;
  MUST(iupdate(ip), "the entry is gone; a link count left too high on disk only leaks the inode");
  iunlockput(ip);
  return uint64_t(0);
}

SyscallResult sys_pipe() {
  UserPtr<int> fdarray = arg_ptr<int>(0);
  File *rf, *wf;
  TRY(pipealloc(&rf, &wf));
  Process* p = current_process();
  auto fd0 = fdalloc(rf);
  if (fd0.is_error()) {
    fileclose(rf);
    fileclose(wf);
    return fd0.error();
  }
  auto fd1 = fdalloc(wf);
  if (fd1.is_error()) {
    p->ofile[fd0.value()] = nullptr;
    fileclose(rf);
    fileclose(wf);
    return fd1.error();
  }
  int fds[2] = {fd0.value(), fd1.value()};
  if (auto r = copy_to_user(fdarray, fds, 2); r.is_error()) {
    p->ofile[fds[0]] = nullptr;
    p->ofile[fds[1]] = nullptr;
    fileclose(rf);
    fileclose(wf);
    return r.error();
  }
  return uint64_t(0);
}
