// The usertests harness, shared by the topic files of user/usertests/:
// how a test reports failure, how it runs children, and the data (bad
// pointers, scratch directory, big buffers) several topics use.
//
// A test is a function `bool t_NAME()` that returns true, or false after
// fail("why", ...) (EXPECT does both). Each topic file lists its tests in a
// table (processes_tests[], ...) that main.cpp runs in order.
#pragma once
#include "kai.h"

namespace ut {

struct Test { const char* name; bool (*fn)(); };
struct TestGroup { const Test* tests; int count; };
#define UT_GROUP(table) ::ut::TestGroup{table, sizeof table / sizeof table[0]}

// The tables of the topic files, in the order they run.
extern const TestGroup processes_tests, memory_tests, pipes_tests, bad_pointer_tests,
    files_tests, libc_tests, time_tests, sessions_tests, vm_tests;

// The failure message of the running test (sent to the parent by main.cpp).
extern char reason[200];
bool fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

#define EXPECT(cond, ...) \
  do {                    \
    if (!(cond)) return ::ut::fail(__VA_ARGS__); \
  } while (0)

// Runs fn in a child and returns its exit status (or -1000 - error if the
// fork or wait failed).
int in_child(void (*fn)());
// Forks a child that runs fn with an argument; returns the pid.
int spawn(void (*fn)(long), long arg);
// Waits for one specific child; returns its status, or -1000 on error.
// Other children that exit meanwhile are remembered for their own reap().
int reap(int pid);
// Runs exec(path, argv) in a child and tells whether it failed as it should.
bool exec_fails(const char* path, const char* const* argv);

// Addresses that no system call may accept as a user buffer.
struct BadPtr { uint64_t addr; const char* what; };
extern const BadPtr bad_ptrs[];
extern const int NBAD;
template <typename T>
T* bad(int i) { return reinterpret_cast<T*>(bad_ptrs[i].addr); }

extern const char* const scratch_dir;   // "/ut": files tests work in here
extern char big_buf[64 * 1024];
extern char big_buf2[64 * 1024];

// Fills buf with a pattern derived from seed.
void pattern(char* buf, long n, uint64_t seed);
// Creates (or truncates) path with exactly n bytes of data: 0 or -errno.
int write_file(const char* path, const void* data, long n);

}  // namespace ut
