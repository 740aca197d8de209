// init: the first user program. Makes sure fds 0, 1, 2 are the console,
// runs the boot script /etc/rc once if the image has one (the demo image
// does), then keeps a shell running: when /bin/sh exits, it starts a new
// one. Being the parent of orphans, it also reaps every process that exits.
#include "kai.h"

static void open_console() {
  int fd = open("/dev/console", O_RDWR);
  if (fd < 0) {
    mknod("/dev/console", KAI_DEV_CONSOLE, 0);
    fd = open("/dev/console", O_RDWR);
  }
  if (fd < 0) exit(1);   // nowhere to even print the problem
  // Descriptors are handed out lowest first: fd is 0, the dups 1 and 2.
  while (fd < 2) fd = dup(0);
}

// Runs `sh /etc/rc` to completion, if the file exists.
static void run_boot_script() {
  struct kai_stat st;
  if (stat("/etc/rc", &st) < 0) return;
  int pid = fork();
  if (pid == 0) {
    const char* argv[] = {"sh", "/etc/rc", nullptr};
    exec("/bin/sh", argv);
    exit(1);
  }
  if (pid < 0) return;
  setfg(pid);   // ^C stops the script, not init
  int status = 0;
  while (true) {
    int w = wait(&status);
    if (w == pid || w < 0) break;
  }
  setfg(0);
}

int main() {
  open_console();
  run_boot_script();
  for (;;) {
    printf("init: starting sh\n");
    int pid = fork();
    if (pid < 0) {
      fprintf(2, "init: fork failed: %s\n", strerror(pid));
      sleep(100);
      continue;
    }
    if (pid == 0) {
      const char* argv[] = {"sh", nullptr};
      int r = exec("/bin/sh", argv);
      fprintf(2, "init: exec /bin/sh failed: %s\n", strerror(r));
      exit(1);
    }
    for (;;) {
      int status = 0;
      int w = wait(&status);
      if (w == pid) break;          // the shell ended: start another
      if (w < 0) { sleep(10); break; }
      // otherwise an orphan we adopted has exited: nothing to do
    }
  }
}
