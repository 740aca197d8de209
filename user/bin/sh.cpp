// sh: the kai shell.
//
//   sh              read commands from standard input (prompt "$ " only if
//                   standard input is the console)
//   sh FILE         run the commands in FILE, then exit
//   sh -c 'LINE'    run one command line, then exit
//
// Grammar of a line (see docs/userspace.md):
//   line     := andor { (';' | '&') andor } [';' | '&'] ['#' comment]
//   andor    := pipeline { ('&&' | '||') pipeline }
//   pipeline := command { '|' command }
//   command  := word { word | '<' word | '>' word | '>>' word }
// A word may be quoted with '...' (literal) or "..." (\" and \\ escaped);
// outside quotes, \c stands for c. Builtins: cd [DIR], exit [STATUS].
// A name without '/' is looked up as /bin/NAME.
//
// Jobs: a foreground command or pipeline is made the console's foreground
// job with setfg(), so ^C kills it (the kernel kills the whole process tree
// of that pid) and not the shell. A pipeline of several commands runs under
// one helper process that forks the stages and waits for them, so one pid
// stands for the whole job. `a && b` runs b only if a succeeded (status 0),
// `a || b` only if it failed. '&' runs an and-or list in the background (a
// list of several pipelines under a forked copy of the shell); its exit is
// reported ("[pid] done") when the shell next waits for something.
#include "kai.h"

namespace {

constexpr int MAX_LINE = 4096;   // the console buffers 4 KiB of input (kernel/console.cpp)
constexpr int MAX_ARGS = 300;    // = the kernel's MAXARG: a 255-token prompt plus options
constexpr int MAX_STAGES = 8;
constexpr int MAX_JOBS = 16;   // pipelines per line

enum class Tok { Word, Pipe, Semi, Amp, AndAnd, OrOr, In, Out, Append, End, Error };
enum class Next { Seq, And, Or };   // how a job connects to the one after it

struct Command {
  const char* argv[MAX_ARGS + 1];
  int argc;
  const char* in;       // < file
  const char* out;      // > file or >> file
  bool append;
};

struct Job {
  Command stages[MAX_STAGES];
  int n;
  bool background;   // set on the last job of a background and-or list
  Next next;
};

struct Line {
  Job jobs[MAX_JOBS];
  int n;
  char words[MAX_LINE * 2];   // unquoted copies of the words
};

int last_status = 0;

// ------------------------------------------------------------ lexing

struct Lexer {
  const char* p;
  char* store;        // where the next word's characters go
  char* store_end;
  const char* error = nullptr;

  bool is_special(char c) { return c == '|' || c == ';' || c == '&' || c == '<' || c == '>'; }
  bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

  Tok next(const char** word) {
    while (is_blank(*p)) ++p;
    char c = *p;
    if (c == 0 || c == '#') return Tok::End;
    if (is_special(c)) {
      ++p;
      switch (c) {
        case '|':
          if (*p == '|') { ++p; return Tok::OrOr; }
          return Tok::Pipe;
        case ';': return Tok::Semi;
        case '&':
          if (*p == '&') { ++p; return Tok::AndAnd; }
          return Tok::Amp;
        case '<': return Tok::In;
        default:
          if (*p == '>') { ++p; return Tok::Append; }
          return Tok::Out;
      }
    }
    *word = store;
    while (*p && !is_blank(*p) && !is_special(*p)) {
      if (store + 2 > store_end) { error = "line too long"; return Tok::Error; }
      char ch = *p++;
      if (ch == '\'') {
        while (*p && *p != '\'') { if (store + 2 > store_end) break; *store++ = *p++; }
        if (*p != '\'') { error = "unterminated '"; return Tok::Error; }
        ++p;
      } else if (ch == '"') {
        while (*p && *p != '"') {
          if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) ++p;
          if (store + 2 > store_end) break;
          *store++ = *p++;
        }
        if (*p != '"') { error = "unterminated \""; return Tok::Error; }
        ++p;
      } else if (ch == '\\' && *p) {
        *store++ = *p++;
      } else {
        *store++ = ch;
      }
    }
    *store++ = 0;
    return Tok::Word;
  }
};

// ------------------------------------------------------------ parsing

