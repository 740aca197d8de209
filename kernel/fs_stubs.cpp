// TEMPORARY weak stand-ins for the file system and virtio driver (owned by
// kernel/fs/ and kernel/drivers/) so the kernel core links and boots before
// they exist. Any real definition overrides these; delete this file once
// the file system is complete.
#include "drivers/virtio_blk.h"
#include "fs/fs.h"
#include "syscall.h"

#define WEAK __attribute__((weak))

namespace fs {
WEAK ErrorOr<void> init(int) { return Errno::NoDevice; }
WEAK void begin_op() {}
WEAK void end_op() {}
WEAK ErrorOr<Inode*> namei(const char*) { return Errno::NoEnt; }
WEAK void ilock(Inode*) {}
WEAK void iunlock(Inode*) {}
WEAK void iput(Inode*) {}
WEAK void iunlockput(Inode*) {}
WEAK Inode* idup(Inode* ip) { return ip; }
WEAK ErrorOr<uint64_t> readi(Inode*, bool, uint64_t, uint64_t, uint64_t) { return Errno::IO; }
WEAK uint16_t inode_type(Inode*) { return 0; }
WEAK uint64_t inode_size(Inode*) { return 0; }
WEAK File* filedup(File* f) { return f; }
WEAK void fileclose(File*) {}
}  // namespace fs

WEAK void virtio_blk_init() {}
WEAK void virtio_blk_interrupt() {}

WEAK SyscallResult sys_pipe() { return Errno::NoSys; }
WEAK SyscallResult sys_read() { return Errno::NoSys; }
WEAK SyscallResult sys_fstat() { return Errno::NoSys; }
WEAK SyscallResult sys_chdir() { return Errno::NoSys; }
WEAK SyscallResult sys_dup() { return Errno::NoSys; }
WEAK SyscallResult sys_open() { return Errno::NoSys; }
WEAK SyscallResult sys_write() { return Errno::NoSys; }
WEAK SyscallResult sys_mknod() { return Errno::NoSys; }
WEAK SyscallResult sys_unlink() { return Errno::NoSys; }
WEAK SyscallResult sys_link() { return Errno::NoSys; }
WEAK SyscallResult sys_mkdir() { return Errno::NoSys; }
WEAK SyscallResult sys_close() { return Errno::NoSys; }
WEAK SyscallResult sys_lseek() { return Errno::NoSys; }
WEAK SyscallResult sys_stat() { return Errno::NoSys; }
WEAK SyscallResult sys_statfs() { return Errno::NoSys; }
