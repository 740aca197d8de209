// Console: the 16550 UART (interrupt-driven, buffered output) plus line
// editing on input. Registered as device KAI_DEV_CONSOLE in fs::devsw.
#pragma once
#include <stdint.h>

void uart_init();
void uart_putc(char c);        // buffered, may sleep (process context)
void uart_putc_sync(char c);   // polling, for kprintf and echo
void uart_interrupt();         // PLIC IRQ 10
void uart_flush();             // wait (polling) until queued output is sent
// Bracket a kernel message: begin sends the queued user output first and
// holds the transmit lock until end, so a kprintf line reaches the console
// whole, never spliced into the middle of a program's output.
void uart_sync_begin();
void uart_sync_end();

void console_init();           // uart_init + devsw registration
void console_putc_sync(char c);
void console_input(int c);     // a received byte (from uart_interrupt)
// Process that ^C kills (with its descendants); 0 = none.
void console_set_foreground(int pid);
int console_foreground();
