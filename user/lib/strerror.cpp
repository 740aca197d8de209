// Names for the error codes of <kai/errno.h>.
#include "kai.h"

extern "C" const char* strerror(long err) {
  if (err < 0) err = -err;
  switch (err) {
    case 0: return "Success";
    case KAI_EPERM: return "Operation not permitted";
    case KAI_ENOENT: return "No such file or directory";
    case KAI_ESRCH: return "No such process";
    case KAI_EINTR: return "Interrupted";
    case KAI_EIO: return "I/O error";
    case KAI_E2BIG: return "Argument list too long";
    case KAI_ENOEXEC: return "Exec format error";
    case KAI_EBADF: return "Bad file descriptor";
    case KAI_ECHILD: return "No child processes";
    case KAI_EAGAIN: return "Try again";
    case KAI_ENOMEM: return "Out of memory";
    case KAI_EACCES: return "Permission denied";
    case KAI_EFAULT: return "Bad address";
    case KAI_EBUSY: return "Device or resource busy";
    case KAI_EEXIST: return "File exists";
    case KAI_EXDEV: return "Cross-device link";
    case KAI_ENODEV: return "No such device";
    case KAI_ENOTDIR: return "Not a directory";
    case KAI_EISDIR: return "Is a directory";
    case KAI_EINVAL: return "Invalid argument";
    case KAI_ENFILE: return "Too many open files in system";
    case KAI_EMFILE: return "Too many open files";
    case KAI_EFBIG: return "File too large";
    case KAI_ENOSPC: return "No space left on device";
    case KAI_ESPIPE: return "Illegal seek";
    case KAI_EROFS: return "Read-only file system";
    case KAI_EMLINK: return "Too many links";
    case KAI_EPIPE: return "Broken pipe";
    case KAI_ERANGE: return "Result out of range";
    case KAI_ENAMETOOLONG: return "File name too long";
    case KAI_ENOSYS: return "Function not implemented";
    case KAI_ENOTEMPTY: return "Directory not empty";
    case KAI_EDQUOT: return "Quota exceeded";
    case KAI_ECANCELED: return "Canceled";
    default: return "Unknown error";
  }
}
