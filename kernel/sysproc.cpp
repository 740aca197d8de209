// Process-related system calls. Every pointer argument arrives as a
// UserPtr (user_ptr.h) and is reached only through copy_from_user /
// copy_to_user, which check it against the caller's page table.
#include "console.h"
#include "fs/page_cache.h"
#include "fs/bio.h"
#include "kalloc.h"
#include "mem_policy.h"
#include "param.h"
#include "process.h"
#include "sbi.h"
#include "string.h"
#include "syscall.h"
#include "trap.h"
#include "user_ptr.h"
#include <kai/mem_abi.h>

SyscallResult sys_fork() { return static_cast<uint64_t>(TRY(fork())); }

SyscallResult sys_exit() { exit(static_cast<int>(arg_int(0))); }

SyscallResult sys_wait() { return static_cast<uint64_t>(TRY(wait(arg_ptr<int>(0)))); }

SyscallResult sys_kill() {
  TRY(kill(static_cast<int>(arg_int(0))));
  return 0;
}

SyscallResult sys_getpid() { return static_cast<uint64_t>(current_process()->pid); }

// Sessions (process.h, new_session): a process and its descendants share one
// until one of them calls setsid(). Nothing in kai checks sessions for
// permission yet; the AI service keeps each session's cached prompt prefixes
// to itself.
SyscallResult sys_setsid() { return static_cast<uint64_t>(TRY(new_session())); }

SyscallResult sys_getsid() { return static_cast<uint64_t>(TRY(session_of(static_cast<int>(arg_int(0))))); }

SyscallResult sys_sbrk() { return TRY(grow_process(arg_int(0))); }

SyscallResult sys_meminfo() {
  kai_meminfo info{};
  info.total_pages = kalloc_total_pages();
  fs::PageCacheStats cache = fs::page_cache_stats();
  info.unused_pages = kalloc_free_pages();
  info.free_pages = info.unused_pages + cache.evictable;
  info.cache_pages = cache.pages;
  info.cache_mapped_pages = cache.pages - cache.evictable;
  info.cache_hits = cache.hits;
  info.cache_misses = cache.misses;
  info.cache_evictions = cache.evictions;
  info.cache_disk_bytes = cache.disk_bytes;
  info.cache_pinned_pages = cache.adopted;
  info.cache_dirty_pages = cache.dirty;
  fs::BufCacheStats blocks = fs::bcache_stats();
  info.bcache_blocks = blocks.blocks;
  info.bcache_disk_reads = blocks.disk_reads;
  info.reserve_pages = mem::reserve_pages();
  info.headroom_pages = mem::headroom_pages();
  info.small_process_pages = mem::SMALL_PROCESS_PAGES;
  TRY(copy_to_user(arg_ptr<kai_meminfo>(0), &info));
  return uint64_t(0);
}

SyscallResult sys_sleep() {
  int64_t n = arg_int(0);
  if (n < 0) return Errno::Invalid;
  // A deadline on the monotonic clock: any hart's timer interrupt can end
  // the sleep (see clock_interrupt), and uptime() reads the same clock.
  uint64_t deadline = clock_ns() + static_cast<uint64_t>(n) * TICK_NS;
  SpinlockGuard guard(timer_lock);
  while (clock_ns() < deadline) {
    if (current_killed()) return Errno::Interrupted;
    sleep_until_tick();
  }
  return 0;
}

SyscallResult sys_uptime() { return uptime_ticks(); }

SyscallResult sys_clock_ns() { return clock_ns(); }

SyscallResult sys_halt() {
  uart_flush();
  sbi::shutdown();
}

// The console's foreground process is the one ^C kills and the one allowed
// to steer the AI service (ai_control). So not anybody may take it: only
// init, the process holding the console now (the foreground process or an
// ancestor of it, such as the shell that started it), or, when nobody holds
// it, the login shell (a child of init). The console may only go to the
// caller itself or one of its descendants, or to nobody (0). Like Unix's
// tcsetpgrp, which only a member of the terminal's session may call.
SyscallResult sys_setfg() {
  int64_t target = arg_int(0);
  if (target < 0) return Errno::Invalid;
  int me = current_process()->pid;
  int holder = console_foreground();
  bool may = me == 1 || (holder != 0 && is_self_or_descendant(me, holder)) ||
             (holder == 0 && parent_pid(me) == 1);
  if (!may) return Errno::Perm;
  if (target != 0 && !is_self_or_descendant(me, static_cast<int>(target))) return Errno::Perm;
  console_set_foreground(static_cast<int>(target));
  return 0;
}

SyscallResult sys_exec() {
  char path[MAXPATH];
  TRY(arg_str(0, path, sizeof path));
  UserPtr<uint64_t> uargv = arg_ptr<uint64_t>(1);   // a null-terminated array of string pointers
  char* argv[MAXARG + 1] = {};
  ErrorOr<uint64_t> result = Errno::TooBig;
  int argc = 0;
  for (;; argc++) {
    if (argc >= MAXARG) {
      result = Errno::TooBig;
      break;
    }
    uint64_t uarg = 0;
    if (copy_from_user(&uarg, uargv + argc).is_error()) {
      result = Errno::Fault;
      break;
    }
    if (uarg == 0) {
      argv[argc] = nullptr;
      result = exec(path, argv);
      break;
    }
    argv[argc] = static_cast<char*>(mem::take_page(mem::For::Process));
    if (!argv[argc]) {
      result = Errno::NoMem;
      break;
    }
    auto copied = copy_string_from_user(argv[argc], UserPtr<char>(uarg), PAGE_SIZE);
    if (copied.is_error()) {
      argc++;
      result = copied.error() == Errno::NameTooLong ? Errno::TooBig : copied.error();
      break;
    }
  }
  for (int i = 0; i < MAXARG && argv[i]; i++) kfree(argv[i]);
  return result;
}
