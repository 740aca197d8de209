// malloc/free on top of sbrk().
//
// The heap is one or more segments of memory obtained with sbrk (normally
// one: a segment grows in place while nobody else moves the break). A
// segment is a row of chunks ended by a 16-byte "epilogue" header that is
// permanently in use:
//
//   chunk:  [prev_size | head][payload ...........]
//            8 bytes   8 bytes  (size - 16 bytes, 16-byte aligned)
//
// head = size | INUSE | PREV_INUSE. prev_size is meaningful only while the
// previous chunk is free (it lets free() find and merge that neighbour in
// O(1)). Free chunks sit in doubly linked lists ("bins") by size: exact
// 16-byte classes below 1 KiB, powers of two above. A bitmap of non-empty
// bins makes "smallest bin that can hold n" a couple of instructions.
//
// free() merges a chunk with free neighbours, so memory is reused; when the
// merged chunk at the very top of the heap is large (>= 256 KiB) its pages
// are given back with sbrk(-n). Requests of hundreds of MiB simply grow the
// heap by that much.
#include "kai.h"

namespace {

constexpr size_t INUSE = 1, PREV_INUSE = 2, FLAGS = 3;
constexpr size_t HDR = 16;                  // chunk header; also the alignment
constexpr size_t MIN_CHUNK = 32;            // header + two list pointers
constexpr size_t PAGE = 4096;
constexpr size_t GROW_MIN = 256 * 1024;     // smallest sbrk growth
constexpr size_t TRIM_MIN = 256 * 1024;     // smallest give-back
constexpr int NBINS = 128;

struct Chunk {
  size_t prev_size;
  size_t head;
  Chunk* next;      // the two list links exist only while the chunk is free
  Chunk* prev;

