// The disk clock's arithmetic (kernel/drivers/disk_clock.h): each request's
// service time is the larger of bytes / bandwidth and 1 / IOPS, and one FIFO
// device finishes requests one after another.
#include <catch2/catch.hpp>

#include "../../kernel/drivers/disk_clock.h"

namespace {
constexpr uint64_t HZ = 10'000'000;   // QEMU virt's timebase: 100 ns per unit
constexpr uint64_t MB = 1'000'000;
constexpr DiskModel SSD{550 * MB, 90'000};
constexpr DiskModel HDD{150 * MB, 100};
}  // namespace

TEST_CASE("a request's service time is the larger of transfer and one operation", "[disk_clock]") {
  DiskClock ssd(SSD, HZ);
  // 4 MiB at 550 MB/s: 4194304 / 550e6 s = 7626.007 us = 76260.07 units, rounded up.
  CHECK(ssd.service_time(4 << 20) == 76261);
  // 512 bytes: the transfer (0.93 us) is shorter than one of 90k IOPS (11.1 us).
  CHECK(ssd.service_time(512) == 112);   // ceil(1e7 / 9e4) = ceil(111.1)
  // Twice the bytes, twice the time, once the transfer dominates.
  CHECK(ssd.service_time(8 << 20) == 152521);

  DiskClock hdd(HDD, HZ);
  // 100 IOPS cap 0.5 MiB requests at 10 ms each (52 MB/s): the table's note.
  CHECK(hdd.service_time(512 << 10) == 100000);
  // A 4 MiB request is bandwidth-bound: 4194304 / 150e6 s = 27.96 ms.
  CHECK(hdd.service_time(4 << 20) == 279621);
  // Never zero, even for a nonsense zero-byte request.
  CHECK(DiskClock({UINT64_MAX, UINT64_MAX}, HZ).service_time(0) == 1);
  // A huge request saturates instead of wrapping to a small time.
  CHECK(ssd.service_time(UINT64_MAX / 2) > ssd.service_time(1ull << 40));
}

TEST_CASE("one FIFO device: a request starts when it arrives or when the previous ends", "[disk_clock]") {
  DiskClock d(SSD, HZ);
  uint64_t s = d.service_time(1 << 20);
  // Three requests arrive together: they end one service time apart.
  CHECK(d.schedule(1000, 1 << 20) == 1000 + s);
  CHECK(d.schedule(1000, 1 << 20) == 1000 + 2 * s);
  CHECK(d.schedule(1000 + s, 1 << 20) == 1000 + 3 * s);   // still queued behind the others
  CHECK(d.busy_until() == 1000 + 3 * s);
  // The device went idle: the next request starts when it arrives.
  uint64_t later = 1000 + 10 * s;
  CHECK(d.schedule(later, 1 << 20) == later + s);
  // Due times never decrease, whatever the arrival times.
  uint64_t last = 0;
  for (uint64_t now : {5ull, 3ull, 900000ull, 900001ull, 10ull}) {
    uint64_t due = d.schedule(now, 4096);
    CHECK(due >= last);
    CHECK(due >= now + d.service_time(4096));
    last = due;
  }
}

TEST_CASE("the boot option BYTES_PER_SECOND,IOPS", "[disk_clock]") {
  DiskModel m;
  REQUIRE(parse_disk_model("550000000,90000", m));
  CHECK(m.bytes_per_second == 550 * MB);
  CHECK(m.iops == 90000);
  // Every malformed value is refused (the caller then names the option).
  for (const char* bad : {"", ",", "550000000", "550000000,", ",90000", "0,90000", "550000000,0",
                          "55x,1", "1,2,3", "1, 2", "-1,2", "99999999999999999999,1"}) {
    DiskModel untouched{7, 8};
    CHECK_FALSE(parse_disk_model(bad, untouched));
    CHECK(untouched.bytes_per_second == 7);
  }
}
