// The kernel's error numbers (ErrorOr and TRY live in lib/error_or.h).
// Kernel code reports failure by returning an Errno instead of panicking;
// the system-call layer turns it into a negative return value for the user.
#pragma once
#include <stdint.h>
#include "error_or.h"
#include "../include/kai/errno.h"

enum class Errno : int {
  Perm = KAI_EPERM, NoEnt = KAI_ENOENT, NoProcess = KAI_ESRCH, Interrupted = KAI_EINTR,
  IO = KAI_EIO, TooBig = KAI_E2BIG, NoExec = KAI_ENOEXEC, BadFd = KAI_EBADF,
  NoChild = KAI_ECHILD, Again = KAI_EAGAIN, NoMem = KAI_ENOMEM, Fault = KAI_EFAULT,
  Busy = KAI_EBUSY, Exists = KAI_EEXIST, CrossDevice = KAI_EXDEV, NoDevice = KAI_ENODEV,
  NotDir = KAI_ENOTDIR, IsDir = KAI_EISDIR, Invalid = KAI_EINVAL, FileTable = KAI_ENFILE,
  TooManyFiles = KAI_EMFILE, FileTooBig = KAI_EFBIG, NoSpace = KAI_ENOSPC,
  IllegalSeek = KAI_ESPIPE, TooManyLinks = KAI_EMLINK, BrokenPipe = KAI_EPIPE,
  Range = KAI_ERANGE, NameTooLong = KAI_ENAMETOOLONG, NoSys = KAI_ENOSYS,
  NotEmpty = KAI_ENOTEMPTY, Quota = KAI_EDQUOT, Cancelled = KAI_ECANCELED,
};

