// virtio-blk driver for the modern (virtio 1.x) MMIO transport.
//
// One virtqueue of up to 256 descriptors. A request is a descriptor chain:
// a 16-byte header the device reads, one descriptor per data segment, and a
// status byte the device writes. The submitter sleeps on its request; the
// interrupt handler walks the used ring, frees the chains, records each
// request's status and wakes its owner. Many requests can be outstanding, so
// the device works on the next one while the previous completes.
#include "virtio_blk.h"
#include "disk_clock.h"
#include "../boot.h"
#include "../fdt.h"
#include "../printf.h"
#include "../proc.h"
#include "../riscv.h"
#include "../spinlock.h"
#include "../trap.h"

namespace {

// MMIO register offsets (virtio 1.2, 4.2.2).
enum Reg : uint32_t {
  MagicValue = 0x000, Version = 0x004, DeviceID = 0x008, DeviceFeatures = 0x010,
  DeviceFeaturesSel = 0x014, DriverFeatures = 0x020, DriverFeaturesSel = 0x024,
  QueueSel = 0x030, QueueNumMax = 0x034, QueueNum = 0x038, QueueReady = 0x044,
  QueueNotify = 0x050, InterruptStatus = 0x060, InterruptACK = 0x064, Status = 0x070,
  QueueDescLow = 0x080, QueueDescHigh = 0x084, QueueDriverLow = 0x090,
  QueueDriverHigh = 0x094, QueueDeviceLow = 0x0a0, QueueDeviceHigh = 0x0a4,
  Config = 0x100,
};

constexpr uint32_t STATUS_ACKNOWLEDGE = 1, STATUS_DRIVER = 2, STATUS_DRIVER_OK = 4,
                   STATUS_FEATURES_OK = 8, STATUS_FAILED = 128;
constexpr int F_BLK_SEG_MAX = 2, F_BLK_RO = 5, F_VERSION_1 = 32;
constexpr uint16_t DESC_NEXT = 1, DESC_WRITE = 2;
constexpr uint16_t AVAIL_F_NO_INTERRUPT = 1;   // honoured without EVENT_IDX (we never offer it)
constexpr uint32_t BLK_T_IN = 0, BLK_T_OUT = 1;

constexpr int QMAX = 256;

struct Desc { uint64_t addr; uint32_t len; uint16_t flags; uint16_t next; };
struct Avail { uint16_t flags; uint16_t idx; uint16_t ring[QMAX]; uint16_t used_event; };
struct UsedElem { uint32_t id; uint32_t len; };
struct Used { uint16_t flags; uint16_t idx; UsedElem ring[QMAX]; uint16_t avail_event; };
struct ReqHeader { uint32_t type; uint32_t reserved; uint64_t sector; };

alignas(4096) Desc desc[QMAX];
alignas(4096) Avail avail;
alignas(4096) Used used;
// Per head descriptor: the request header and status byte the device reads/writes.
ReqHeader headers[QMAX];
volatile uint8_t statuses[QMAX];
BlkRequest* owner[QMAX];
uint32_t request_bytes[QMAX];   // per head descriptor: the data it moves (the disk clock)

Spinlock vlock("virtio_blk");
int qnum = 0;                 // descriptors in the ring
uint16_t free_head = 0;       // free descriptors form a list through .next
int nfree = 0;
uint16_t used_seen = 0;
uint16_t avail_scheduled = 0;   // the disk clock: requests given a due time, by avail index
bool present = false;
bool read_only = false;
uint64_t capacity = 0;
int max_segments = 1;
bool kick_pending = false;   // requests queued without a notification
BlkStats stats = {};          // (vlock)

// ---- The disk clock (virtio_blk.h). Set once at boot, then (vlock).
bool clocked = false;
DiskClock disk_clock({1, 1}, 1);
// Clock units per nanosecond's reciprocal: ns (= instructions in exact
// mode) per unit of the time CSR, when it is a whole number small enough
// for the stall's alignment (align_stall()); 0 otherwise.
uint64_t ns_per_unit = 0;
// Finished requests waiting for their due time, in due order (one FIFO
// device: due times never decrease). At most one per head descriptor.
struct DueRequest {
  BlkRequest* r;
  uint8_t status;
  uint64_t due;
};
DueRequest due_ring[QMAX];
int due_first = 0, due_count = 0;
uint64_t next_due = UINT64_MAX;   // due_ring's first due time (atomics: trap.cpp reads it)

inline volatile uint32_t& reg(uint32_t off) {
  return *reinterpret_cast<volatile uint32_t*>(VIRTIO0_MMIO + off);
}

uint16_t alloc_desc() {
  uint16_t d = free_head;
  free_head = desc[d].next;
  nfree--;
  return d;
}

void free_chain(uint16_t head) {
  for (;;) {
    uint16_t flags = desc[head].flags;
    uint16_t next = desc[head].next;
    desc[head].next = free_head;
    desc[head].flags = 0;
    free_head = head;
    nfree++;
    if (!(flags & DESC_NEXT)) break;
    head = next;
  }
}

void fail(const char* why) {
  reg(Status) = reg(Status) | STATUS_FAILED;
  kprintf("virtio_blk: %s; no disk\n", why);
}

inline uint64_t read_instret() { return KAI_CSR_READ(instret); }

// The stall's end, aligned. In exact mode instret counts instructions (1 ns
// each) and the time CSR counts units of ns_per_unit (100 at QEMU virt's
// 10 MHz) of them. A stall that hid a number of instructions that is not a
// multiple of ns_per_unit would move every later clock reading and tick
// by up to one unit, depending on where the host's completion happened to
// land. So: measure the stall from `i0` in instructions, then run 1 to
// ns_per_unit more `nop`s (a jump into a sled: exactly one instruction
// each) to round it up to a whole number of units. Returns the stall in
// instructions, a multiple of ns_per_unit. The instruction count from the
// instret read to the end is the same whatever the stall's length.
uint64_t align_stall(uint64_t i0, uint64_t unit) {
  uint64_t stall;
  asm volatile(
      ".option push\n.option norvc\n.option norelax\n"
      "  csrr %[s], instret\n"
      "  sub %[s], %[s], %[i0]\n"        // instructions so far
      "  remu t1, %[s], %[u]\n"
      "  sub t1, %[u], t1\n"              // nops to the next whole unit: 1..unit
      "  add %[s], %[s], t1\n"
      "  slli t1, t1, 2\n"
      "  lla t0, 1f\n"
      "  sub t0, t0, t1\n"
      "  jr t0\n"
      "  .rept 128\n  nop\n  .endr\n"
      "1:\n"
      ".option pop\n"
      : [s] "=&r"(stall)
      : [i0] "r"(i0), [u] "r"(unit)
      : "t0", "t1", "memory");
  return stall;
}

// Tells the device about new requests (vlock held). With the disk clock:
// waits for the host to finish them all, hides that wait, and queues each
// finished request for publication at its modelled due time.
void notify_device() {
  if (!clocked) {
    reg(QueueNotify) = 0;
    return;
  }
  uint64_t t0 = riscv::read_time();
  uint64_t i0 = read_instret();
  reg(QueueNotify) = 0;
  // QEMU's vCPU thread runs guest code without its big lock, so the host's
  // I/O thread completes the requests meanwhile (docs/notebook/2026-12-06-disk-clock.md).
  while (*static_cast<volatile uint16_t*>(&used.idx) != avail.idx) {
  }
  __sync_synchronize();
  uint64_t units;
  if (ns_per_unit) {
    uint64_t stall = align_stall(i0, ns_per_unit);
    units = stall / ns_per_unit;
    // Real time (no -icount): instret counts host cycles, not the clock's
    // ns: fall back on the time CSR (nothing is exact there anyway).
    uint64_t by_time = riscv::read_time() - t0;
    if (units > by_time + 2 || units + 2 < by_time) units = by_time;
  } else {
    units = riscv::read_time() - t0;
  }
  stats.clock_stalls++;
  stats.clock_stolen_ns += units * 1000000000ull / g_boot.timebase_hz;
  // The requests reach the modelled device now, on the guest clock, and
  // are served in the order they were submitted (the avail ring's), not in
  // the order the host finished them: its thread pool may finish a small
  // request before a big one submitted earlier, differently in every run.
  uint64_t now = riscv::read_time() - stolen_time() - units;
  for (; avail_scheduled != avail.idx; avail_scheduled++) {
    uint16_t head = avail.ring[avail_scheduled % qnum];
    BlkRequest* r = owner[head];
    owner[head] = nullptr;
    uint64_t due = disk_clock.schedule(now, request_bytes[head]);
    due_ring[(due_first + due_count) % QMAX] = {r, statuses[head], due};
    due_count++;
    free_chain(head);
  }
  used_seen = avail.idx;   // every request is used (the spin above); their order does not matter
  __atomic_store_n(&next_due, due_ring[due_first].due, __ATOMIC_RELAXED);
  steal_time(units);   // and re-arms this hart's timer for next_due
  wakeup(&nfree);
}

// `disk.clock=BYTES_PER_SECOND,IOPS` (virtio_blk.h). A bad value is named
// and ignored: the disk then runs at the host's speed, as without it.
void init_disk_clock() {
  char text[64];
  if (!bootarg_str(g_boot, "disk.clock", text, sizeof text)) return;
  DiskModel model;
  if (!parse_disk_model(text, model)) {
    kprintf("virtio_blk: bad disk.clock=%s (want BYTES_PER_SECOND,IOPS, both > 0); disk clock off\n", text);
    return;
  }
  uint64_t hz = g_boot.timebase_hz;
  disk_clock = DiskClock(model, hz);
  ns_per_unit = 1000000000ull % hz == 0 && 1000000000ull / hz <= 128 ? 1000000000ull / hz : 0;
  avail.flags = AVAIL_F_NO_INTERRUPT;
  clocked = true;
  stats.clock_bytes_per_second = model.bytes_per_second;
  stats.clock_iops = model.iops;
  kprintf("virtio_blk: disk clock on: %lu bytes/s, %lu IOPS, in virtual time\n",
          static_cast<unsigned long>(model.bytes_per_second), static_cast<unsigned long>(model.iops));
}

}  // namespace

