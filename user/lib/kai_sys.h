// System calls of kai, as seen from user space.
//
// Every call returns a value >= 0 on success and -KAI_Exxx on failure (there
// is no global errno): `if (long r = open(...); r < 0) ... strerror(r)`.
// The numbers live in <kai/syscall_numbers.h>; the stubs in syscall.S.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <kai/ai_abi.h>
#include <kai/errno.h>
#include <kai/fs_abi.h>
#include <kai/mem_abi.h>
#include <kai/mman_abi.h>
#include <kai/syscall_numbers.h>

// Short names for the ABI constants (only if nothing else defined them).
#ifndef O_RDONLY
#define O_RDONLY KAI_O_RDONLY
#define O_WRONLY KAI_O_WRONLY
#define O_RDWR   KAI_O_RDWR
#define O_CREATE KAI_O_CREATE
#define O_TRUNC  KAI_O_TRUNC
#define O_APPEND KAI_O_APPEND
#endif
#ifndef SEEK_SET
#define SEEK_SET KAI_SEEK_SET
#define SEEK_CUR KAI_SEEK_CUR
#define SEEK_END KAI_SEEK_END
#endif
#define T_DIR    KAI_T_DIR
#define T_FILE   KAI_T_FILE
#define T_DEVICE KAI_T_DEVICE

extern "C" {

// -- processes
int fork();                                   // child: 0, parent: child's pid
[[noreturn]] void exit(int status);
int wait(int* status);                        // pid of a child that exited; status may be null
int kill(int pid);
int exec(const char* path, const char* const argv[]);  // returns only on error
// exec, but a name without '/' means /bin/NAME (the shell's rule).
int execvp(const char* name, const char* const argv[]);
int getpid();
long sbrk(long increment);                    // old program break, or -errno
int sleep(int ticks);                         // one tick = 10 ms
long uptime();                                // clock_ns() in ticks: agrees with sleep()
uint64_t clock_ns();                          // monotonic nanoseconds
int halt();                                   // powers the machine off
int setfg(int pid);                           // ^C on the console kills pid (0: nobody)
// Sessions: setsid() makes the caller the leader of a new session and
// returns its id (the caller's pid); -KAI_EPERM if the caller already leads
// one. getsid(pid) is pid's session (0: the caller's); fork() inherits it.
int setsid();
int getsid(int pid);

// -- files
int open(const char* path, int flags);        // KAI_O_* flags
long read(int fd, void* buf, size_t n);
long write(int fd, const void* buf, size_t n);
int close(int fd);
int dup(int fd);
int pipe(int fds[2]);                         // fds[0] read end, fds[1] write end
long lseek(int fd, long offset, int whence);  // new offset
int fstat(int fd, struct kai_stat* st);
int stat(const char* path, struct kai_stat* st);
int chdir(const char* path);
int mkdir(const char* path);
int mknod(const char* path, int major, int minor);
int link(const char* oldpath, const char* newpath);
int unlink(const char* path);
int statfs(struct kai_statfs* st);
// Free and total physical pages and the memory policy's sizes (<kai/mem_abi.h>).
int meminfo(struct kai_meminfo* info);
// Maps a file (or, with KAI_MAP_ANONYMOUS, zero pages) into memory
// (<kai/mman_abi.h>, docs/virtual-memory.md). Returns the address,
// or -errno cast to a pointer: test with mmap_failed().
void* mmap(void* addr, unsigned long len, int prot, int flags, int fd, long offset);
int munmap(void* addr, unsigned long len);
int madvise(void* addr, unsigned long len, int advice);
// Writes the stores of shared writable maps in [addr, addr + len) back to
// their files (MS_SYNC, MS_ASYNC, MS_INVALIDATE).
int msync(void* addr, unsigned long len, int flags);
// Evicts every page-cache page nobody maps; returns the pages freed.
long dropcaches(void);
// This process's page-fault counters.
int vmstat(struct kai_vmstat* st);
#define PROT_READ KAI_PROT_READ
#define PROT_WRITE KAI_PROT_WRITE
#define MAP_SHARED KAI_MAP_SHARED
#define MAP_PRIVATE KAI_MAP_PRIVATE
#define MAP_ANONYMOUS KAI_MAP_ANONYMOUS
#define MAP_POPULATE KAI_MAP_POPULATE
#define MADV_NORMAL KAI_MADV_NORMAL
#define MADV_RANDOM KAI_MADV_RANDOM
#define MADV_SEQUENTIAL KAI_MADV_SEQUENTIAL
#define MADV_WILLNEED KAI_MADV_WILLNEED
#define MADV_DONTNEED KAI_MADV_DONTNEED
#define MS_ASYNC KAI_MS_ASYNC
#define MS_INVALIDATE KAI_MS_INVALIDATE
#define MS_SYNC KAI_MS_SYNC
static inline long mmap_failed(void* p) {
  long v = (long)p;
  return v < 0 && v > -4096 ? v : 0;
}

// -- the AI service (see <kai/ai_abi.h>)
int64_t ai_submit(const struct kai_ai_submit* req);
int ai_wait(int64_t id, uint32_t* out, uint32_t capacity, struct kai_ai_result* res);
int ai_query(int64_t id, struct kai_ai_status* st);
int ai_cancel(int64_t id);
int ai_read(int64_t id, uint32_t from, uint32_t* out, uint32_t capacity, struct kai_ai_status* st,
            uint64_t* times);
int ai_info(struct kai_ai_info* info);
int ai_control(uint32_t cmd, uint64_t arg);   // KAI_AI_CTL_*: init or the console's foreground process only

// A readable name for an error code; accepts KAI_Exxx or -KAI_Exxx.
const char* strerror(long err);

}  // extern "C"