  size_t size() const { return head & ~FLAGS; }
  bool in_use() const { return head & INUSE; }
  bool prev_in_use() const { return head & PREV_INUSE; }
  Chunk* after() { return reinterpret_cast<Chunk*>(reinterpret_cast<char*>(this) + size()); }
  Chunk* before() { return reinterpret_cast<Chunk*>(reinterpret_cast<char*>(this) - prev_size); }
  void* payload() { return reinterpret_cast<char*>(this) + HDR; }
  static Chunk* of(void* p) { return reinterpret_cast<Chunk*>(static_cast<char*>(p) - HDR); }
};

struct Heap {
  Chunk* bins[NBINS];           // null-terminated doubly linked lists
  uint64_t nonempty[NBINS / 64];
  char* top_end;                // end of the segment that can grow in place
  size_t heap_bytes, used_bytes, free_bytes, free_blocks;
};
Heap H;   // zero-initialised .bss: an empty heap

int bin_index(size_t size) {
  if (size < 1024) return static_cast<int>(size >> 4);
  int log2 = 63 - __builtin_clzl(size);
  int i = 64 + (log2 - 10);
  return i < NBINS ? i : NBINS - 1;
}

void bin_insert(Chunk* c) {
  int i = bin_index(c->size());
  c->prev = nullptr;
  c->next = H.bins[i];
  if (c->next) c->next->prev = c;
  H.bins[i] = c;
  H.nonempty[i / 64] |= 1ULL << (i % 64);
  H.free_bytes += c->size();
  H.free_blocks++;
}

void bin_remove(Chunk* c) {
  int i = bin_index(c->size());
  if (c->prev) c->prev->next = c->next; else H.bins[i] = c->next;
  if (c->next) c->next->prev = c->prev;
  if (H.bins[i] == nullptr) H.nonempty[i / 64] &= ~(1ULL << (i % 64));
  H.free_bytes -= c->size();
  H.free_blocks--;
}

// Marks c free in its own header and in its successor's, without binning it.
void mark_free(Chunk* c) {
  c->head &= ~INUSE;
  Chunk* n = c->after();
  n->head &= ~PREV_INUSE;
  n->prev_size = c->size();
}

void mark_used(Chunk* c) {
  c->head |= INUSE;
  c->after()->head |= PREV_INUSE;
}

// Sets c's size, keeping its flags.
void set_size(Chunk* c, size_t size) { c->head = size | (c->head & FLAGS); }

// Gives the top of the heap back to the kernel if c (free, not yet binned)
// is the last chunk of the growable segment and is large; c shrinks.
void maybe_trim(Chunk* c) {
  Chunk* epi = c->after();
  if (reinterpret_cast<char*>(epi) + HDR != H.top_end) return;
  if (c->size() < TRIM_MIN + MIN_CHUNK) return;
  if (reinterpret_cast<char*>(sbrk(0)) != H.top_end) return;  // someone else moved the break
  size_t release = (c->size() - MIN_CHUNK) & ~(PAGE - 1);
  if (release < TRIM_MIN) return;
  if (sbrk(-static_cast<long>(release)) < 0) return;
  set_size(c, c->size() - release);
  H.top_end -= release;
  H.heap_bytes -= release;
  Chunk* e = c->after();      // new epilogue
  e->head = 0 | INUSE;        // its predecessor c is free
  e->prev_size = c->size();
}

// Merges free chunk c (not binned) with free neighbours, trims the heap top
// (unless the caller just grew it) and bins the result.
void release(Chunk* c, bool trim = true) {
  mark_free(c);
  if (!c->prev_in_use()) {
    Chunk* p = c->before();
    bin_remove(p);
    set_size(p, p->size() + c->size());
    c = p;
  }
  Chunk* n = c->after();
  if (!n->in_use()) {
    bin_remove(n);
    set_size(c, c->size() + n->size());
  }
  mark_free(c);
  if (trim) maybe_trim(c);
  bin_insert(c);
}

// Splits an in-use chunk c so that it keeps `size` bytes; frees the rest.
void split(Chunk* c, size_t size) {
  if (c->size() - size < MIN_CHUNK) return;
  Chunk* rest = reinterpret_cast<Chunk*>(reinterpret_cast<char*>(c) + size);
  rest->head = (c->size() - size) | PREV_INUSE | INUSE;
  set_size(c, size);
  H.used_bytes -= rest->size();
  release(rest);
}

// Adds at least `need` bytes of free space to the heap. False if the
// kernel refuses.
bool grow(size_t need) {
  long cur = sbrk(0);
  if (cur < 0) return false;
  char* brk = reinterpret_cast<char*>(cur);
  size_t pad = (HDR - reinterpret_cast<uintptr_t>(brk) % HDR) % HDR;
  bool contiguous = H.top_end != nullptr && H.top_end == brk;
  // A new segment also needs room for its epilogue.
  size_t want = need + (contiguous ? 0 : HDR) + pad;
  if (want < need) return false;                     // overflow
  size_t amount = want < GROW_MIN ? GROW_MIN : (want + PAGE - 1) & ~(PAGE - 1);
  if (amount < want || static_cast<long>(amount) < 0) return false;
  long r = sbrk(static_cast<long>(amount));
  if (r < 0) return false;
  if (reinterpret_cast<char*>(r) != brk) {           // raced with another sbrk user
    brk = reinterpret_cast<char*>(r);
    pad = (HDR - reinterpret_cast<uintptr_t>(brk) % HDR) % HDR;
    contiguous = false;
    if (amount < need + HDR + pad) { H.heap_bytes += amount; return false; }
  }
  H.heap_bytes += amount;
  Chunk* c;
  size_t size;
  if (contiguous) {
    // The old epilogue becomes the header of the new chunk.
    c = reinterpret_cast<Chunk*>(H.top_end - HDR);
    size = amount;
  } else {
    c = reinterpret_cast<Chunk*>(brk + pad);
    size = (amount - pad - HDR) & ~(HDR - 1);
    c->head = PREV_INUSE;   // nothing before the first chunk of a segment
  }
  c->head = size | (c->head & PREV_INUSE) | INUSE;
  Chunk* epi = c->after();
  epi->head = INUSE | PREV_INUSE;
  H.top_end = reinterpret_cast<char*>(epi) + HDR;
  release(c, false);  // merges with a free chunk that ended the old segment
  return true;
}

// A free chunk of at least `size` bytes, taken out of its bin, or null.
Chunk* take(size_t size) {
  int i = bin_index(size);
  // Large bins mix sizes: search the request's own bin first-fit.
  if (i >= 64)
    for (Chunk* c = H.bins[i]; c; c = c->next)
      if (c->size() >= size) { bin_remove(c); return c; }
  // Any chunk in a bigger bin fits (small bins hold exactly one size).
  int from = i >= 64 ? i + 1 : i;
  for (int w = from / 64; w < NBINS / 64; ++w) {
    uint64_t bits = H.nonempty[w];
    if (w == from / 64) bits &= ~0ULL << (from % 64);
    if (bits) {
      Chunk* c = H.bins[w * 64 + __builtin_ctzl(bits)];
      bin_remove(c);
      return c;
    }
  }
  return nullptr;
}

size_t chunk_size_for(size_t n) {
  if (n > (1ULL << 46)) return 0;        // more than any machine has: fail
  size_t size = (n + HDR + HDR - 1) & ~(HDR - 1);
  return size < MIN_CHUNK ? MIN_CHUNK : size;
}

[[noreturn]] void corrupt(const char* what, void* p) {
  fprintf(2, "malloc: %s (%p)\n", what, p);
  abort();
}

}  // namespace

