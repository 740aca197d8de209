// The kernel's error numbers (ErrorOr and TRY live in lib/error_or.h).
// Kernel code reports failure by returning an Errno instead of panicking;
// the system-call layer turns it into a negative return value for the user.
#pragma once
#include <stdint.h>
#include "error_or.h"
#include <kai/errno.h>

enum class Errno : int {
  Perm = KAI_EPERM, NoEnt = KAI_ENOENT, NoProcess = KAI_ESRCH, Interrupted = KAI_EINTR,
  IO = KAI_EIO, TooBig = KAI_E2BIG, NoExec = KAI_ENOEXEC, BadFd = KAI_EBADF,
  NoChild = KAI_ECHILD, Again = KAI_EAGAIN, NoMem = KAI_ENOMEM, Fault = KAI_EFAULT,
  Busy = KAI_EBUSY, Exists = KAI_EEXIST, CrossDevice = KAI_EXDEV, NoDevice = KAI_ENODEV,
  NotDir = KAI_ENOTDIR, IsDir = KAI_EISDIR, Invalid = KAI_EINVAL, FileTable = KAI_ENFILE,
  TooManyFiles = KAI_EMFILE, FileTooBig = KAI_EFBIG, NoSpace = KAI_ENOSPC,
  IllegalSeek = KAI_ESPIPE, TooManyLinks = KAI_EMLINK, BrokenPipe = KAI_EPIPE,
  Range = KAI_ERANGE, Access = KAI_EACCES, NameTooLong = KAI_ENAMETOOLONG, NoSys = KAI_ENOSYS,
  NotEmpty = KAI_ENOTEMPTY, ReadOnly = KAI_EROFS, Quota = KAI_EDQUOT, Cancelled = KAI_ECANCELED,
};


// MUST(expr, why): expr returns ErrorOr<void>, the caller has nothing left to
// undo and nobody to hand an error to (a change already half made inside a
// log transaction), and `why` says why that is safe. Where TRY passes an
// error up, MUST documents that this call is the end of the line. An error
// still does not vanish silently: the kernel prints the call, the reason and
// the error number, then carries on (a bad disk must not panic the kernel).
// Example: MUST(iupdate(ip), "the inode block is pinned by this transaction").
void must_failed(const char* call, const char* why, int err, const char* file, int line);
#define MUST(expr, why)                                                          \
  do {                                                                           \
    auto must_result_ = (expr);                                                  \
    if (must_result_.is_error())                                                 \
      must_failed(#expr, why, static_cast<int>(must_result_.error()), __FILE__, __LINE__); \
  } while (0)
