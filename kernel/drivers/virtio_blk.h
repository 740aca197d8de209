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
// Requests submitted since boot, and their bytes (statfs(), `df`).
struct BlkStats {
  uint64_t reads, read_bytes, writes, write_bytes;
};
BlkStats virtio_blk_stats();
// Sleeps until r completes; Errno::IO if the device reported a failure.
ErrorOr<void> virtio_blk_wait(BlkRequest* r);
// submit + wait.
ErrorOr<void> virtio_blk_rw(BlkRequest* r);