void virtio_blk_init() {
  if (reg(MagicValue) != 0x74726976) return fail("no virtio device at slot 0");
  if (reg(Version) != 2) return fail("legacy virtio-mmio (need force-legacy=false)");
  if (reg(DeviceID) != 2) return fail("slot 0 is not a block device");

  reg(Status) = 0;   // reset
  reg(Status) = STATUS_ACKNOWLEDGE;
  reg(Status) = STATUS_ACKNOWLEDGE | STATUS_DRIVER;

  reg(DeviceFeaturesSel) = 0;
  uint32_t lo = reg(DeviceFeatures);
  reg(DeviceFeaturesSel) = 1;
  uint32_t hi = reg(DeviceFeatures);
  if (!(hi & (1u << (F_VERSION_1 - 32)))) return fail("device lacks VIRTIO_F_VERSION_1");
  uint32_t want_lo = lo & ((1u << F_BLK_SEG_MAX) | (1u << F_BLK_RO));
  reg(DriverFeaturesSel) = 0;
  reg(DriverFeatures) = want_lo;
  reg(DriverFeaturesSel) = 1;
  reg(DriverFeatures) = 1u << (F_VERSION_1 - 32);
  reg(Status) = STATUS_ACKNOWLEDGE | STATUS_DRIVER | STATUS_FEATURES_OK;
  if (!(reg(Status) & STATUS_FEATURES_OK)) return fail("device refused our features");

  reg(QueueSel) = 0;
  if (reg(QueueReady)) return fail("queue 0 already in use");
  uint32_t max = reg(QueueNumMax);
  if (max == 0) return fail("queue 0 missing");
  qnum = max < QMAX ? static_cast<int>(max) : QMAX;
  reg(QueueNum) = qnum;
  for (int i = 0; i < qnum; i++) desc[i].next = static_cast<uint16_t>(i + 1);
  free_head = 0;
  nfree = qnum;
  auto addr = [](const void* p) { return reinterpret_cast<uint64_t>(p); };
  reg(QueueDescLow) = static_cast<uint32_t>(addr(desc));
  reg(QueueDescHigh) = static_cast<uint32_t>(addr(desc) >> 32);
  reg(QueueDriverLow) = static_cast<uint32_t>(addr(&avail));
  reg(QueueDriverHigh) = static_cast<uint32_t>(addr(&avail) >> 32);
  reg(QueueDeviceLow) = static_cast<uint32_t>(addr(&used));
  reg(QueueDeviceHigh) = static_cast<uint32_t>(addr(&used) >> 32);
  reg(QueueReady) = 1;

  capacity = static_cast<uint64_t>(reg(Config)) | (static_cast<uint64_t>(reg(Config + 4)) << 32);
  // Two descriptors per request go to the header and status byte; leave room
  // for at least two requests in flight.
  max_segments = qnum / 2 - 2;
  if (want_lo & (1u << F_BLK_SEG_MAX)) {
    uint32_t seg_max = reg(Config + 0x0c);
    if (seg_max >= 1 && static_cast<int>(seg_max) < max_segments) max_segments = static_cast<int>(seg_max);
  }
  read_only = want_lo & (1u << F_BLK_RO);
  reg(Status) = STATUS_ACKNOWLEDGE | STATUS_DRIVER | STATUS_FEATURES_OK | STATUS_DRIVER_OK;
  present = true;
  kprintf("virtio_blk: %lu MiB disk, queue of %d, up to %d segments per request%s\n",
          static_cast<unsigned long>(capacity >> 11), qnum, max_segments, read_only ? ", read-only" : "");
  init_disk_clock();
}

