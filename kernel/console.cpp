// Console line discipline: input is collected into a line with editing
// (backspace, ^U kill line, ^D end of file, ^C interrupt the foreground
// process) and handed to readers a line at a time.
#include "console.h"
#include "fs/fs.h"
#include "printf.h"
#include "proc.h"
#include "process.h"
#include "spinlock.h"
#include "vm.h"

namespace {

constexpr int CTRL_C = 'C' - '@', CTRL_D = 'D' - '@', CTRL_P = 'P' - '@', CTRL_U = 'U' - '@';
constexpr int BACKSPACE = 0x08, DEL = 0x7f;
// Input typed (or pasted, or sent by a test harness) faster than a reader
// takes it waits here; a byte that finds the buffer full is lost. 256 bytes
// lost the end of a 270-character command line sent at once; 4 KiB holds
// the longest line the shell accepts (sh's MAX_LINE) with room to spare.
constexpr uint64_t INPUT_SIZE = 4096;

Spinlock cons_lock{"console"};
char input[INPUT_SIZE];
uint64_t in_r = 0, in_w = 0, in_e = 0;   // read, written (committed), edit positions
int foreground_pid = 0;

void echo(char c) {
  if (c == BACKSPACE) {
    uart_putc_sync('\b');
    uart_putc_sync(' ');
    uart_putc_sync('\b');
  } else {
    uart_putc_sync(c);
  }
}

ErrorOr<uint64_t> console_read(bool user_dst, uint64_t dst, uint64_t n) {
  uint64_t want = n;
  SpinlockGuard guard(cons_lock);
  while (n > 0) {
    while (in_r == in_w) {
      if (current_killed()) return Errno::Interrupted;
      sleep(&in_r, cons_lock);
    }
    char c = input[in_r++ % INPUT_SIZE];
    if (c == CTRL_D) {
      // End of file: a ^D alone returns 0; after some bytes, keep it for the next read.
      if (n < want) in_r--;
      break;
    }
    if (either_copyout(user_dst, dst, &c, 1).is_error()) {
      if (n == want) return Errno::Fault;
      break;
    }
    dst++;
    n--;
    if (c == '\n') break;
  }
  return want - n;
}

ErrorOr<uint64_t> console_write(bool user_src, uint64_t src, uint64_t n) {
  char chunk[64];
  uint64_t done = 0;
  while (done < n) {
    uint64_t m = n - done < sizeof chunk ? n - done : sizeof chunk;
    if (either_copyin(chunk, user_src, src + done, m).is_error()) {
      if (done == 0) return Errno::Fault;
      break;
    }
    for (uint64_t i = 0; i < m; i++) uart_putc(chunk[i]);
    done += m;
  }
  return done;
}

}  // namespace

void console_init() {
  uart_init();
  fs::devsw[KAI_DEV_CONSOLE].read = console_read;
  fs::devsw[KAI_DEV_CONSOLE].write = console_write;
}

void console_putc_sync(char c) { uart_putc_sync(c); }

void console_set_foreground(int pid) {
  SpinlockGuard guard(cons_lock);
  foreground_pid = pid;
}

int console_foreground() {
  SpinlockGuard guard(cons_lock);
  return foreground_pid;
}

void console_input(int c) {
  int kill_pid = 0;
  bool dump = false;
  {
    SpinlockGuard guard(cons_lock);
    switch (c) {
      case CTRL_U:
        while (in_e != in_w && input[(in_e - 1) % INPUT_SIZE] != '\n') {
          in_e--;
          echo(BACKSPACE);
        }
        break;
      case BACKSPACE:
      case DEL:
        if (in_e != in_w) {
          in_e--;
          echo(BACKSPACE);
        }
        break;
      case CTRL_P:
        dump = true;   // after releasing cons_lock: procdump prints a lot
        break;
      case CTRL_C:
        uart_putc_sync('^');
        uart_putc_sync('C');
        uart_putc_sync('\n');
        in_e = in_w;   // drop the partial line
        kill_pid = foreground_pid;
        break;
      default:
        if (c != 0 && in_e - in_r < INPUT_SIZE) {
          if (c == '\r') c = '\n';
          if (c != CTRL_D) echo(static_cast<char>(c));
          input[in_e++ % INPUT_SIZE] = static_cast<char>(c);
          if (c == '\n' || c == CTRL_D || in_e - in_r == INPUT_SIZE) {
            in_w = in_e;
            wakeup(&in_r);
          }
        }
    }
  }
  if (kill_pid > 0) kill_tree(kill_pid);
  if (dump) procdump();
}
