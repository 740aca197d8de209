// ErrorOr<T>: a value or an error number, and TRY() to pass errors upward.
// Kernel code reports failure by returning an Errno instead of panicking;
// the system-call layer turns it into a negative return value for the user.
#pragma once
#include <stdint.h>
#include <utility>
#include <new>
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
  NotEmpty = KAI_ENOTEMPTY, Cancelled = KAI_ECANCELED,
};

template <typename T>
class [[nodiscard]] ErrorOr {
 public:
  ErrorOr(const T& value) : value_(value), ok_(true) {}
  ErrorOr(T&& value) : value_(std::move(value)), ok_(true) {}
  ErrorOr(Errno error) : error_(error), ok_(false) {}

  bool is_error() const { return !ok_; }
  Errno error() const { return error_; }
  T& value() { return value_; }
  const T& value() const { return value_; }
  T release_value() { return std::move(value_); }

 private:
  T value_{};
  Errno error_{};
  bool ok_;
};

template <>
class [[nodiscard]] ErrorOr<void> {
 public:
  ErrorOr() : ok_(true) {}
  ErrorOr(Errno error) : error_(error), ok_(false) {}
  bool is_error() const { return !ok_; }
  Errno error() const { return error_; }
  void release_value() {}

 private:
  Errno error_{};
  bool ok_;
};

// TRY(expr): evaluate expr (an ErrorOr); on error return it from the current
// function, otherwise the expression's value is the contained value.
#define TRY(expr)                                   \
  ({                                                \
    auto _try_result = (expr);                      \
    if (_try_result.is_error()) return _try_result.error(); \
    _try_result.release_value();                    \
  })