bool virtio_blk_present() { return present; }
uint64_t virtio_blk_capacity() { return capacity; }
int virtio_blk_max_segments() { return max_segments; }

void virtio_blk_kick() {
  SpinlockGuard guard(vlock);
  if (kick_pending) {
    kick_pending = false;
    notify_device();
  }
}

ErrorOr<void> virtio_blk_submit(BlkRequest* r, bool notify) {
  if (!present) return Errno::NoDevice;
  if (r->nseg < 1 || r->nseg > max_segments) return Errno::Invalid;
  uint64_t bytes = 0;
  for (int i = 0; i < r->nseg; i++) bytes += r->segs[i].len;
  if (bytes % 512 || r->sector + bytes / 512 > capacity || r->sector + bytes / 512 < r->sector)
    return Errno::IO;
  if (r->write && read_only) return Errno::Perm;

  SpinlockGuard guard(vlock);
  while (nfree < r->nseg + 2) {
    if (kick_pending) {   // we are about to wait for our own unannounced requests
      kick_pending = false;
      notify_device();
    }
    sleep(&nfree, vlock);
  }
  r->done = false;
  if (r->write) {
    stats.writes++;
    stats.write_bytes += bytes;
  } else {
    stats.reads++;
    stats.read_bytes += bytes;
  }
  uint16_t head = alloc_desc();
  headers[head] = {r->write ? BLK_T_OUT : BLK_T_IN, 0, r->sector};
  statuses[head] = 0xff;
  owner[head] = r;
  request_bytes[head] = static_cast<uint32_t>(bytes);
  desc[head] = {reinterpret_cast<uint64_t>(&headers[head]), sizeof(ReqHeader), DESC_NEXT, 0};
  uint16_t prev = head;
  for (int i = 0; i < r->nseg; i++) {
    uint16_t d = alloc_desc();
    desc[d] = {r->segs[i].addr, r->segs[i].len,
               static_cast<uint16_t>(DESC_NEXT | (r->write ? 0 : DESC_WRITE)), 0};
    desc[prev].next = d;
    prev = d;
  }
  uint16_t st = alloc_desc();
  desc[st] = {reinterpret_cast<uint64_t>(&statuses[head]), 1, DESC_WRITE, 0};
  desc[prev].next = st;

  avail.ring[avail.idx % qnum] = head;
  __sync_synchronize();          // ring entry before the index
  avail.idx = avail.idx + 1;
  __sync_synchronize();          // index before the notification
  if (notify) {
    kick_pending = false;
    notify_device();
  } else {
    kick_pending = true;
  }
  return {};
}

