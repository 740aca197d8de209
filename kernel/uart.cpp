// 16550A UART at 0x10000000 (QEMU virt). Output goes through a ring buffer
// drained by the transmit-holding-register-empty interrupt; kprintf bypasses
// the ring and polls so that a panic always gets out.
#include <stdint.h>
#include "console.h"
#include "memlayout.h"
#include "proc.h"
#include "spinlock.h"

extern volatile bool g_panicked;

namespace {

constexpr int RHR = 0, THR = 0, IER = 1, FCR = 2, ISR = 2, LCR = 3, LSR = 5;
constexpr uint8_t IER_RX = 1 << 0, IER_TX = 1 << 1;
constexpr uint8_t FCR_ENABLE = 1 << 0, FCR_CLEAR = 3 << 1;
constexpr uint8_t LCR_8BIT = 3, LCR_DLAB = 1 << 7;
constexpr uint8_t LSR_RX_READY = 1 << 0, LSR_TX_IDLE = 1 << 5;

volatile uint8_t* reg(int r) { return reinterpret_cast<volatile uint8_t*>(UART0 + r); }

constexpr uint64_t TX_SIZE = 1024;
Spinlock tx_lock{"uart"};
char tx_buf[TX_SIZE];
uint64_t tx_w = 0, tx_r = 0;   // monotonically increasing; index modulo TX_SIZE

// Moves queued bytes into the UART while it can take them. tx_lock held.
void start_tx() {
  while (tx_w != tx_r && (*reg(LSR) & LSR_TX_IDLE)) {
    *reg(THR) = tx_buf[tx_r % TX_SIZE];
    tx_r++;
    wakeup(&tx_r);
  }
}

}  // namespace

void uart_init() {
  *reg(IER) = 0;
  *reg(LCR) = LCR_DLAB;   // set the baud divisor (ignored by QEMU, kept for real 16550s)
  *reg(0) = 0x03;
  *reg(1) = 0x00;
  *reg(LCR) = LCR_8BIT;
  *reg(FCR) = FCR_ENABLE | FCR_CLEAR;
  *reg(IER) = IER_RX | IER_TX;
}

void uart_putc_sync(char c) {
  push_interrupts_off();
  while ((*reg(LSR) & LSR_TX_IDLE) == 0) {
  }
  *reg(THR) = c;
  pop_interrupts_off();
}

void uart_putc(char c) {
  if (g_panicked) {
    for (;;) asm volatile("wfi");
  }
  SpinlockGuard guard(tx_lock);
  while (tx_w - tx_r >= TX_SIZE) sleep(&tx_r, tx_lock);
  tx_buf[tx_w % TX_SIZE] = c;
  tx_w++;
  start_tx();
}

void uart_sync_begin() {
  tx_lock.acquire();
  while (tx_w != tx_r) {
    while ((*reg(LSR) & LSR_TX_IDLE) == 0) {
    }
    *reg(THR) = tx_buf[tx_r % TX_SIZE];
    tx_r++;
  }
  wakeup(&tx_r);
}

void uart_sync_end() { tx_lock.release(); }

void uart_flush() {
  for (;;) {
    {
      SpinlockGuard guard(tx_lock);
      if (tx_w == tx_r) break;
      start_tx();
    }
  }
  while ((*reg(LSR) & LSR_TX_IDLE) == 0) {
  }
}

void uart_interrupt() {
  while (*reg(LSR) & LSR_RX_READY) console_input(*reg(RHR));
  (void)*reg(ISR);   // acknowledges a THR-empty interrupt
  SpinlockGuard guard(tx_lock);
  start_tx();
}
