// The AI service's test drivers, one program built from topic files (as
// /bin/usertests is). Each topic keeps the command name the QEMU tests, the
// docs and the exercises use: /bin/aiprefix is a link to /bin/aitests, and
// main.cpp picks the topic from the name it was started under (argv[0]), or
// from its first argument (`aitests aiprefix --requests 4`).
//
// Each topic file holds one driver: its options (CommandLine,
// user/lib/kai_options.h), its checks and its entry point below, which
// returns the exit status as the program's main did.
#pragma once

int aitest_main(int argc, char** argv);       // service.cpp: results, ownership, errors, cleanup
int aibatch_main(int argc, char** argv);      // batch.cpp: batching never changes a token
int aisched_main(int argc, char** argv);      // sched.cpp: fcfs, sjf and priority order
int aipriority_main(int argc, char** argv);   // priority.cpp: priority preemption keeps the tokens
int aiprefix_main(int argc, char** argv);     // prefix.cpp: shared prompt prefixes
int aipreempt_main(int argc, char** argv);    // preempt.cpp: preemption when the KV pool is full
int aistorm_main(int argc, char** argv);      // storm.cpp: hostile clients
int aigrammar_main(int argc, char** argv);    // grammar.cpp: constrained and plain requests batched keep their tokens
