// grep PATTERN [FILE...]: prints the lines that contain PATTERN (a plain
// substring, no regular expressions). Exit status 0 if a line matched,
// 1 if none did, 2 on an error.
#include "kai.h"

static char buf[8192 + 1];

static bool grep(int fd, const char* pattern, const char* prefix, bool* error) {
  bool matched = false;
  long have = 0;
  for (;;) {
    long n = read(fd, buf + have, sizeof buf - 1 - have);
    if (n < 0) { *error = true; fprintf(2, "grep: %s\n", strerror(n)); break; }
    if (n == 0 && have == 0) break;
    have += n;
    buf[have] = 0;
    // Print every complete line in the buffer; at end of input the rest is a line too.
    char* line = buf;
    char* nl;
    while ((nl = strchr(line, '\n')) != nullptr || (n == 0 && *line)) {
      if (nl) *nl = 0;
      if (strstr(line, pattern)) {
        matched = true;
        if (prefix) printf("%s:%s\n", prefix, line); else printf("%s\n", line);
      }
      if (!nl) { line += strlen(line); break; }
      line = nl + 1;
    }
    have = buf + have - line;
    memmove(buf, line, have);
    if (have == static_cast<long>(sizeof buf) - 1) {   // a line longer than the buffer
      buf[have] = 0;
      if (strstr(buf, pattern)) { matched = true; printf("%s\n", buf); }
      have = 0;
    }
    if (n == 0) break;
  }
  return matched;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(2, "usage: grep PATTERN [FILE...]\n");
    return 2;
  }
  bool error = false, matched = false;
  if (argc == 2) {
    matched = grep(0, argv[1], nullptr, &error);
  } else {
    for (int i = 2; i < argc; ++i) {
      int fd = open(argv[i], O_RDONLY);
      if (fd < 0) {
        fprintf(2, "grep: %s: %s\n", argv[i], strerror(fd));
        error = true;
        continue;
      }
      matched |= grep(fd, argv[1], argc > 3 ? argv[i] : nullptr, &error);
      close(fd);
    }
  }
  return error ? 2 : matched ? 0 : 1;
}