extern "C" {

void* malloc(size_t n) {
  size_t size = chunk_size_for(n);
  if (size == 0) return nullptr;
  Chunk* c = take(size);
  if (c == nullptr) {
    if (!grow(size)) return nullptr;
    c = take(size);
    if (c == nullptr) return nullptr;
  }
  mark_used(c);
  H.used_bytes += c->size();
  split(c, size);
  return c->payload();
}

void free(void* p) {
  if (p == nullptr) return;
  if (reinterpret_cast<uintptr_t>(p) % HDR) corrupt("free of a misaligned pointer", p);
  Chunk* c = Chunk::of(p);
  if (!c->in_use()) corrupt("double free or free of a non-heap pointer", p);
  H.used_bytes -= c->size();
  release(c);
}

void* calloc(size_t count, size_t size) {
  if (size && count > ~static_cast<size_t>(0) / size) return nullptr;
  size_t n = count * size;
  void* p = malloc(n);
  if (p) memset(p, 0, n);
  return p;
}

void* realloc(void* p, size_t n) {
  if (p == nullptr) return malloc(n);
  if (n == 0) { free(p); return nullptr; }
  size_t size = chunk_size_for(n);
  if (size == 0) return nullptr;
  Chunk* c = Chunk::of(p);
  if (!c->in_use()) corrupt("realloc of a free or non-heap pointer", p);
  if (c->size() < size) {
    // Grow in place into a free successor if that is enough.
    Chunk* next = c->after();
    if (!next->in_use() && c->size() + next->size() >= size) {
      bin_remove(next);
      H.used_bytes += next->size();
      set_size(c, c->size() + next->size());
      mark_used(c);
    } else {
      void* q = malloc(n);
      if (q == nullptr) return nullptr;
      memcpy(q, p, c->size() - HDR);
      free(p);
      return q;
    }
  }
  split(c, size);
  return p;
}

void* aligned_alloc(size_t alignment, size_t n) {
  if (alignment <= HDR) return malloc(n);
  if (alignment & (alignment - 1)) return nullptr;
  if (n > (1ULL << 46)) return nullptr;
  char* raw = static_cast<char*>(malloc(n + alignment + MIN_CHUNK));
  if (raw == nullptr) return nullptr;
  uintptr_t a = (reinterpret_cast<uintptr_t>(raw) + alignment - 1) & ~(alignment - 1);
  while (a != reinterpret_cast<uintptr_t>(raw) && a - reinterpret_cast<uintptr_t>(raw) < MIN_CHUNK)
    a += alignment;
  Chunk* c = Chunk::of(raw);
  if (a != reinterpret_cast<uintptr_t>(raw)) {
    // Cut the misaligned front off as a chunk of its own and free it; the
    // aligned rest starts with a free predecessor (PREV_INUSE clear).
    size_t lead = a - reinterpret_cast<uintptr_t>(raw);
    Chunk* rest = Chunk::of(reinterpret_cast<void*>(a));
    rest->head = (c->size() - lead) | INUSE;
    set_size(c, lead);
    H.used_bytes -= lead;
    release(c);
    c = rest;
  }
  split(c, chunk_size_for(n));
  return c->payload();
}

size_t malloc_usable_size(void* p) { return p ? Chunk::of(p)->size() - HDR : 0; }

void malloc_stats(struct kai_heap_stats* out) {
  out->heap_bytes = H.heap_bytes;
  out->used_bytes = H.used_bytes;
  out->free_bytes = H.free_bytes;
  out->free_blocks = H.free_blocks;
}

}  // extern "C"
