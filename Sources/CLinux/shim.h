#ifndef JOBRUN_CLINUX_SHIM_H
#define JOBRUN_CLINUX_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/openat2.h>

/// `openat2(2)`, which glibc does not wrap: `syscall` is variadic, which Swift cannot call.
/// Returns the descriptor, or -1 with `errno` set (ENOSYS on kernels before 5.6).
static inline int jobrun_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve) {
#ifdef SYS_openat2
    struct open_how how = {.flags = flags, .mode = mode, .resolve = resolve};
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
#else
    errno = ENOSYS;
    return -1;
#endif
}

#endif
