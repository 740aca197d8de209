// ls [PATH...]: one line per entry: type, inode number, size in bytes, name.
// A directory is listed by reading its kai_dirent records with read().
#include "kai.h"

static const char* type_name(int type) {
  switch (type) {
    case KAI_T_DIR: return "dir";
    case KAI_T_FILE: return "file";
    case KAI_T_DEVICE: return "dev";
    default: return "?";
  }
}

static void show(const char* name, const kai_stat& st) {
  printf("%-4s %5u %10lu %s\n", type_name(st.type), st.ino, (unsigned long)st.size, name);
}

static int list(const char* path) {
  kai_stat st;
  int r = stat(path, &st);
  if (r < 0) {
    fprintf(2, "ls: %s: %s\n", path, strerror(r));
    return 1;
  }
  if (st.type != KAI_T_DIR) {
    show(path, st);
    return 0;
  }
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    fprintf(2, "ls: %s: %s\n", path, strerror(fd));
    return 1;
  }
  kai_dirent de;
  char full[KAI_PATH_MAX];
  long n;
  while ((n = read(fd, &de, sizeof de)) == static_cast<long>(sizeof de)) {
    if (de.inum == 0) continue;   // free slot
    de.name[KAI_NAME_MAX] = 0;
    if (snprintf(full, sizeof full, "%s/%s", path, de.name) >= static_cast<int>(sizeof full)) {
      fprintf(2, "ls: %s/%s: path too long\n", path, de.name);
      continue;
    }
    kai_stat est;
    if (stat(full, &est) < 0) {
      printf("%-4s %5u %10s %s\n", "?", de.inum, "?", de.name);
      continue;
    }
    show(de.name, est);
  }
  close(fd);
  if (n < 0) {
    fprintf(2, "ls: %s: %s\n", path, strerror(n));
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return list(".");
  int rc = 0;
  for (int i = 1; i < argc; ++i) rc |= list(argv[i]);
  return rc;
}
