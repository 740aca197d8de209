// virtio-blk over virtio-mmio (QEMU virt: 0x10001000, IRQ 1..8).
#pragma once
#include <stdint.h>
#include "../error.h"

constexpr uint64_t VIRTIO0_MMIO = 0x10001000;   // the kernel maps 8 slots of 0x1000
constexpr int VIRTIO0_IRQ = 1;

void virtio_blk_init();        // called once by hart 0 during boot
void virtio_blk_interrupt();   // called by the trap handler on VIRTIO0_IRQ

// ---- Block requests, the shape in which the file system reads and writes.
// One request moves a run of 512-byte sectors between the disk and a list of
// physically addressed memory segments (a scatter/gather list), so one large
// read can land straight in a process's scattered pages. Several requests may
// be in flight at once: submit them all, then wait for each.
struct BlkSegment {
  uint64_t addr;   // physical address (== kernel VA: RAM is direct-mapped)
  uint32_t len;    // bytes, a multiple of 512 over the whole request
};

struct BlkRequest {
  uint64_t sector = 0;
  bool write = false;
  const BlkSegment* segs = nullptr;
  int nseg = 0;
  // -- owned by the driver while in flight
  volatile bool done = false;
  uint8_t status = 0;
};

bool virtio_blk_present();
uint64_t virtio_blk_capacity();        // in 512-byte sectors
int virtio_blk_max_segments();         // most segments one request may carry
// Queues a request; sleeps while the ring has too few free descriptors.
// With notify == false the device is not told yet (one virtio_blk_kick()
// after a batch saves a costly trap into the emulator per request).
ErrorOr<void> virtio_blk_submit(BlkRequest* r, bool notify = true);
void virtio_blk_kick();
// Requests submitted since boot, and their bytes (statfs(), `df`); and the
// disk clock's model and stalls (all 0 when it is off).
struct BlkStats {
  uint64_t reads, read_bytes, writes, write_bytes;
  uint64_t clock_bytes_per_second, clock_iops;
  uint64_t clock_stalls, clock_stolen_ns;
};
BlkStats virtio_blk_stats();
// Sleeps until r completes; Errno::IO if the device reported a failure.
ErrorOr<void> virtio_blk_wait(BlkRequest* r);
// submit + wait.
ErrorOr<void> virtio_blk_rw(BlkRequest* r);

// ---- The disk clock (boot option `disk.clock=BYTES_PER_SECOND,IOPS`; for
// exact mode, tools/qemu_run.py --deterministic --disk MODEL passes it).
// Each notification stalls, interrupts off, until the host has done every
// submitted request; the stall is hidden from the guest clock (trap.h,
// guest_time()), and each request is published (done, its owner woken) only
// when the guest clock reaches the time the model (disk_clock.h) gives it.
// The device's interrupts are suppressed: nothing of the host's timing
// reaches the guest.
bool virtio_blk_clocked();
// The earliest due time of a finished, unpublished request (guest clock
// units), or UINT64_MAX. Read lock-free by the timer code (trap.cpp).
uint64_t virtio_blk_next_due();
// The timer interrupt: publish the requests due by `now`.
void virtio_blk_publish_due(uint64_t now);
