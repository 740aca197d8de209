// df: free and used space and inodes of the root file system.
#include "kai.h"

int main(int argc, char** argv) {
  no_arguments("df", argc, argv);
  kai_statfs s;
  int r = statfs(&s);
  if (r < 0) {
    fprintf(2, "df: %s\n", strerror(r));
    return 1;
  }
  unsigned long used = s.total_blocks - s.free_blocks;
  unsigned long kib = s.block_size / 1024;
  printf("blocks: %lu total, %lu used, %lu free (%lu KiB each)\n", (unsigned long)s.total_blocks,
         used, (unsigned long)s.free_blocks, kib);
  printf("space:  %lu MiB total, %lu MiB used, %lu MiB free\n",
         (unsigned long)(s.total_blocks * kib / 1024), used * kib / 1024,
         (unsigned long)(s.free_blocks * kib / 1024));
  printf("inodes: %lu total, %lu used, %lu free\n", (unsigned long)s.total_inodes,
         (unsigned long)(s.total_inodes - s.free_inodes), (unsigned long)s.free_inodes);
  auto per = [](uint64_t bytes, uint64_t n) { return (unsigned long)(n ? bytes / n / 1024 : 0); };
  printf("disk:   reads=%lu read_bytes=%lu (%lu KiB a request) writes=%lu write_bytes=%lu (%lu KiB a request)\n",
         (unsigned long)s.disk_reads, (unsigned long)s.disk_read_bytes, per(s.disk_read_bytes, s.disk_reads),
         (unsigned long)s.disk_writes, (unsigned long)s.disk_write_bytes, per(s.disk_write_bytes, s.disk_writes));
  if (s.disk_clock_iops)
    printf("clock:  %lu bytes/s, %lu IOPS in virtual time; %lu stalls hid %lu us of the host\n",
           (unsigned long)s.disk_clock_bytes_per_second, (unsigned long)s.disk_clock_iops,
           (unsigned long)s.disk_clock_stalls, (unsigned long)(s.disk_clock_stolen_ns / 1000));
  return 0;
}
