// Compile-time limits of the kernel, gathered so students can find them.
#pragma once
#include <stdint.h>

constexpr int NCPU = 8;             // most harts the kernel will start
constexpr int NPROC = 64;           // process table size (user processes + kernel threads)
constexpr int NOFILE = 16;          // open files per process
constexpr int NFILE = 128;          // open files in the whole system
constexpr int NINODE = 64;          // in-memory inode cache entries
constexpr int NDEV = 4;             // device major numbers
constexpr int MAXARG = 300;         // exec arguments: a 255-token prompt plus options fits
constexpr int MAXPATH = 256;        // longest path, including its NUL
constexpr int ROOTDEV = 1;          // device number of the root file system
constexpr int TICK_HZ = 100;        // timer interrupts per second per hart
constexpr uint64_t TICK_NS = 1000000000 / TICK_HZ;   // one tick in ns (10 ms)
