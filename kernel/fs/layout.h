// kai's on-disk format (docs/fs.md has the picture). Everything is
// little-endian, which is what RISC-V is, so the structs are read in place.
// tools/mkfsimg.py writes the same format: change both together.
#pragma once
#include <stdint.h>
#include <kai/fs_abi.h>

namespace fs {

constexpr uint32_t BSIZE = 4096;               // block size
constexpr uint32_t SECTORS_PER_BLOCK = BSIZE / 512;
constexpr uint32_t FS_MAGIC = 0x5346414B;       // "KAFS"
constexpr uint32_t FS_VERSION = 1;
constexpr uint32_t SUPER_BLOCK = 1;             // block 0 is left for a boot loader
constexpr uint32_t ROOT_INO = 1;                // inode 0 means "no inode"

constexpr uint32_t NDIRECT = 26;
constexpr uint32_t NINDIRECT = BSIZE / sizeof(uint32_t);
constexpr uint64_t MAXFILE_BLOCKS = NDIRECT + NINDIRECT + uint64_t(NINDIRECT) * NINDIRECT;
constexpr uint64_t MAXFILE_BYTES = MAXFILE_BLOCKS * BSIZE;   // a little over 4 GiB

// The kernel refuses images larger than this: one transaction must be able to
// log every bitmap block a file truncation can touch (docs/fs.md).
constexpr uint32_t MAX_BLOCKS = 1u << 23;       // 32 GiB

struct SuperBlock {
  uint32_t magic;
  uint32_t version;
  uint32_t block_size;
  uint32_t nblocks;       // size of the image in blocks
  uint32_t ninodes;
  uint32_t nlog;          // log blocks, header included
  uint32_t logstart;
  uint32_t inodestart;
  uint32_t bmapstart;
  uint32_t datastart;     // first data block
  uint32_t ndirect;       // NDIRECT, to catch format drift
  uint32_t reserved;
};

struct DiskInode {
  uint16_t type;          // 0 free, KAI_T_DIR, KAI_T_FILE, KAI_T_DEVICE
  uint16_t major;
  uint16_t minor;
  uint16_t nlink;
  uint64_t size;
  uint32_t addrs[NDIRECT];
  uint32_t indirect;      // block of NINDIRECT block numbers
  uint32_t dindirect;     // block of NINDIRECT indirect-block numbers
};
static_assert(sizeof(DiskInode) == 128);
constexpr uint32_t IPB = BSIZE / sizeof(DiskInode);   // inodes per block
constexpr uint32_t BPB = BSIZE * 8;                   // bitmap bits per block

static_assert(sizeof(kai_dirent) == 64);
constexpr uint32_t DPB = BSIZE / sizeof(kai_dirent);

// Log header (first log block); the logged copies follow it.
struct LogHeader {
  uint32_t n;             // committed blocks; 0 = nothing to replay
  uint32_t checksum;      // FNV-1a of n and block[0..n): a torn header is ignored
  uint32_t block[(BSIZE - 8) / 4];
};
static_assert(sizeof(LogHeader) == BSIZE);

inline uint32_t log_checksum(uint32_t n, const uint32_t* blocks) {
  uint32_t h = 0x811C9DC5u;
  auto mix = [&h](uint32_t w) {
    for (int i = 0; i < 4; i++) h = (h ^ ((w >> (8 * i)) & 0xff)) * 0x01000193u;
  };
  mix(n);
  for (uint32_t i = 0; i < n; i++) mix(blocks[i]);
  return h;
}

}  // namespace fs
