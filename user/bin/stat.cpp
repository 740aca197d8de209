// stat PATH...: prints what the file system records about each path.
#include "kai.h"

static const char* type_name(int type) {
  switch (type) {
    case KAI_T_DIR: return "directory";
    case KAI_T_FILE: return "file";
    case KAI_T_DEVICE: return "device";
    default: return "unknown";
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(2, "usage: stat PATH...\n");
    return 2;
  }
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    kai_stat st;
    int r = stat(argv[i], &st);
    if (r < 0) {
      fprintf(2, "stat: %s: %s\n", argv[i], strerror(r));
      rc = 1;
      continue;
    }
    printf("%s: %s, inode %u, links %u, size %lu, device %u\n", argv[i], type_name(st.type),
           st.ino, st.nlink, (unsigned long)st.size, st.dev);
  }
  return rc;
}