// Fills line from text. Returns an error message or null.
const char* parse(const char* text, Line& line) {
  Lexer lx{text, line.words, line.words + sizeof line.words};
  line.n = 0;
  const char* word = nullptr;
  Tok t = lx.next(&word);
  while (t != Tok::End) {
    if (line.n == MAX_JOBS) return "too many commands on one line";
    Job& job = line.jobs[line.n];
    job.n = 0;
    job.background = false;
    job.next = Next::Seq;
    for (;;) {   // one pipeline
      if (job.n == MAX_STAGES) return "pipeline too long";
      Command& cmd = job.stages[job.n];
      cmd = Command{};
      for (;; t = lx.next(&word)) {   // one command
        if (t == Tok::Word) {
          if (cmd.argc == MAX_ARGS) return "too many arguments";
          cmd.argv[cmd.argc++] = word;
        } else if (t == Tok::In || t == Tok::Out || t == Tok::Append) {
          Tok r = t;
          if (lx.next(&word) != Tok::Word) return lx.error ? lx.error : "missing file name after redirection";
          if (r == Tok::In) cmd.in = word;
          else { cmd.out = word; cmd.append = r == Tok::Append; }
        } else if (t == Tok::Error) {
          return lx.error;
        } else {
          break;
        }
      }
      cmd.argv[cmd.argc] = nullptr;
      if (cmd.argc == 0) return "missing command";
      ++job.n;
      if (t != Tok::Pipe) break;
      t = lx.next(&word);
    }
    ++line.n;
    if (t == Tok::Amp) job.background = true;
    if (t == Tok::AndAnd || t == Tok::OrOr) {
      job.next = t == Tok::AndAnd ? Next::And : Next::Or;
      t = lx.next(&word);
      if (t != Tok::Word) return t == Tok::Error ? lx.error : "missing command after && or ||";
    } else if (t == Tok::Semi || t == Tok::Amp) {
      t = lx.next(&word);
    } else if (t != Tok::End) {
      return "syntax error";
    }
  }
  return nullptr;
}

// ------------------------------------------------------------ running

// Replaces descriptor `target` with `path` opened with `flags`.
void redirect(int target, const char* path, int flags) {
  int fd = open(path, flags);
  if (fd < 0) {
    fprintf(2, "sh: %s: %s\n", path, strerror(fd));
    exit(1);
  }
  if (fd != target) {
    close(target);
    dup(fd);    // lowest free descriptor: target
    close(fd);
  }
}

// In a child: applies the command's redirections and execs it.
[[noreturn]] void run_command(const Command& cmd) {
  if (cmd.in) redirect(0, cmd.in, O_RDONLY);
  if (cmd.out) redirect(1, cmd.out, O_WRONLY | O_CREATE | (cmd.append ? O_APPEND : O_TRUNC));
  int r = execvp(cmd.argv[0], cmd.argv);
  fprintf(2, "exec %s failed: %s\n", cmd.argv[0], strerror(r));
  exit(127);
}

// Waits until `pid` exits and returns its status; reports background jobs
// that finish meanwhile.
int wait_for(int pid) {
  for (;;) {
    int status = 0;
    int w = wait(&status);
    if (w < 0) return -1;
    if (w == pid) return status;
    printf("[%d] done, status %d\n", w, status);
  }
}

// In the pipeline helper process: forks every stage connected by pipes,
// waits for all, exits with the last stage's status.
[[noreturn]] void run_pipeline(const Job& job) {
  int pids[MAX_STAGES];
  int prev_read = -1;
  for (int i = 0; i < job.n; ++i) {
    int p[2] = {-1, -1};
    if (i + 1 < job.n && pipe(p) < 0) {
      fprintf(2, "sh: pipe failed\n");
      exit(1);
    }
    int pid = fork();
    if (pid < 0) {
      fprintf(2, "sh: fork failed: %s\n", strerror(pid));
      exit(1);
    }
    if (pid == 0) {
      if (prev_read >= 0) { close(0); dup(prev_read); close(prev_read); }
      if (p[1] >= 0) { close(1); dup(p[1]); close(p[1]); close(p[0]); }
      run_command(job.stages[i]);
    }
    pids[i] = pid;
    if (prev_read >= 0) close(prev_read);
    if (p[1] >= 0) close(p[1]);
    prev_read = p[0];
  }
  int last = 0;
  for (int done = 0; done < job.n;) {
    int status = 0;
    int w = wait(&status);
    if (w < 0) break;
    for (int i = 0; i < job.n; ++i)
      if (pids[i] == w) { ++done; if (i == job.n - 1) last = status; }
  }
  exit(last);
}

