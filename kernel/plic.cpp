// Platform-level interrupt controller: routes device IRQs to harts. Each hart
// has an S-mode context (2 * hartid + 1 on QEMU virt) with its own enable bits,
// priority threshold and claim/complete register.
#include <stdint.h>
#include "cpu.h"
#include "memlayout.h"
#include "trap.h"

namespace {

volatile uint32_t* plic_reg(uint64_t off) {
  return reinterpret_cast<volatile uint32_t*>(PLIC_BASE + off);
}
uint64_t s_context() { return 2 * this_cpu_hartid() + 1; }

constexpr int FIRST_VIRTIO_IRQ = 1, LAST_VIRTIO_IRQ = 8;

}  // namespace

void plic_init() {
  for (int irq = FIRST_VIRTIO_IRQ; irq <= LAST_VIRTIO_IRQ; irq++) *plic_reg(4 * irq) = 1;
  *plic_reg(4 * UART0_IRQ) = 1;
}

void plic_inithart() {
  uint32_t mask = 1u << UART0_IRQ;
  for (int irq = FIRST_VIRTIO_IRQ; irq <= LAST_VIRTIO_IRQ; irq++) mask |= 1u << irq;
  *plic_reg(0x2000 + 0x80 * s_context()) = mask;
  *plic_reg(0x200000 + 0x1000 * s_context()) = 0;   // threshold: accept everything
}

int plic_claim() { return static_cast<int>(*plic_reg(0x200004 + 0x1000 * s_context())); }
void plic_complete(int irq) { *plic_reg(0x200004 + 0x1000 * s_context()) = irq; }
