#pragma once
// Runs the system call in the current process's trapframe (a7 = number).
void syscall_dispatch();
