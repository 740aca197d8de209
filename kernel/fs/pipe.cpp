// Pipes: a ring buffer in one page, a reader and a writer that sleep on
// each other (xv6's design), copying whole contiguous pieces at a time.
//
// In this file: pipealloc, pipeclose, pipewrite, piperead.
// Locking: pi->lock guards the counters and the data. A writer waits for
// room on &pi->nwrite, a reader waits for data on &pi->nread; each side
// wakes the other after it has moved bytes.
#include <new>
#include "file.h"
#include "../kalloc.h"
#include "../mem_policy.h"
#include "../proc.h"
#include "../spinlock.h"
#include "../vm.h"

namespace fs {

struct Pipe {
  static constexpr uint32_t SIZE = 4096 - 64;
  Spinlock lock{"pipe"};
  uint64_t nread = 0;      // bytes ever read
  uint64_t nwrite = 0;     // bytes ever written
  bool readopen = true;
  bool writeopen = true;
  uint8_t data[SIZE];
};
static_assert(sizeof(Pipe) <= 4096);

ErrorOr<void> pipealloc(File** f0, File** f1) {
  *f0 = filealloc();
  *f1 = *f0 ? filealloc() : nullptr;
  void* page = *f1 ? mem::take_page(mem::For::Process) : nullptr;
  if (!page) {
    if (*f0) fileclose(*f0);
    if (*f1) fileclose(*f1);
    return *f0 && *f1 ? Errno::NoMem : Errno::FileTable;
  }
  Pipe* pi = new (page) Pipe();
  (*f0)->kind = File::Kind::Pipe;
  (*f0)->readable = true;
  (*f0)->pipe = pi;
  (*f1)->kind = File::Kind::Pipe;
  (*f1)->writable = true;
  (*f1)->pipe = pi;
  return {};
}

void pipeclose(Pipe* pi, bool writable) {
  pi->lock.acquire();
  if (writable) {
    pi->writeopen = false;
    wakeup(&pi->nread);
  } else {
    pi->readopen = false;
    wakeup(&pi->nwrite);
  }
  bool last = !pi->readopen && !pi->writeopen;
  pi->lock.release();
  if (last) {
    pi->~Pipe();
    kfree(pi);
  }
}

ErrorOr<uint64_t> pipewrite(Pipe* pi, UserPtr<uint8_t> buf, uint64_t n) {
  SpinlockGuard g(pi->lock);
  uint64_t done = 0;
  while (done < n) {
    if (!pi->readopen) return done ? ErrorOr<uint64_t>(done) : ErrorOr<uint64_t>(Errno::BrokenPipe);
    if (current_killed()) return done ? ErrorOr<uint64_t>(done) : ErrorOr<uint64_t>(Errno::Interrupted);
    uint64_t used = pi->nwrite - pi->nread;
    // A write of at most KAI_PIPE_BUF bytes is atomic (as POSIX promises):
    // wait for room for all of it, so writers sharing a pipe never interleave.
    bool wait_for_whole = done == 0 && n <= KAI_PIPE_BUF && Pipe::SIZE - used < n;
    if (used == Pipe::SIZE || wait_for_whole) {
      wakeup(&pi->nread);
      sleep(&pi->nwrite, pi->lock);
      continue;
    }
    uint64_t at = pi->nwrite % Pipe::SIZE;
    uint64_t m = Pipe::SIZE - used;
    if (m > Pipe::SIZE - at) m = Pipe::SIZE - at;
    if (m > n - done) m = n - done;
    if (copy_from_user(pi->data + at, buf + done, m).is_error())
      return done ? ErrorOr<uint64_t>(done) : ErrorOr<uint64_t>(Errno::Fault);
    pi->nwrite += m;
    done += m;
  }
  wakeup(&pi->nread);
  return done;
}

ErrorOr<uint64_t> piperead(Pipe* pi, UserPtr<uint8_t> buf, uint64_t n) {
  SpinlockGuard g(pi->lock);
  while (pi->nread == pi->nwrite && pi->writeopen) {
    if (current_killed()) return Errno::Interrupted;
    sleep(&pi->nread, pi->lock);
  }
  uint64_t done = 0;
  while (done < n && pi->nread != pi->nwrite) {
    uint64_t at = pi->nread % Pipe::SIZE;
    uint64_t m = pi->nwrite - pi->nread;
    if (m > Pipe::SIZE - at) m = Pipe::SIZE - at;
    if (m > n - done) m = n - done;
    if (copy_to_user(buf + done, pi->data + at, m).is_error()) {
      if (done == 0) return Errno::Fault;
      break;
    }
    pi->nread += m;
    done += m;
  }
  wakeup(&pi->nwrite);
  return done;
}

}  // namespace fs
