// Error numbers returned (negated) by system calls. Values follow Linux so
// that students can look them up; user code sees them as -KAI_Exxx.
#pragma once

#define KAI_EPERM         1
#define KAI_ENOENT        2
#define KAI_ESRCH         3
#define KAI_EINTR         4
#define KAI_EIO           5
#define KAI_E2BIG         7
#define KAI_ENOEXEC       8
#define KAI_EBADF         9
#define KAI_ECHILD       10
#define KAI_EAGAIN       11
#define KAI_ENOMEM       12
#define KAI_EACCES       13
#define KAI_EFAULT       14
#define KAI_EBUSY        16
#define KAI_EEXIST       17
#define KAI_EXDEV        18
#define KAI_ENODEV       19
#define KAI_ENOTDIR      20
#define KAI_EISDIR       21
#define KAI_EINVAL       22
#define KAI_ENFILE       23
#define KAI_EMFILE       24
#define KAI_EFBIG        27
#define KAI_ENOSPC       28
#define KAI_ESPIPE       29
#define KAI_EROFS        30   // the file system turned read-only after a disk write failed
#define KAI_EMLINK       31
#define KAI_EPIPE        32
#define KAI_ERANGE       34
#define KAI_ENAMETOOLONG 36
#define KAI_ENOSYS       38
#define KAI_ENOTEMPTY    39
#define KAI_EDQUOT      122   // a per-process limit (ai.max_per_process) is reached
#define KAI_ECANCELED   125