bool builtin(const Command& cmd) {
  if (strcmp(cmd.argv[0], "cd") == 0) {
    const char* dir = cmd.argc > 1 ? cmd.argv[1] : "/";
    int r = chdir(dir);
    if (r < 0) fprintf(2, "cd: %s: %s\n", dir, strerror(r));
    last_status = r < 0;
    return true;
  }
  if (strcmp(cmd.argv[0], "wait") == 0) {
    // Every background job of this shell, as in Unix sh: wait until the
    // shell has no children left.
    int status = 0, w;
    while ((w = wait(&status)) > 0) printf("[%d] done, status %d\n", w, status);
    last_status = 0;
    return true;
  }
  if (strcmp(cmd.argv[0], "exit") == 0) {
    exit(cmd.argc > 1 ? atoi(cmd.argv[1]) : last_status);
  }
  return false;
}

bool in_subshell = false;   // a forked copy running a background list: no setfg

void run_job(const Job& job, bool background) {
  if (job.n == 1 && !background && builtin(job.stages[0])) return;
  // A foreground job must hold the console before it runs a single
  // instruction of its program: `aictl` checks that it is the foreground
  // process, and with two harts the child can get there before the shell,
  // on its own hart, has called setfg(pid) (it happened: `aictl harts 2`
  // was refused). Only the shell may hand the console over, so the child
  // waits on a pipe until the shell has, and the shell then closes it (the
  // end of file releases the child). A POSIX shell closes the same race by
  // calling setpgid in both parent and child.
  int handed[2] = {-1, -1};
  bool hand_over = !background && !in_subshell && pipe(handed) == 0;
  int pid = fork();
  if (pid < 0) {
    fprintf(2, "sh: fork failed: %s\n", strerror(pid));
    last_status = 1;
    if (hand_over) {
      close(handed[0]);
      close(handed[1]);
    }
    return;
  }
  if (pid == 0) {
    if (hand_over) {
      close(handed[1]);
      char c;
      read(handed[0], &c, 1);   // returns at end of file: the shell has called setfg
      close(handed[0]);
    }
    if (job.n == 1) run_command(job.stages[0]);
    run_pipeline(job);
  }
  if (background) {
    printf("[%d]\n", pid);
    return;
  }
  if (!in_subshell) setfg(pid);
  if (hand_over) {
    close(handed[0]);
    close(handed[1]);
  }
  last_status = wait_for(pid);
  if (!in_subshell) setfg(0);
}

// Runs jobs[first..last], one and-or list, in the foreground.
void run_list(const Job* jobs, int first, int last) {
  for (int k = first; k <= last; ++k) {
    if (k > first) {
      Next op = jobs[k - 1].next;
      if (op == Next::And && last_status != 0) continue;
      if (op == Next::Or && last_status == 0) continue;
    }
    run_job(jobs[k], false);
  }
}

void run_line(const char* text) {
  static Line line;   // big: keep it off the stack
  if (const char* err = parse(text, line)) {
    fprintf(2, "sh: %s\n", err);
    last_status = 2;
    return;
  }
  for (int i = 0; i < line.n;) {
    int j = i;   // the and-or list is jobs[i..j]
    while (j + 1 < line.n && line.jobs[j].next != Next::Seq) ++j;
    if (!line.jobs[j].background) {
      run_list(line.jobs, i, j);
    } else if (i == j) {
      run_job(line.jobs[i], true);
    } else {
      int pid = fork();
      if (pid == 0) {
        in_subshell = true;
        run_list(line.jobs, i, j);
        exit(last_status);
      }
      if (pid < 0) fprintf(2, "sh: fork failed: %s\n", strerror(pid));
      else printf("[%d]\n", pid);
    }
    i = j + 1;
  }
}

bool interactive(int fd) {
  kai_stat st;
  return fstat(fd, &st) == 0 && st.type == KAI_T_DEVICE;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "-c") == 0) {
    run_line(argv[2]);
    return last_status;
  }
  int in = 0;
  if (argc >= 2) {
    in = open(argv[1], O_RDONLY);
    if (in < 0) {
      fprintf(2, "sh: %s: %s\n", argv[1], strerror(in));
      return 127;
    }
  }
  bool prompt = in == 0 && interactive(0);
  char buf[MAX_LINE];
  for (;;) {
    if (prompt) fputs("$ ", 2);
    long n = getline(in, buf, sizeof buf);
    if (n <= 0) break;   // end of input (or ^D on the console)
    if (buf[n - 1] != '\n' && n == static_cast<long>(sizeof buf) - 1) {
      fprintf(2, "sh: line too long\n");
      while (n > 0 && buf[n - 1] != '\n') n = getline(in, buf, sizeof buf);   // skip the rest
      continue;
    }
    run_line(buf);
  }
  return last_status;
}
