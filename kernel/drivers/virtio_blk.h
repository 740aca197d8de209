// virtio-blk over virtio-mmio (QEMU virt: 0x10001000, IRQ 1..8) (CONTRACT).
#pragma once
#include <stdint.h>
#include "../error.h"

constexpr uint64_t VIRTIO0_MMIO = 0x10001000;   // the kernel maps 8 slots of 0x1000
constexpr int VIRTIO0_IRQ = 1;

void virtio_blk_init();        // called once by hart 0 during boot
void virtio_blk_interrupt();   // called by the trap handler on VIRTIO0_IRQ
