// The page cache (page_cache.h): a hash table of entries over pages, a
// clock for eviction, and the fill that reads a run of missing pages.
//
//   Entry, find, insert, remove    the table (page_lock held)
//   evict_locked                    the clock (page_clock.h) over the table
//   page_cache_get / peek / ...     the entry points
#include "page_cache.h"
#include "page_clock.h"
#include "inode.h"
#include "layout.h"
#include "../kalloc.h"
#include "../mem_policy.h"
#include "../boot.h"
#include "../printf.h"
#include "../spinlock.h"
#include "../string.h"

namespace fs {
namespace {

static_assert(BSIZE == PAGE_SIZE, "one file block is one cached page");

constexpr uint32_t NONE = 0xffffffffu;
// Pages read in one fill at most (one device request of up to 1 MiB).
constexpr uint32_t FILL_MAX = 256;

// One cached page. Invariant: an entry is `used` iff it is on its bucket's
// chain and holds one reference to `page`; a free entry is on the free list.
struct Entry {
  uint32_t dev;
  uint32_t inum;
  uint64_t index;        // file page number
  uint8_t* page;
  uint32_t next;         // bucket chain, or free list
  bool used;
  bool referenced;       // the clock's bit: looked up since the hand last passed
  bool adopted;          // a loaded model's page (page_cache_adopt): counted as pinned
  // Stores through a shared writable map may have made the page newer than
  // the file on the disk (set by the first store's fault, cleared when the
  // page is written back). Invariant: the page differs from the disk only if
  // it is dirty or some process maps it writable; the clock evicts neither.
  bool dirty;

