// virtio-blk driver for the modern (virtio 1.x) MMIO transport.
//
// One virtqueue of up to 256 descriptors. A request is a descriptor chain:
// a 16-byte header the device reads, one descriptor per data segment, and a
// status byte the device writes. The submitter sleeps on its request; the
// interrupt handler walks the used ring, frees the chains, records each
// request's status and wakes its owner. Many requests can be outstanding, so
// the device works on the next one while the previous completes.
#include "virtio_blk.h"
#include "../printf.h"
#include "../proc.h"
#include "../spinlock.h"

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

Spinlock vlock("virtio_blk");
int qnum = 0;                 // descriptors in the ring
uint16_t free_head = 0;       // free descriptors form a list through .next
int nfree = 0;
uint16_t used_seen = 0;
bool present = false;
bool read_only = false;
uint64_t capacity = 0;
int max_segments = 1;
bool kick_pending = false;   // requests queued without a notification
BlkStats stats = {};          // (vlock)

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
}

bool virtio_blk_present() { return present; }
uint64_t virtio_blk_capacity() { return capacity; }
int virtio_blk_max_segments() { return max_segments; }

void virtio_blk_kick() {
  SpinlockGuard guard(vlock);
  if (kick_pending) {
    kick_pending = false;
    reg(QueueNotify) = 0;
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
      reg(QueueNotify) = 0;
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
    reg(QueueNotify) = 0;
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
    reg(QueueNotify) = 0;
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
