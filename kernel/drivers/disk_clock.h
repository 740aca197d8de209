// The disk clock's arithmetic: when a modelled disk would finish each request.
//
// In exact mode (docs/experiments.md, "Exact mode") the guest clock counts
// instructions, but QEMU finishes a disk read when a host thread has done it,
// in real time. With the boot option `disk.clock=BYTES_PER_SECOND,IOPS` the
// driver (virtio_blk.cpp) makes the device instantaneous in virtual time and
// charges each request the time this model gives it instead, so a cold read
// takes the same virtual time in every boot.
//
// The model is one FIFO device: a request starts when it reaches the device
// (the notification) or when the previous one ends, whichever is later, and
// takes the larger of its transfer time (bytes / bandwidth) and one
// operation's time (1 / IOPS): hdd's 100 IOPS thus cap 0.5 MiB requests near
// 50 MB/s (tools/disk_models.py). Times are in clock units (the time CSR,
// `hz` per second), rounded up: a request never takes zero time.
//
// Header-only and free of kernel state: tests/host/test_disk_clock.cpp tests it.
#pragma once
#include <stdint.h>

struct DiskModel {
  uint64_t bytes_per_second = 0;   // sequential read bandwidth, > 0
  uint64_t iops = 0;               // operations per second, > 0
};

// `BYTES_PER_SECOND,IOPS`, both decimal and > 0 (e.g. "550000000,90000"):
// true and the model, or false for anything else (the caller names the option).
constexpr bool parse_disk_model(const char* s, DiskModel& out) {
  uint64_t v[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    if (*s < '0' || *s > '9') return false;
    while (*s >= '0' && *s <= '9') {
      uint64_t d = uint64_t(*s - '0');
      if (v[i] > (UINT64_MAX - d) / 10) return false;   // overflow
      v[i] = v[i] * 10 + d;
      s++;
    }
    if (i == 0 && *s++ != ',') return false;
  }
  if (*s != '\0' || v[0] == 0 || v[1] == 0) return false;
  out = {v[0], v[1]};
  return true;
}

class DiskClock {
 public:
  constexpr DiskClock(DiskModel model, uint64_t hz) : model_(model), hz_(hz) {}

  // How long the device works on a request of `bytes` (clock units, >= 1).
  constexpr uint64_t service_time(uint64_t bytes) const {
    uint64_t transfer = ceil_div(mul(bytes, hz_), model_.bytes_per_second);
    uint64_t one_op = ceil_div(hz_, model_.iops);
    uint64_t t = transfer > one_op ? transfer : one_op;
    return t ? t : 1;
  }

  // A request of `bytes` reaches the device at `now`: when it is done.
  // Invariant: due times come out in the order requests were scheduled, never
  // decreasing (one FIFO device), and none before now + service_time(bytes).
  constexpr uint64_t schedule(uint64_t now, uint64_t bytes) {
    uint64_t start = now > busy_until_ ? now : busy_until_;
    busy_until_ = start + service_time(bytes);
    return busy_until_;
  }

  constexpr uint64_t busy_until() const { return busy_until_; }
  constexpr DiskModel model() const { return model_; }

 private:
  static constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }
  // a * b, saturating (a request's bytes times a clock rate fits easily; a
  // nonsense model must not wrap around to a tiny time).
  static constexpr uint64_t mul(uint64_t a, uint64_t b) {
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
  }

  DiskModel model_;
  uint64_t hz_;
  uint64_t busy_until_ = 0;
};