  // May the page go? Only when the cache's reference is the page's only one
  // (no mapping, no reader copying it, no writer writing it back) and it is
  // clean: a dirty page's stores are on no disk yet, and the allocator's
  // reclaim (under a spinlock) cannot write them. The clock, the service's
  // adoption of a cached copy and the stats' `evictable` all ask this.
  bool evictable() const { return kpage_refs(page) == 1 && !dirty; }
};

Spinlock page_lock{"page_cache"};
// The table, allocated once by page_cache_init (its size follows the RAM).
Entry* entries = nullptr;
uint32_t* buckets = nullptr;
uint32_t capacity = 0;
uint32_t nbuckets = 0;        // a power of two
uint32_t free_head = NONE;
PageClock clock;              // the eviction clock's hand
uint64_t used_count = 0;
uint64_t adopted_count = 0;   // entries with `adopted` set
uint64_t dirty_count = 0;     // entries with `dirty` set
uint64_t hits = 0, misses = 0, evictions = 0, disk_bytes = 0;

uint32_t bucket_of(uint32_t dev, uint32_t inum, uint64_t index) {
  uint64_t h = (uint64_t(dev) * 0x9e3779b97f4a7c15ull) ^ (uint64_t(inum) * 0xc2b2ae3d27d4eb4full) ^
               (index * 0x165667b19e3779f9ull);
  h ^= h >> 29;
  return static_cast<uint32_t>(h) & (nbuckets - 1);
}

Entry* find(uint32_t dev, uint32_t inum, uint64_t index) {
  if (!entries) return nullptr;
  for (uint32_t i = buckets[bucket_of(dev, inum, index)]; i != NONE; i = entries[i].next) {
    Entry& e = entries[i];
    if (e.dev == dev && e.inum == inum && e.index == index) return &e;
  }
  return nullptr;
}

void remove(Entry& e) {
  uint32_t self = static_cast<uint32_t>(&e - entries);
  uint32_t* link = &buckets[bucket_of(e.dev, e.inum, e.index)];
  while (*link != self) link = &entries[*link].next;
  *link = e.next;
  e.used = false;
  if (e.adopted) adopted_count--;
  e.adopted = false;
  if (e.dirty) dirty_count--;
  e.dirty = false;
  e.next = free_head;
  free_head = self;
  used_count--;
  kfree(e.page);   // the cache's reference; a mapping may keep the page (detached)
  e.page = nullptr;
}

// The table as the clock sees it (page_clock.h): a page is held when it is
// not Entry::evictable().
struct ClockView {
  uint32_t size() const { return capacity; }
  bool used(uint32_t i) const { return entries[i].used; }
  bool held(uint32_t i) const { return !entries[i].evictable(); }
  bool& referenced(uint32_t i) { return entries[i].referenced; }
  void evict(uint32_t i) {
    remove(entries[i]);
    evictions++;
  }
};

// The clock: frees up to want pages nobody maps (all such pages if all).
uint64_t evict_locked(uint64_t want, bool all) {
  ClockView view;
  return clock.sweep(view, want, all);
}

// Adds page as (ip, index); false if the table is full of pages in use.
bool insert(uint32_t dev, uint32_t inum, uint64_t index, uint8_t* page) {
  if (free_head == NONE && evict_locked(1, false) == 0) return false;
  uint32_t i = free_head;
  free_head = entries[i].next;
  Entry& e = entries[i];
  e = Entry{dev, inum, index, page, NONE, true, true, false, false};
  uint32_t b = bucket_of(dev, inum, index);
  e.next = buckets[b];
  buckets[b] = i;
  used_count++;
  return true;
}

// The files whose pages a loaded model holds (page_cache_pin_file): a
// write or a truncation of one is refused, since writei would change the
// service's weights in place. Invariant: each (dev, inum) at most once, in
// pinned_files[0, n_pinned_files). A model has at most 108 files (100
// layers + 8, lib/llm_config.h): room for four of the largest shape. A file
// that finds no slot is not pinned, so not adopted: the service keeps a
// private copy of it, as before.
struct PinnedFile {
  uint32_t dev;
  uint32_t inum;
};
constexpr uint32_t MAX_PINNED_FILES = 4 * 108;
PinnedFile pinned_files[MAX_PINNED_FILES];
uint32_t n_pinned_files = 0;
// Adoption stops when pinned pages would fill more than this share of the
// table: the rest stays for ordinary file pages (exec, read()), which would
// otherwise find no slot and be read from the disk at every use.
constexpr uint64_t ADOPT_SHARE_NUM = 3, ADOPT_SHARE_DEN = 4;
// mem.share_models=0 on the kernel command line: the service keeps a private
// copy (what kai did before; make vm-lab's cold rows need a cold cache).
bool share_models = true;

int pinned_slot(uint32_t dev, uint32_t inum) {
  for (uint32_t i = 0; i < n_pinned_files; i++)
    if (pinned_files[i].dev == dev && pinned_files[i].inum == inum) return int(i);
  return -1;
}

uint64_t reclaim(uint64_t want, bool all) {
  SpinlockGuard guard(page_lock);
  return entries ? evict_locked(all ? ~0ull : want, all) : 0;
}

}  // namespace

void page_cache_init() {
  // A quarter of the memory at most: the rest stays for processes and the
  // AI service even when the table is full (it then recycles its own pages).
  uint64_t cap = kalloc_total_pages() / 4;
  if (cap > 0x1000000) cap = 0x1000000;
  nbuckets = 1;
  while (nbuckets < cap) nbuckets <<= 1;
  entries = static_cast<Entry*>(kalloc_contiguous(cap * sizeof(Entry)));
  buckets = static_cast<uint32_t*>(kalloc_contiguous(uint64_t(nbuckets) * sizeof(uint32_t)));
  if (!entries || !buckets) panic("page_cache_init: out of memory");
  capacity = static_cast<uint32_t>(cap);
  for (uint32_t b = 0; b < nbuckets; b++) buckets[b] = NONE;
  for (uint32_t i = 0; i < capacity; i++) entries[i].next = i + 1 < capacity ? i + 1 : NONE;
  free_head = 0;
  kalloc_set_reclaimer(reclaim);
  if (bootarg_int(g_boot, "mem.share_models", 1) == 0) {
    share_models = false;
    kprintf("kai: the AI service keeps its own copy of each model (mem.share_models=0)\n");
  }
}

bool page_cache_sharing_models() { return share_models && entries; }

ErrorOr<void> page_cache_pin_file(Inode* ip) {
  SpinlockGuard guard(page_lock);
  if (pinned_slot(ip->dev, ip->inum) >= 0) return {};
  if (n_pinned_files == MAX_PINNED_FILES) return Errno::NoMem;
  pinned_files[n_pinned_files++] = PinnedFile{ip->dev, ip->inum};
  return {};
}

void page_cache_unpin_file(Inode* ip) {
  SpinlockGuard guard(page_lock);
  int i = pinned_slot(ip->dev, ip->inum);
  if (i >= 0) pinned_files[i] = pinned_files[--n_pinned_files];
}

bool page_cache_file_pinned(Inode* ip) {
  SpinlockGuard guard(page_lock);
  return pinned_slot(ip->dev, ip->inum) >= 0;
}

bool page_cache_adopt(Inode* ip, uint64_t index, uint8_t* page) {
  if (!share_models || index * PAGE_SIZE >= ip->size) return false;
  SpinlockGuard guard(page_lock);
  if (!entries || pinned_slot(ip->dev, ip->inum) < 0) return false;
  if (adopted_count >= capacity / ADOPT_SHARE_DEN * ADOPT_SHARE_NUM) return false;
  if (Entry* cached = find(ip->dev, ip->inum, index); cached != nullptr) {
    if (cached->page == page) return true;
    // A page some process maps stays: that page alone exists twice.
    if (!cached->evictable()) return false;
    remove(*cached);   // a cached copy nobody maps: the service's page replaces it
  }
  // The cache's reference: from now on the page has two holders, so the
  // clock (which evicts only pages with one) never takes it. The pin is
  // the count; nothing else marks it.
  kpage_get(page);
  if (!insert(ip->dev, ip->inum, index, page)) {
    kfree(page);
    return false;
  }
  Entry* e = find(ip->dev, ip->inum, index);
  e->adopted = true;
  adopted_count++;
  return true;
}

bool page_cache_wanted(Inode* ip) { return entries && ip->type == KAI_T_FILE; }

uint8_t* page_cache_peek(Inode* ip, uint64_t index) {
  SpinlockGuard guard(page_lock);
  Entry* e = find(ip->dev, ip->inum, index);
  if (!e) return nullptr;
  e->referenced = true;
  kpage_get(e->page);
  return e->page;
}

void page_cache_peek_run(Inode* ip, uint64_t first, uint32_t n, uint32_t want, uint8_t** pages) {
  SpinlockGuard guard(page_lock);
  for (uint32_t i = 0; i < n; i++) {
    Entry* e = (want >> i) & 1 ? find(ip->dev, ip->inum, first + i) : nullptr;
    pages[i] = e ? e->page : nullptr;
    if (!e) continue;
    e->referenced = true;
    kpage_get(e->page);
  }
}

bool page_cache_has(Inode* ip, uint64_t index) {
  SpinlockGuard guard(page_lock);
  return find(ip->dev, ip->inum, index) != nullptr;
}

ErrorOr<uint8_t*> page_cache_get(Inode* ip, uint64_t index, uint32_t ahead, PageFill* fill) {
  uint64_t file_pages = (ip->size + PAGE_SIZE - 1) / PAGE_SIZE;
  if (index >= file_pages) return Errno::Invalid;
  if (ahead < 1) ahead = 1;
  if (ahead > FILL_MAX) ahead = FILL_MAX;
  if (ahead > file_pages - index) ahead = static_cast<uint32_t>(file_pages - index);
  uint32_t count = 1;
  {
    SpinlockGuard guard(page_lock);
    if (Entry* e = find(ip->dev, ip->inum, index)) {
      e->referenced = true;
      kpage_get(e->page);
      hits++;
      if (fill) *fill = PageFill{};
      return e->page;
    }
    misses++;
    // The run to read: up to the next page that is already cached.
    while (count < ahead && !find(ip->dev, ip->inum, index + count)) count++;
  }
  // Pages outside the lock: the allocator may call back to evict.
  uint8_t* pages[FILL_MAX];
  uint32_t got = 0;
  while (got < count) {
    pages[got] = static_cast<uint8_t*>(mem::take_page(mem::For::Cache));
    if (!pages[got]) break;
    got++;
  }
  if (got == 0) return Errno::NoMem;
  auto read = read_file_pages(ip, index, pages, got);
  if (read.is_error()) {
    for (uint32_t i = 0; i < got; i++) kfree(pages[i]);
    return read.error();
  }
  // The bytes of the last page past the end of the file read as zeros.
  uint64_t end = ip->size - index * PAGE_SIZE;
  if (end < uint64_t(got) * PAGE_SIZE) memset(pages[got - 1] + end % PAGE_SIZE, 0, PAGE_SIZE - end % PAGE_SIZE);
  SpinlockGuard guard(page_lock);
  disk_bytes += read.value();
  if (fill) *fill = PageFill{true, read.value()};
  // The caller's reference first: if the table has no room, the page is
  // still good for this one use (an uncached page, freed by its last kfree).
  uint8_t* mine = pages[0];
  kpage_get(mine);
  for (uint32_t i = 0; i < got; i++)
    if (!insert(ip->dev, ip->inum, index + i, pages[i])) kfree(pages[i]);
  return mine;
}

void page_cache_update(Inode* ip, uint64_t index, const uint8_t* block, uint64_t from, uint64_t n) {
  SpinlockGuard guard(page_lock);
  // Only the bytes written: the rest of the page may hold a shared map's
  // stores that the block (read from the disk) does not have yet.
  if (Entry* e = find(ip->dev, ip->inum, index)) memcpy(e->page + from, block + from, n);
}

bool page_cache_mark_dirty(Inode* ip, uint64_t index, const uint8_t* page) {
  SpinlockGuard guard(page_lock);
  Entry* e = find(ip->dev, ip->inum, index);
  if (!e || e->page != page) return false;
  if (!e->dirty) dirty_count++;
  e->dirty = true;
  return true;
}

ErrorOr<void> page_cache_write_back(Inode* ip, uint64_t index, const uint8_t* page) {
  // Clean first: a store that lands while the bytes are copied to the
  // block is then either in the copy or in a page still mapped writable
  // (whose unmap writes it), never lost. The caller's reference keeps the
  // page from the clock meanwhile ("under writeback").
  Entry* e;
  {
    SpinlockGuard guard(page_lock);
    e = find(ip->dev, ip->inum, index);
    if (e && e->page == page && e->dirty) {
      e->dirty = false;
      dirty_count--;
    }
  }
  auto r = write_page_back(ip, index, page);
  if (r.is_error()) page_cache_mark_dirty(ip, index, page);   // still only in memory
  return r;
}

uint8_t* page_cache_take_dirty(Inode* ip, uint64_t index) {
  SpinlockGuard guard(page_lock);
  Entry* e = find(ip->dev, ip->inum, index);
  if (!e || !e->dirty) return nullptr;
  kpage_get(e->page);
  return e->page;
}

void page_cache_drop(Inode* ip, uint64_t first, uint64_t end) {
  SpinlockGuard guard(page_lock);
  if (!entries || used_count == 0) return;
  for (uint64_t i = first; i < end; i++)
    if (Entry* e = find(ip->dev, ip->inum, i)) remove(*e);
}

uint64_t page_cache_evict(uint64_t want, bool all) { return reclaim(want, all); }

uint64_t page_cache_pages() {
  SpinlockGuard guard(page_lock);
  return used_count - adopted_count - dirty_count;   // a loaded model's pages never go, dirty ones not yet
}

PageCacheStats page_cache_stats() {
  SpinlockGuard guard(page_lock);
  PageCacheStats s{used_count, 0, capacity, hits, misses, evictions, disk_bytes, adopted_count, dirty_count};
  for (uint32_t i = 0; i < capacity; i++)
    if (entries[i].used && entries[i].evictable()) s.evictable++;
  return s;
}

}  // namespace fs
