// The page cache: file pages kept in memory by (device, inode, page index).
//
// read() copies from these pages, a page fault in a file mapping (vm/mmap.h)
// maps them, and a file read twice is read from the disk once. write() goes
// through the buffer cache and the log as before (writei) and then copies
// the new bytes into the cached page. A store through a shared writable map
// (MAP_SHARED + PROT_WRITE) changes the cached page itself: such a page is
// *dirty* until mmap.cpp writes it back (msync, munmap, exit, exec); every
// other page is a clean copy of the disk and can always be dropped.
//
// The states a cached page can be in (kpage_refs() is its reference count,
// kalloc.h: the cache holds one reference, each page table mapping it one,
// a reader copying from it one while it copies):
//
//   absent     not in the cache: the next access is a miss (a major fault)
//   cached     in the cache, refs == 1: nobody maps it; evictable
//   in use     in the cache, refs > 1: mapped or being copied; not evictable
//   dirty      in the cache, stores through a shared map not yet written
//              back (any refs): never evicted until written back
//   detached   dropped from the cache (its file was truncated or deleted)
//              while still mapped: it lives on for its mappings only, and
//              is freed by the last unmap
//
// Eviction is a clock: each entry has a `referenced` bit, set by every hit;
// the hand clears set bits and evicts the first cached page whose bit is
// already clear. It runs when the allocator cannot meet a request
// (kalloc_set_reclaimer), and when the cache's own table is full. So clean
// file pages never make an allocation fail.
//
// Lock order (outer first): the inode's sleep lock -> the page cache's
// spinlock -> the allocator's spinlock. Fills and updates of an inode's
// pages run with its inode locked (the block map cannot change under them),
// so two fills of the same page cannot race. The cache lock is never held
// across disk I/O or an allocation (the allocator may call back into the
// cache to evict). A process's page table is changed only by the process
// itself (kai processes have one thread), so it needs no lock of its own.
#pragma once
#include <stdint.h>
#include "../error.h"

namespace fs {

struct Inode;

// Sets up the table (sized from the memory) and registers the eviction with
// the allocator; after kalloc_init() and mem::init().
void page_cache_init();

// Should reads of ip go through the cache? Regular files only (directories
// stay on the buffer cache). ip locked.
bool page_cache_wanted(Inode* ip);

// What one page_cache_get did: a miss (a major fault) or not, and how many
// bytes it read from the disk.
struct PageFill {
  bool major = false;
  uint64_t disk_bytes = 0;
};
// The cached page holding file page `index` of ip (index * 4096 < size),
// with one reference for the caller (kfree() drops it). On a miss it reads
// this page and up to ahead - 1 more uncached ones after it in one device
// request (read-ahead / fault-around). ip locked.
ErrorOr<uint8_t*> page_cache_get(Inode* ip, uint64_t index, uint32_t ahead, PageFill* fill);
// The page if it is cached (a reference for the caller), or nullptr: no I/O.
// Needs no inode lock (a lookup under the cache's own lock).
uint8_t* page_cache_peek(Inode* ip, uint64_t index);
// Fault-around's lookup of a run: for each page i of [first, first + n)
// (n <= 32) whose bit is set in `want`, pages[i] = the cached page with a
// reference for the caller (as page_cache_peek), or nullptr; pages whose bit
// is clear get nullptr. One lock for the whole run instead of one a page.
void page_cache_peek_run(Inode* ip, uint64_t first, uint32_t n, uint32_t want, uint8_t** pages);
// Is the page cached? (No reference, no lock needed.)
bool page_cache_has(Inode* ip, uint64_t index);

// writei changed bytes [from, from + n) of file block `index` (its buffer
// now holds `block`): copy them into the cached page, if any. ip locked.
void page_cache_update(Inode* ip, uint64_t index, const uint8_t* block, uint64_t from, uint64_t n);

// Shared writable maps (mmap.h). A store through one reaches the cached page
// itself; these keep the file in step with it.
// page_cache_mark_dirty: `page` (file page index of ip, as mapped) took a
// store. false if it is not the cached page (the table had no room for it:
// the caller writes it back at once). No lock needed but the cache's.
bool page_cache_mark_dirty(Inode* ip, uint64_t index, const uint8_t* page);
// Writes `page` (the caller holds a reference) back to the file, through the
// log, and marks the cached page clean; the file's size does not change.
// ip locked, inside a transaction (at most WRITEBACK_PAGES_PER_TX calls).
ErrorOr<void> page_cache_write_back(Inode* ip, uint64_t index, const uint8_t* page);
constexpr uint32_t WRITEBACK_PAGES_PER_TX = 8;
// The cached page if it is dirty (a reference for the caller), else nullptr.
uint8_t* page_cache_take_dirty(Inode* ip, uint64_t index);
// Drops pages [first, end) of ip (truncation, deletion, a failed write). ip locked.
void page_cache_drop(Inode* ip, uint64_t first, uint64_t end);

// One copy of a model (docs/virtual-memory.md): the AI service reads each
// file of a bundle into its contiguous region, page-aligned, the bytes past
// the end zero, and then enters those pages into the cache as the file's
// pages, so read() and mmap of the bundle use the service's own memory.
//
// page_cache_pin_file: from now on a write to ip, or a truncation, is
// refused (EBUSY; writei would change the service's weights in place).
// Deleting it stays allowed: its pages leave the cache (the service keeps
// them) and itrunc unpins it. ip locked.
ErrorOr<void> page_cache_pin_file(Inode* ip);
void page_cache_unpin_file(Inode* ip);
bool page_cache_file_pinned(Inode* ip);
// Enters `page` (holding file page `index` of the pinned file ip) into the
// cache with one more reference: the cache's. The page then has two holders
// and the clock never evicts it (it evicts pages with one). false (nothing
// done) if sharing is off (mem.share_models=0), ip is not pinned, the page
// is cached and mapped by a process (it stays: that page exists twice), or
// pinned pages already fill 3/4 of the table. ip locked.
bool page_cache_adopt(Inode* ip, uint64_t index, uint8_t* page);
// Does the service share its models' pages (mem.share_models, default 1)?
bool page_cache_sharing_models();

// Evicts up to `want` cached pages (or all it can); returns how many.
uint64_t page_cache_evict(uint64_t want, bool all);

struct PageCacheStats {
  uint64_t pages;        // pages in the cache
  uint64_t evictable;    // of which nobody maps or pins
  uint64_t capacity;     // most pages the table can hold
  uint64_t hits;         // lookups that found the page
  uint64_t misses;       // lookups that had to read it
  uint64_t evictions;
  uint64_t disk_bytes;   // bytes read from the disk into the cache
  uint64_t adopted;      // of `pages`, a loaded model's (pinned while it is loaded)
  uint64_t dirty;        // of `pages`, holding stores not yet written back
};
PageCacheStats page_cache_stats();
// Pages in the cache but a loaded model's: a quick upper bound on what
// eviction can free.
uint64_t page_cache_pages();

}  // namespace fs