BlkStats virtio_blk_stats() {
  SpinlockGuard guard(vlock);
  return stats;
}

ErrorOr<void> virtio_blk_wait(BlkRequest* r) {
  SpinlockGuard guard(vlock);
  if (kick_pending) {
    kick_pending = false;
    notify_device();
  }
  while (!r->done) sleep(r, vlock);
  if (r->status != 0) {
    kprintf("virtio_blk: %s of sector %lu failed (status %d)\n", r->write ? "write" : "read",
            static_cast<unsigned long>(r->sector), r->status);
    return Errno::IO;
  }
  return {};
}

ErrorOr<void> virtio_blk_rw(BlkRequest* r) {
  TRY(virtio_blk_submit(r));
  return virtio_blk_wait(r);
}

void virtio_blk_interrupt() {
  SpinlockGuard guard(vlock);
  if (clocked) {   // suppressed (AVAIL_F_NO_INTERRUPT): a device that ignores it breaks exactness
    static bool said;
    if (!said) kprintf("virtio_blk: an interrupt despite the disk clock\n");
    said = true;
  }
  reg(InterruptACK) = reg(InterruptStatus) & 3;
  __sync_synchronize();
  while (used_seen != *static_cast<volatile uint16_t*>(&used.idx)) {
    __sync_synchronize();
    uint16_t head = static_cast<uint16_t>(used.ring[used_seen % qnum].id);
    used_seen++;
    if (head >= qnum || !owner[head]) continue;   // a confused device: ignore
    BlkRequest* r = owner[head];
    owner[head] = nullptr;
    r->status = statuses[head];
    free_chain(head);
    r->done = true;
    wakeup(r);
  }
  wakeup(&nfree);
}

bool virtio_blk_clocked() { return clocked; }

uint64_t virtio_blk_next_due() { return __atomic_load_n(&next_due, __ATOMIC_RELAXED); }

void virtio_blk_publish_due(uint64_t now) {
  SpinlockGuard guard(vlock);
  while (due_count > 0 && due_ring[due_first].due <= now) {
    DueRequest d = due_ring[due_first];
    due_first = (due_first + 1) % QMAX;
    due_count--;
    d.r->status = d.status;
    d.r->done = true;
    wakeup(d.r);
  }
  __atomic_store_n(&next_due, due_count ? due_ring[due_first].due : UINT64_MAX, __ATOMIC_RELAXED);
}
