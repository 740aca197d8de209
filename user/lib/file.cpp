// read_whole_file: see kai_file.h.
#include "kai_file.h"
#include "kai.h"

uint8_t* read_whole_file(const char* path, size_t* size, int* err, size_t align) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    *err = fd;
    return nullptr;
  }
  struct kai_stat st;
  if (int r = fstat(fd, &st); r < 0) {
    close(fd);
    *err = r;
    return nullptr;
  }
  void* mem = align ? aligned_alloc(align, st.size + 1) : malloc(st.size + 1);
  auto* buf = static_cast<uint8_t*>(mem);
  size_t got = 0;
  while (buf && got < st.size) {
    long n = read(fd, buf + got, st.size - got);
    if (n <= 0) break;
    got += size_t(n);
  }
  close(fd);
  if (!buf || got != st.size) {
    free(buf);
    *err = buf ? -KAI_EIO : -KAI_ENOMEM;
    return nullptr;
  }
  buf[got] = 0;
  *size = got;
  return buf;
}
