// File-system types shared by the kernel and user programs.
#pragma once
#include <stdint.h>

// open() flags (xv6's values).
#define KAI_O_RDONLY  0x000
#define KAI_O_WRONLY  0x001
#define KAI_O_RDWR    0x002
#define KAI_O_CREATE  0x200
#define KAI_O_TRUNC   0x400
#define KAI_O_APPEND  0x800

// lseek() whence.
#define KAI_SEEK_SET 0
#define KAI_SEEK_CUR 1
#define KAI_SEEK_END 2

// Inode types, as reported by stat().
#define KAI_T_DIR    1
#define KAI_T_FILE   2
#define KAI_T_DEVICE 3

#define KAI_NAME_MAX 59     // longest name of one path component
#define KAI_PATH_MAX 256    // longest path passed to a system call, with its NUL

struct kai_stat {
  uint32_t dev;     // device number of the file system
  uint32_t ino;     // inode number
  uint16_t type;    // KAI_T_*
  uint16_t nlink;   // number of directory entries naming it
  uint32_t pad;
  uint64_t size;    // bytes
};

// read() on a directory returns a stream of these (inum 0 = free slot).
// This is also the on-disk directory entry: 64 bytes.
struct kai_dirent {
  uint32_t inum;
  char name[KAI_NAME_MAX + 1];
};

struct kai_statfs {
  uint64_t block_size;
  uint64_t total_blocks;
  uint64_t free_blocks;
  uint64_t total_inodes;
  uint64_t free_inodes;
  // The disk device's requests since boot (every reader and writer: the
  // page cache, the large-read path, the buffer cache, the log). Bytes per
  // request tell whether big reads reach the disk in big requests.
  uint64_t disk_reads;
  uint64_t disk_read_bytes;
  uint64_t disk_writes;
  uint64_t disk_write_bytes;
  // The disk clock (boot option disk.clock=BYTES_PER_SECOND,IOPS; 0 when
  // off): the model, the stalls spent waiting for the host, and the virtual
  // time they took, hidden from the guest's clock (docs/experiments.md,
  // "Exact mode").
  uint64_t disk_clock_bytes_per_second;
  uint64_t disk_clock_iops;
  uint64_t disk_clock_stalls;
  uint64_t disk_clock_stolen_ns;
};

// Pipe writes of at most this many bytes are atomic: they never interleave
// with other writers' data.
#define KAI_PIPE_BUF 512

// Device major numbers for mknod().
#define KAI_DEV_CONSOLE 1
