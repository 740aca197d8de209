// aitests: the AI service's test drivers in one program (see aitests.h).
//
//   aiprefix --requests 4        (/bin/aiprefix is a link to /bin/aitests)
//   aitests aiprefix --requests 4
//
// Why one program: the eight drivers share the user library and the AI
// client code; linked once, they take one copy of it in the image instead of
// eight. Why links and not `aitests TOPIC` only: the tests, the docs and the
// exercises run `/bin/aiprefix ...`, and a name that says what it tests is
// easier to read in a transcript. The file system's hard links (tools/mkfsimg.py
// stores host files that are one file, like build/user/bin/aiprefix and
// aitests, as one inode) cost a directory entry each.
#include "kai.h"
#include "aitests.h"

namespace {

struct Topic {
  const char* name;   // the command name, as in /bin
  int (*run)(int argc, char** argv);
};

constexpr Topic kTopics[] = {
    {"aitest", aitest_main},         {"aibatch", aibatch_main},   {"aisched", aisched_main},
    {"aipriority", aipriority_main}, {"aiprefix", aiprefix_main}, {"aipreempt", aipreempt_main},
    {"aistorm", aistorm_main},       {"aigrammar", aigrammar_main},
};

// "/bin/aiprefix" -> "aiprefix".
const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

const Topic* find(const char* name) {
  for (const Topic& t : kTopics)
    if (strcmp(t.name, name) == 0) return &t;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  // Started as /bin/aiprefix: the topic is the name; argv stays as it was,
  // so each driver's messages start with its own name.
  if (const Topic* t = find(base_name(argv[0]))) return t->run(argc, argv);
  // Started as aitests: the first argument names the topic, and the driver
  // sees the rest as if it had been started under that name.
  if (argc >= 2) {
    if (const Topic* t = find(argv[1])) return t->run(argc - 1, argv + 1);
  }
  fprintf(2, "%s: %s%s%s\nusage: aitests TOPIC [OPTIONS] (or run the topic by its name: /bin/TOPIC)\ntopics:",
          base_name(argv[0]), argc >= 2 ? "unknown topic '" : "no topic", argc >= 2 ? argv[1] : "",
          argc >= 2 ? "'" : "");
  for (const Topic& t : kTopics) fprintf(2, " %s", t.name);
  fprintf(2, "\n");
  return 2;
}
