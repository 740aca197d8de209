// ErrorOr<T, E>: a value or an error, and TRY() to pass errors upward.
// Used everywhere in kai (kernel, runtime, user programs, host tools) so that
// failure is a return value, never a panic or an exception. E defaults to the
// project's Errno; the runtime uses its own error type carrying a message.
#pragma once
#include <utility>

enum class Errno : int;

template <typename T, typename E = Errno>
class [[nodiscard]] ErrorOr {
 public:
  ErrorOr(const T& value) : value_(value), ok_(true) {}
  ErrorOr(T&& value) : value_(std::move(value)), ok_(true) {}
  ErrorOr(E error) : error_(error), ok_(false) {}

  bool is_error() const { return !ok_; }
  const E& error() const { return error_; }
  T& value() { return value_; }
  const T& value() const { return value_; }
  T release_value() { return std::move(value_); }

 private:
  T value_{};
  E error_{};
  bool ok_;
};

template <typename E>
class [[nodiscard]] ErrorOr<void, E> {
 public:
  ErrorOr() : ok_(true) {}
  ErrorOr(E error) : error_(error), ok_(false) {}
  bool is_error() const { return !ok_; }
  const E& error() const { return error_; }
  void release_value() {}

 private:
  E error_{};
  bool ok_;
};

// TRY(expr): evaluate expr (an ErrorOr); on error return the error from the
// current function, otherwise the expression yields the contained value.
#define TRY(expr)                                            \
  ({                                                         \
    auto _try_result = (expr);                               \
    if (_try_result.is_error()) return _try_result.error();  \
    _try_result.release_value();                             \
  })
