/* SPDX-License-Identifier: MIT */
/* The seccomp allowlist (seccomp-filter.h).
 *
 * Shape, as in Chromium's baseline policy and sandbox2's policy builder: the
 * default action refuses; whole groups of system calls that only act on the
 * process itself (its memory, its threads, its descriptors, its signals) are
 * allowed; calls that serve both "this process" and "any process" are
 * allowed only with arguments that name this process; calls that create,
 * change or remove files, start processes or open sockets are allowed only
 * with the profile rule that grants it. Integer arguments the kernel reads as
 * int are compared on their low 32 bits (the kernel ignores the rest, so a
 * full 64-bit comparison could be dodged with garbage in the upper half). */
#include "seccomp-filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/filter.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>

#include <netinet/in.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080 /* glibc < 2.35; only reachable through clone3/unshare */
#endif
/* O_TMPFILE is this bit with O_DIRECTORY (glibc's __O_TMPFILE includes
 * O_DIRECTORY, which a read-only open of a directory must keep). */
#define O_TMPFILE_BIT 020000000
#ifndef TIOCGPTPEER
#define TIOCGPTPEER 0x5441
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef F_GET_RW_HINT
#define F_GET_RW_HINT 1035
#define F_SET_RW_HINT 1036
#endif
#ifndef F_GET_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#endif
#ifndef F_OFD_GETLK
#define F_OFD_GETLK  36
#define F_OFD_SETLK  37
#define F_OFD_SETLKW 38
#endif
#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#define SO_ATTACH_REUSEPORT_EBPF 52
#endif

/* The numbers above the highest one libseccomp can name, up to this bound,
 * fail with ENOSYS: syscalls newer than the libseccomp python-sb was built
 * with (2.5.4 stops at 456; kernel 6.8+ added statmount, listmount, mseal:
 * new doors into mounts and memory), which nobody has decided are safe; libc
 * treats ENOSYS as "old kernel" and falls back. 512 is where the native
 * x86_64 numbering stops (512-547 are the x32 ABI's legacy numbers); above
 * it, and in the gaps of the table (335-423 on x86_64: numbers no kernel
 * assigns), the default answers EPERM. One rule per number: a leaf of the
 * binary tree each, and the program's load time grows with its length.
 * Numbers with the x32 bit set never get here (SCMP_FLTATR_ACT_BADARCH). */
#define SB_SECCOMP_NR_BOUND 512

#define MASK32 UINT64_C(0xffffffff)

/* What a group of allowed calls needs from the profile. */
enum grant {
	G_BASE,	  /* always */
	G_SOCKET, /* a socket of its own: a net= rule, or AF_UNIX (expose-rw + guard) */
	G_WRITE,  /* an expose-rw rule */
	G_FORK,	  /* python-api process grants */
	G_EXEC,
};

static const char *const grant_rule[] = {
    [G_BASE] = NULL,
    [G_SOCKET] = "a net= rule (or an expose-rw rule with py-sandbox=true)",
    [G_WRITE] = "an expose-rw rule",
    [G_FORK] = "python-api=ALLOW:process-exec",
    [G_EXEC] = "python-api=ALLOW:process-exec",
};

/* The groups, in --explain's order. */
enum group {
	K_PROCESS,
	K_MEMORY,
	K_TIME,
	K_SIGNALS,
	K_IO,
	K_READ_FS,
	K_SOCKET_OPS,
	K_WRITE_FS,
	K_METADATA,
	K_PROCESSES,
	K_EXEC,
	K__N,
};

static const char *const group_name[K__N] = {
    [K_PROCESS] = "its own identity, limits and children",
    [K_MEMORY] = "its own memory",
    [K_TIME] = "time, timers, waiting",
    [K_SIGNALS] = "its own signal handling",
    [K_IO] = "descriptors it holds",
    [K_READ_FS] = "reading the file system (Landlock decides which files)",
    [K_SOCKET_OPS] = "sockets it holds",
    [K_WRITE_FS] = "creating, renaming, removing files",
    [K_METADATA] = "changing modes, owners, times, extended attributes",
    [K_PROCESSES] = "starting processes",
    [K_EXEC] = "running programs",
};

/* Allowed with no condition on the arguments (once the grant is there). */
static const struct allowed {
	const char *name;
	enum group group;
	enum grant grant;
} allowed_table[] = {
    {"exit", K_PROCESS, G_BASE},
    {"exit_group", K_PROCESS, G_BASE},
    {"restart_syscall", K_PROCESS, G_BASE},
    {"set_tid_address", K_PROCESS, G_BASE},
    {"set_robust_list", K_PROCESS, G_BASE},
    {"rseq", K_PROCESS, G_BASE},
    {"arch_prctl", K_PROCESS, G_BASE}, /* x86: its own FS/GS bases, CPUID faulting */
    {"getpid", K_PROCESS, G_BASE},
    {"getppid", K_PROCESS, G_BASE},
    {"gettid", K_PROCESS, G_BASE},
    {"getuid", K_PROCESS, G_BASE},
    {"geteuid", K_PROCESS, G_BASE},
    {"getgid", K_PROCESS, G_BASE},
    {"getegid", K_PROCESS, G_BASE},
    {"getresuid", K_PROCESS, G_BASE},
    {"getresgid", K_PROCESS, G_BASE},
    {"getgroups", K_PROCESS, G_BASE},
    {"getpgrp", K_PROCESS, G_BASE},
    {"setpgid", K_PROCESS, G_BASE}, /* the kernel limits it to itself and its children */
    {"setsid", K_PROCESS, G_BASE},
    {"capget", K_PROCESS, G_BASE},
    {"uname", K_PROCESS, G_BASE},
    {"sysinfo", K_PROCESS, G_BASE},
    {"getrusage", K_PROCESS, G_BASE},
    {"times", K_PROCESS, G_BASE},
    {"getrlimit", K_PROCESS, G_BASE},
    {"setrlimit", K_PROCESS, G_BASE}, /* its own; raising a hard limit needs a capability */
    {"umask", K_PROCESS, G_BASE},
    {"wait4", K_PROCESS, G_BASE},
    {"waitid", K_PROCESS, G_BASE},
    {"getcpu", K_PROCESS, G_BASE},
    {"sched_yield", K_PROCESS, G_BASE},
    {"sched_get_priority_max", K_PROCESS, G_BASE},
    {"sched_get_priority_min", K_PROCESS, G_BASE},
    {"sched_getaffinity", K_PROCESS, G_BASE},
    {"sched_getscheduler", K_PROCESS, G_BASE},
    {"sched_getparam", K_PROCESS, G_BASE},
    {"sched_getattr", K_PROCESS, G_BASE},
    {"sched_rr_get_interval", K_PROCESS, G_BASE},
    {"getrandom", K_PROCESS, G_BASE},

    {"brk", K_MEMORY, G_BASE},
    {"mmap", K_MEMORY, G_BASE},
    {"munmap", K_MEMORY, G_BASE},
    {"mremap", K_MEMORY, G_BASE},
    {"mprotect", K_MEMORY, G_BASE}, /* PROT_EXEC: extension modules, ctypes callbacks */
    {"pkey_mprotect", K_MEMORY, G_BASE},
    {"pkey_alloc", K_MEMORY, G_BASE},
    {"pkey_free", K_MEMORY, G_BASE},
    {"madvise", K_MEMORY, G_BASE},
    {"mincore", K_MEMORY, G_BASE},
    {"msync", K_MEMORY, G_BASE},
    {"membarrier", K_MEMORY, G_BASE},

    {"futex", K_TIME, G_BASE},
    {"futex_waitv", K_TIME, G_BASE},
    {"nanosleep", K_TIME, G_BASE},
    {"clock_nanosleep", K_TIME, G_BASE},
    {"clock_gettime", K_TIME, G_BASE},
    {"clock_getres", K_TIME, G_BASE},
    {"gettimeofday", K_TIME, G_BASE},
    {"time", K_TIME, G_BASE},
    {"getitimer", K_TIME, G_BASE},
    {"setitimer", K_TIME, G_BASE},
    {"alarm", K_TIME, G_BASE},
    {"timer_create", K_TIME, G_BASE},
    {"timer_gettime", K_TIME, G_BASE},
    {"timer_getoverrun", K_TIME, G_BASE},
    {"timerfd_create", K_TIME, G_BASE},
    {"timerfd_settime", K_TIME, G_BASE},
    {"timerfd_gettime", K_TIME, G_BASE},
    {"eventfd", K_TIME, G_BASE},
    {"eventfd2", K_TIME, G_BASE},

    {"rt_sigaction", K_SIGNALS, G_BASE},
    {"rt_sigprocmask", K_SIGNALS, G_BASE},
    {"rt_sigreturn", K_SIGNALS, G_BASE},
    {"rt_sigpending", K_SIGNALS, G_BASE},
    {"rt_sigsuspend", K_SIGNALS, G_BASE},
    {"rt_sigtimedwait", K_SIGNALS, G_BASE},
    {"sigaltstack", K_SIGNALS, G_BASE},
    {"pause", K_SIGNALS, G_BASE},
    {"signalfd", K_SIGNALS, G_BASE},
    {"signalfd4", K_SIGNALS, G_BASE},

    {"read", K_IO, G_BASE},
    {"write", K_IO, G_BASE},
    {"readv", K_IO, G_BASE},
    {"writev", K_IO, G_BASE},
    {"pread64", K_IO, G_BASE},
    {"pwrite64", K_IO, G_BASE},
    {"preadv", K_IO, G_BASE},
    {"pwritev", K_IO, G_BASE},
    {"preadv2", K_IO, G_BASE},
    {"pwritev2", K_IO, G_BASE},
    {"lseek", K_IO, G_BASE},
    {"close", K_IO, G_BASE},
    {"close_range", K_IO, G_BASE},
    {"dup", K_IO, G_BASE},
    {"dup2", K_IO, G_BASE},
    {"dup3", K_IO, G_BASE},
    {"pipe", K_IO, G_BASE},
    {"pipe2", K_IO, G_BASE},
    {"poll", K_IO, G_BASE},
    {"ppoll", K_IO, G_BASE},
    {"select", K_IO, G_BASE},
    {"pselect6", K_IO, G_BASE},
    {"epoll_create", K_IO, G_BASE},
    {"epoll_create1", K_IO, G_BASE},
    {"epoll_ctl", K_IO, G_BASE},
    {"epoll_wait", K_IO, G_BASE},
    {"epoll_pwait", K_IO, G_BASE},
    {"epoll_pwait2", K_IO, G_BASE},
    {"sendfile", K_IO, G_BASE},
    {"copy_file_range", K_IO, G_BASE},
    {"splice", K_IO, G_BASE},
    {"tee", K_IO, G_BASE},
    {"fsync", K_IO, G_BASE},
    {"fdatasync", K_IO, G_BASE},
    {"sync_file_range", K_IO, G_BASE},
    {"fadvise64", K_IO, G_BASE},
    {"readahead", K_IO, G_BASE},
    {"flock", K_IO, G_BASE},
    /* A descriptor open for writing (Landlock or the file's mode decided
     * that when it was opened) may be cut or extended; fallocate():
     * add_fallocate(). */
    {"ftruncate", K_IO, G_BASE},

    {"stat", K_READ_FS, G_BASE},
    {"fstat", K_READ_FS, G_BASE},
    {"lstat", K_READ_FS, G_BASE},
    {"newfstatat", K_READ_FS, G_BASE},
    {"statx", K_READ_FS, G_BASE},
    {"statfs", K_READ_FS, G_BASE},
    {"fstatfs", K_READ_FS, G_BASE},
    {"access", K_READ_FS, G_BASE},
    {"faccessat", K_READ_FS, G_BASE},
    {"faccessat2", K_READ_FS, G_BASE},
    {"readlink", K_READ_FS, G_BASE},
    {"readlinkat", K_READ_FS, G_BASE},
    {"getdents", K_READ_FS, G_BASE},
    {"getdents64", K_READ_FS, G_BASE},
    {"getcwd", K_READ_FS, G_BASE},
    {"chdir", K_READ_FS, G_BASE},
    {"fchdir", K_READ_FS, G_BASE},
    {"getxattr", K_READ_FS, G_BASE},
    {"lgetxattr", K_READ_FS, G_BASE},
    {"fgetxattr", K_READ_FS, G_BASE},
    {"listxattr", K_READ_FS, G_BASE},
    {"llistxattr", K_READ_FS, G_BASE},
    {"flistxattr", K_READ_FS, G_BASE},

    {"bind", K_SOCKET_OPS, G_SOCKET},
    {"connect", K_SOCKET_OPS, G_SOCKET},
    {"listen", K_SOCKET_OPS, G_SOCKET},
    {"accept", K_SOCKET_OPS, G_SOCKET},
    {"accept4", K_SOCKET_OPS, G_SOCKET},
    {"getsockname", K_SOCKET_OPS, G_BASE},
    {"getpeername", K_SOCKET_OPS, G_BASE},
    {"sendto", K_SOCKET_OPS, G_BASE},
    {"recvfrom", K_SOCKET_OPS, G_BASE},
    {"sendmsg", K_SOCKET_OPS, G_BASE},
    {"recvmsg", K_SOCKET_OPS, G_BASE},
    {"sendmmsg", K_SOCKET_OPS, G_BASE},
    {"recvmmsg", K_SOCKET_OPS, G_BASE},
    {"shutdown", K_SOCKET_OPS, G_BASE},
    {"getsockopt", K_SOCKET_OPS, G_BASE},

    /* open, openat, openat2 and creat: add_open(). */
    {"mkdir", K_WRITE_FS, G_WRITE},
    {"mkdirat", K_WRITE_FS, G_WRITE},
    {"rmdir", K_WRITE_FS, G_WRITE},
    {"rename", K_WRITE_FS, G_WRITE},
    {"renameat", K_WRITE_FS, G_WRITE},
    {"renameat2", K_WRITE_FS, G_WRITE},
    {"link", K_WRITE_FS, G_WRITE},
    {"linkat", K_WRITE_FS, G_WRITE},
    {"symlink", K_WRITE_FS, G_WRITE},
    {"symlinkat", K_WRITE_FS, G_WRITE},
    {"unlink", K_WRITE_FS, G_WRITE},
    {"unlinkat", K_WRITE_FS, G_WRITE},
    {"mknod", K_WRITE_FS, G_WRITE}, /* FIFOs; device nodes need CAP_MKNOD */
    {"mknodat", K_WRITE_FS, G_WRITE},
    {"truncate", K_WRITE_FS, G_WRITE},
    {"sync", K_WRITE_FS, G_WRITE},
    {"syncfs", K_WRITE_FS, G_WRITE},

    /* chmod, fchmod, fchmodat, fchmodat2: add_chmod(). */
    {"chown", K_METADATA, G_WRITE},
    {"fchown", K_METADATA, G_WRITE},
    {"lchown", K_METADATA, G_WRITE},
    {"fchownat", K_METADATA, G_WRITE},
    {"utime", K_METADATA, G_WRITE},
    {"utimes", K_METADATA, G_WRITE},
    {"futimesat", K_METADATA, G_WRITE},
    {"utimensat", K_METADATA, G_WRITE},
    {"setxattr", K_METADATA, G_WRITE},
    {"lsetxattr", K_METADATA, G_WRITE},
    {"fsetxattr", K_METADATA, G_WRITE},
    {"removexattr", K_METADATA, G_WRITE},
    {"lremovexattr", K_METADATA, G_WRITE},
    {"fremovexattr", K_METADATA, G_WRITE},

    /* clone() of processes and the signals to other pids: add_clone(),
     * add_signals(). */
    {"fork", K_PROCESSES, G_FORK},
    {"vfork", K_PROCESSES, G_FORK},
    {"pidfd_open", K_PROCESSES, G_FORK},
    {"pidfd_send_signal", K_PROCESSES, G_FORK},
    {"tkill", K_PROCESSES, G_FORK},

    {"execve", K_EXEC, G_EXEC},
    {"execveat", K_EXEC, G_EXEC},
};

/* Refused whatever the profile grants; the reasons --explain gives, and what
 * the tests sweep. Not the list of what is refused (everything not allowed
 * is): the calls a reviewer will look for. Keep entries with the same reason
 * together: sb_seccomp_describe() prints one line per run of equal reasons. */
#define WHY_PROCESSES "reaching into other processes"
#define WHY_KERNEL    "kernel attack surface"
#define WHY_MOUNT     "mounts and namespaces"
#define WHY_SYSTEM    "system administration"
#define WHY_HW	      "direct hardware access, the process's own descriptor tables"
#define WHY_IPC	      "System V / POSIX IPC outlives the sandbox and is shared host-wide"
#define WHY_WATCH     "watching or stalling other programs' file accesses"
#define WHY_MEMORY    "memory outside limit-memory, NUMA placement"
#define WHY_PRIV      "identity and privileges"

static const struct refused {
	const char *name;
	const char *reason;
} refused_table[] = {
    {"ptrace", WHY_PROCESSES},
    {"process_vm_readv", WHY_PROCESSES},
    {"process_vm_writev", WHY_PROCESSES},
    {"pidfd_getfd", WHY_PROCESSES},
    {"kcmp", WHY_PROCESSES},
    {"process_madvise", WHY_PROCESSES},
    {"process_mrelease", WHY_PROCESSES},
    {"get_robust_list", WHY_PROCESSES},
    {"migrate_pages", WHY_PROCESSES},
    {"move_pages", WHY_PROCESSES},
    {"ioprio_set", WHY_PROCESSES},
    {"io_uring_setup", WHY_KERNEL}, /* also bypasses seccomp: its ops are not syscalls */
    {"io_uring_enter", WHY_KERNEL},
    {"io_uring_register", WHY_KERNEL},
    {"io_setup", WHY_KERNEL},
    {"io_submit", WHY_KERNEL},
    {"bpf", WHY_KERNEL},
    {"perf_event_open", WHY_KERNEL},
    {"userfaultfd", WHY_KERNEL}, /* stalls kernel copies: widens race windows */
    {"keyctl", WHY_KERNEL},	 /* keyrings are not namespaced */
    {"add_key", WHY_KERNEL},
    {"request_key", WHY_KERNEL},
    {"lookup_dcookie", WHY_KERNEL},
    {"open_by_handle_at", WHY_KERNEL}, /* escapes a chroot/bind mount (the "shocker" exploit) */
    {"name_to_handle_at", WHY_KERNEL},
    {"seccomp", WHY_KERNEL},
    {"landlock_create_ruleset", WHY_KERNEL},
    {"vmsplice", WHY_KERNEL},
    {"mount", WHY_MOUNT},
    {"umount2", WHY_MOUNT},
    {"pivot_root", WHY_MOUNT},
    {"chroot", WHY_MOUNT},
    {"unshare", WHY_MOUNT},
    {"setns", WHY_MOUNT},
    {"fsopen", WHY_MOUNT},
    {"fsconfig", WHY_MOUNT},
    {"fsmount", WHY_MOUNT},
    {"fspick", WHY_MOUNT},
    {"move_mount", WHY_MOUNT},
    {"open_tree", WHY_MOUNT},
    {"mount_setattr", WHY_MOUNT},
    {"init_module", WHY_SYSTEM},
    {"finit_module", WHY_SYSTEM},
    {"delete_module", WHY_SYSTEM},
    {"kexec_load", WHY_SYSTEM},
    {"kexec_file_load", WHY_SYSTEM},
    {"reboot", WHY_SYSTEM},
    {"swapon", WHY_SYSTEM},
    {"swapoff", WHY_SYSTEM},
    {"acct", WHY_SYSTEM},
    {"quotactl", WHY_SYSTEM},
    {"quotactl_fd", WHY_SYSTEM},
    {"syslog", WHY_SYSTEM},
    {"sethostname", WHY_SYSTEM},
    {"setdomainname", WHY_SYSTEM},
    {"settimeofday", WHY_SYSTEM},
    {"clock_settime", WHY_SYSTEM},
    {"clock_adjtime", WHY_SYSTEM},
    {"adjtimex", WHY_SYSTEM},
    {"vhangup", WHY_SYSTEM},
    {"iopl", WHY_HW},
    {"ioperm", WHY_HW},
    {"modify_ldt", WHY_HW},
    {"vm86", WHY_HW},
    {"vm86old", WHY_HW},
    {"set_thread_area", WHY_HW},
    {"shmget", WHY_IPC},
    {"shmat", WHY_IPC},
    {"shmctl", WHY_IPC},
    {"shmdt", WHY_IPC},
    {"msgget", WHY_IPC},
    {"msgsnd", WHY_IPC},
    {"msgrcv", WHY_IPC},
    {"msgctl", WHY_IPC},
    {"semget", WHY_IPC},
    {"semop", WHY_IPC},
    {"semtimedop", WHY_IPC},
    {"semctl", WHY_IPC},
    {"mq_open", WHY_IPC},
    {"mq_unlink", WHY_IPC},
    {"mq_timedsend", WHY_IPC},
    {"mq_timedreceive", WHY_IPC},
    {"mq_notify", WHY_IPC},
    {"mq_getsetattr", WHY_IPC},
    {"fanotify_init", WHY_WATCH},
    {"fanotify_mark", WHY_WATCH},
    {"inotify_init", WHY_WATCH},
    {"inotify_init1", WHY_WATCH},
    {"inotify_add_watch", WHY_WATCH},
    {"memfd_create", WHY_MEMORY},
    {"memfd_secret", WHY_MEMORY},
    {"mlock", WHY_MEMORY},
    {"mlock2", WHY_MEMORY},
    {"mlockall", WHY_MEMORY},
    {"remap_file_pages", WHY_MEMORY},
    {"mbind", WHY_MEMORY},
    {"set_mempolicy", WHY_MEMORY},
    {"setuid", WHY_PRIV},
    {"setgid", WHY_PRIV},
    {"setreuid", WHY_PRIV},
    {"setregid", WHY_PRIV},
    {"setresuid", WHY_PRIV},
    {"setresgid", WHY_PRIV},
    {"setfsuid", WHY_PRIV},
    {"setfsgid", WHY_PRIV},
    {"setgroups", WHY_PRIV},
    {"capset", WHY_PRIV},
};

/* clone() flags that create namespaces (unshare and setns are refused). In
 * clone(), CLONE_NEWTIME shares its bit with the exit signal, which no valid
 * signal sets (signals stop at 64), so refusing it costs nothing. */
#define CLONE_NS_FLAGS                                                                             \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |             \
	 CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME)

/* ioctl requests on the descriptors a program holds: terminal attributes and
 * size (isatty, the REPL's line editing, os.get_terminal_size), bytes queued,
 * non-blocking and close-on-exec, pseudo-terminals it opened. Never TIOCSTI
 * (pushes input into the terminal the sandbox was started from) or
 * TIOCLINUX (reads the console's screen). */
static const struct {
	unsigned long cmd;
	const char *name;
} ioctl_table[] = {
    {TCGETS, "TCGETS"},	      {TCSETS, "TCSETS"},	  {TCSETSW, "TCSETSW"},
    {TCSETSF, "TCSETSF"},     {TCFLSH, "TCFLSH"},	  {TIOCGWINSZ, "TIOCGWINSZ"},
    {TIOCGPGRP, "TIOCGPGRP"}, {TIOCOUTQ, "TIOCOUTQ"},	  {FIONREAD, "FIONREAD"},
    {FIONBIO, "FIONBIO"},     {FIOCLEX, "FIOCLEX"},	  {FIONCLEX, "FIONCLEX"},
    {TIOCGPTN, "TIOCGPTN"},   {TIOCSPTLCK, "TIOCSPTLCK"}, {TIOCGPTPEER, "TIOCGPTPEER"},
};

/* fcntl commands: not F_SETOWN/F_SETOWN_EX/F_SETSIG (SIGIO sent to another
 * process, with the setter's credentials: a uid 0 without capabilities
 * could signal every process), F_SETLEASE (stalls other processes' opens of
 * the file) or F_NOTIFY (directory notification by signal). The guard holds
 * fcntl.fcntl() to the same list (guard-native-files.c, fcntl_allowed):
 * keep the two in step. */
static const struct {
	unsigned cmd;
	const char *name;
} fcntl_table[] = {
    {F_DUPFD, "F_DUPFD"},
    {F_GETFD, "F_GETFD"},
    {F_SETFD, "F_SETFD"},
    {F_GETFL, "F_GETFL"},
    {F_SETFL, "F_SETFL"},
    {F_GETLK, "F_GETLK"},
    {F_SETLK, "F_SETLK"},
    {F_SETLKW, "F_SETLKW"},
    {F_GETOWN, "F_GETOWN"},
    {F_GETSIG, "F_GETSIG"},
    {F_GETOWN_EX, "F_GETOWN_EX"},
    {F_OFD_GETLK, "F_OFD_GETLK"},
    {F_OFD_SETLK, "F_OFD_SETLK"},
    {F_OFD_SETLKW, "F_OFD_SETLKW"},
    {F_GETLEASE, "F_GETLEASE"},
    {F_DUPFD_CLOEXEC, "F_DUPFD_CLOEXEC"},
    {F_SETPIPE_SZ, "F_SETPIPE_SZ"},
    {F_GETPIPE_SZ, "F_GETPIPE_SZ"},
    {F_ADD_SEALS, "F_ADD_SEALS"},
    {F_GET_SEALS, "F_GET_SEALS"},
    {F_GET_RW_HINT, "F_GET_RW_HINT"},
    {F_SET_RW_HINT, "F_SET_RW_HINT"},
};

/* prctl options that only read the process's state or set harmless
 * properties of itself. Not PR_SET_MM (rewrites what /proc shows of the
 * process, its auxv and its brk), PR_SET_DUMPABLE (would let other processes
 * of the uid ptrace it), PR_SET_PTRACER, PR_SET_SECCOMP, PR_SET_SECUREBITS,
 * PR_SET_KEEPCAPS, PR_CAP_AMBIENT, PR_CAPBSET_DROP, PR_SET_IO_FLUSHER,
 * PR_SET_SYSCALL_USER_DISPATCH... Nor PR_SET_PDEATHSIG, for every policy:
 * the parent-death signal python-sb sets is what ends the program when
 * the process it must not outlive dies — the timeout supervisor, the
 * partial-mode caller (src/worker/worker.c) — and the program would clear
 * it (0, or a signal it ignores) to outlive them. A program's wish to have
 * a child of its own die with it is no need worth that (the PID namespace
 * of unshare, bwrap, firejail takes the children anyway). */
static const struct {
	unsigned option;
	const char *name;
} prctl_table[] = {
    {PR_GET_PDEATHSIG, "PR_GET_PDEATHSIG"},
    {PR_GET_DUMPABLE, "PR_GET_DUMPABLE"},
    {PR_GET_KEEPCAPS, "PR_GET_KEEPCAPS"},
    {PR_SET_NAME, "PR_SET_NAME"},
    {PR_GET_NAME, "PR_GET_NAME"},
    {PR_GET_SECCOMP, "PR_GET_SECCOMP"},
    {PR_CAPBSET_READ, "PR_CAPBSET_READ"},
    {PR_SET_TIMERSLACK, "PR_SET_TIMERSLACK"},
    {PR_GET_TIMERSLACK, "PR_GET_TIMERSLACK"},
    {PR_GET_SECUREBITS, "PR_GET_SECUREBITS"},
    {PR_SET_CHILD_SUBREAPER, "PR_SET_CHILD_SUBREAPER"},
    {PR_GET_CHILD_SUBREAPER, "PR_GET_CHILD_SUBREAPER"},
    {PR_SET_NO_NEW_PRIVS, "PR_SET_NO_NEW_PRIVS"},
    {PR_GET_NO_NEW_PRIVS, "PR_GET_NO_NEW_PRIVS"},
    {PR_GET_TID_ADDRESS, "PR_GET_TID_ADDRESS"},
    {PR_SET_THP_DISABLE, "PR_SET_THP_DISABLE"},
    {PR_GET_THP_DISABLE, "PR_GET_THP_DISABLE"},
    {PR_GET_SPECULATION_CTRL, "PR_GET_SPECULATION_CTRL"},
    {PR_SET_SPECULATION_CTRL, "PR_SET_SPECULATION_CTRL"},
    {PR_SET_VMA, "PR_SET_VMA"},
};

/* setsockopt(SOL_SOCKET, ...) options that attach a classic or eBPF program
 * to a socket: a verifier and JIT the program has no business reaching. */
static const unsigned socket_option_refused[] = {
    SO_ATTACH_FILTER, SO_ATTACH_BPF, SO_ATTACH_REUSEPORT_CBPF, SO_ATTACH_REUSEPORT_EBPF};
/* setsockopt() levels besides SOL_SOCKET: the protocols socket() allows. */
static const unsigned socket_levels[] = {IPPROTO_IP, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_IPV6};

/* "this process": the sched_* setters, prlimit64, setpriority take pid 0 or
 * its pid. The sched_* getters stay open (in allowed_table): glibc passes
 * them the kernel ids of the process's own threads (pthread_getattr_np,
 * pthread_getschedparam), which no filter can tell from other pids. */
static const char *const self_pid_calls[] = {
    "sched_setaffinity",
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
};

/* Reading another process's process group, session, limits (pid first) or
 * nice value (pid second): the process grants only. Without them, what the
 * program may learn of the host's processes stops at itself. */
static const char *const self_pid_readers[] = {"getpgid", "getsid"};

static void sb_scmp_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

const char *sb_seccomp_base_syscall(size_t i)
{
	for (size_t k = 0; k < ELEMENTSOF(allowed_table); k++)
		if (allowed_table[k].grant == G_BASE && i-- == 0)
			return allowed_table[k].name;
	return NULL;
}

const char *sb_seccomp_refused_syscall(size_t i)
{
	return i < ELEMENTSOF(refused_table) ? refused_table[i].name : NULL;
}

/* The native number, or -1 when this architecture has no such syscall
 * (libseccomp then answers __NR_SCMP_ERROR, or a negative pseudo-number for
 * the syscalls of other architectures). */
static int resolve(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	return nr < 0 ? -1 : nr;
}

/* What build() needs besides the policy. */
struct build_ctx {
	scmp_filter_ctx ctx;
	uint64_t self;		    /* the pid, or SB_SECCOMP_SELF_PID */
	uint64_t timers[2];	    /* watchdog.h's, SB_SECCOMP_TIMER_*, or _NO_TIMER */
	const char *const *observe; /* learning: notified whatever the rules say */
	char **reterr;
};

static bool observed(const struct build_ctx *b, const char *name)
{
	for (const char *const *o = b->observe; o && *o; o++)
		if (streq(*o, name))
			return true;
	return false;
}

/* One rule; its comparisons are ANDed (libseccomp 2.5 refuses two of them on
 * the same argument with -EINVAL). The _exact variant fails instead of
 * silently rewriting the rule. */
static int rule(struct build_ctx *b, uint32_t action, const char *name, unsigned n_cmp,
		const struct scmp_arg_cmp *cmp)
{
	int nr = resolve(name), r;

	if (nr < 0 || observed(b, name))
		return 0;
	r = seccomp_rule_add_exact_array(b->ctx, action, nr, n_cmp, cmp);
	if (r < 0)
		return sb_error(b->reterr, r, "seccomp_rule_add_exact(%s): %s", name, strerror(-r));
	return 0;
}

static int allow(struct build_ctx *b, const char *name, unsigned n_cmp,
		 const struct scmp_arg_cmp *cmp)
{
	return rule(b, SCMP_ACT_ALLOW, name, n_cmp, cmp);
}

/* Allows `name` when argument `arg`, masked with `mask`, lies in [lo, hi]
 * (hi <= mask; mask is 2^k - 1). A rule cannot hold two comparisons on one
 * argument, so the range is cut into aligned power-of-two blocks, each one
 * MASKED_EQ: [3, 9] becomes 3, 4-7, 8-9. `also` (n_also of them, on other
 * arguments) is ANDed to each rule. */
static int allow_range(struct build_ctx *b, const char *name, unsigned arg, uint64_t mask,
		       uint64_t lo, uint64_t hi, const struct scmp_arg_cmp *also, unsigned n_also)
{
	while (lo <= hi) {
		struct scmp_arg_cmp cmp[3];
		uint64_t size = 1;
		int r;

		while (size <= mask / 2 && lo % (size * 2) == 0 && lo + size * 2 - 1 <= hi)
			size *= 2;
		cmp[0] = (struct scmp_arg_cmp){arg, SCMP_CMP_MASKED_EQ, mask & ~(size - 1), lo};
		for (unsigned i = 0; i < n_also && i < 2; i++)
			cmp[1 + i] = also[i];
		r = allow(b, name, 1 + n_also, cmp);
		if (r < 0)
			return r;
		if (hi - lo < size)
			break;
		lo += size;
	}
	return 0;
}

/* Allows `name` when the low 32 bits of argument `arg` are one of values[],
 * each ANDed with `also`. */
static int allow_values32(struct build_ctx *b, const char *name, unsigned arg,
			  const uint64_t *values, size_t n, const struct scmp_arg_cmp *also,
			  unsigned n_also)
{
	for (size_t i = 0; i < n; i++) {
		struct scmp_arg_cmp cmp[3] = {{arg, SCMP_CMP_MASKED_EQ, MASK32, values[i]}};
		int r;

		for (unsigned k = 0; k < n_also && k < 2; k++)
			cmp[1 + k] = also[k];
		r = allow(b, name, 1 + n_also, cmp);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool granted(const struct sb_seccomp_policy *p, enum grant g)
{
	switch (g) {
	case G_BASE:
		return true;
	case G_SOCKET:
		return p->allow_inet || p->allow_unix_socket;
	case G_WRITE:
		return p->allow_write;
	case G_FORK:
		return p->allow_fork;
	case G_EXEC:
		return p->allow_exec;
	}
	return false;
}

static int add_open(struct build_ctx *b, const struct sb_seccomp_policy *policy)
{
	/* Read-only opens: no write access, no O_CREAT, O_TRUNC (which
	 * truncates even with O_RDONLY) or O_TMPFILE. The flags are an int:
	 * the mask has no bit above 31. */
	const uint64_t writes = O_ACCMODE | O_CREAT | O_TRUNC | O_TMPFILE_BIT;
	const struct scmp_arg_cmp open_ro = SCMP_A1(SCMP_CMP_MASKED_EQ, writes, 0);
	const struct scmp_arg_cmp openat_ro = SCMP_A2(SCMP_CMP_MASKED_EQ, writes, 0);
	int r;

	/* With Landlock, the kernel checks each path against the grants
	 * (/dev/null and expose-rw directories are writable, nothing else):
	 * the flags need no second look, and open(os.devnull, "w"), which
	 * asks for O_CREAT | O_TRUNC, keeps working without an expose-rw
	 * rule. Without Landlock nothing checks paths: writing needs one. */
	if (policy->allow_write || policy->landlock) {
		r = allow(b, "open", 0, NULL);
		if (r >= 0)
			r = allow(b, "openat", 0, NULL);
		if (r >= 0)
			r = allow(b, "openat2", 0, NULL);
		return r < 0 ? r : allow(b, "creat", 0, NULL);
	}
	r = allow(b, "open", 1, &open_ro);
	if (r >= 0)
		r = allow(b, "openat", 1, &openat_ro);
	/* openat2 passes its flags in memory: ENOSYS, and libc uses openat. */
	if (r >= 0)
		r = rule(b, SCMP_ACT_ERRNO(ENOSYS), "openat2", 0, NULL);
	return r;
}

static int add_clone(struct build_ctx *b, const struct sb_seccomp_policy *policy)
{
	/* clone() takes unsigned long flags but the kernel reads the low 32
	 * bits: the masks below have no bit above 31. Threads only, without
	 * the process grants: CLONE_THREAD requires CLONE_SIGHAND, which
	 * requires CLONE_VM, so what passes is a thread of this process. */
	const struct scmp_arg_cmp threads =
	    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NS_FLAGS | CLONE_THREAD, CLONE_THREAD);
	const struct scmp_arg_cmp any = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NS_FLAGS, 0);
	int r;

	/* clone3 passes its flags in memory, where seccomp cannot look; with
	 * ENOSYS glibc retries with clone(), whose flags are in a register. */
	r = rule(b, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	if (r >= 0)
		r = allow(b, "clone", 1, policy->allow_fork ? &any : &threads);
	return r;
}

/* Signals: to itself only, unless the program may start processes (then to
 * any pid but -1, "every process it may signal"). Landlock's signal scoping
 * (ABI 6) confines them to the sandbox under os-sandbox=landlock. */
static int add_signals(struct build_ctx *b, const struct sb_seccomp_policy *policy)
{
	static const char *const self_target[] = {"kill", "tgkill", "rt_sigqueueinfo",
						  "rt_tgsigqueueinfo"};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(self_target); i++) {
		if (policy->allow_fork && i == 0)
			/* pid_t is an int: -1 is 0xffffffff in the low half. */
			r = allow_range(b, "kill", 0, MASK32, 0, MASK32 - 1, NULL, 0);
		else if (policy->allow_fork)
			r = allow(b, self_target[i], 0, NULL);
		else
			r = allow_values32(b, self_target[i], 0, &b->self, 1, NULL, 0);
	}
	return r;
}

/* The sched_* setters, prlimit64, setpriority: pid 0 or the process's own;
 * with the process grants, reading any pid's process group, session, limits
 * and nice value (its children's). */
static int add_self_pid_calls(struct build_ctx *b, const struct sb_seccomp_policy *policy)
{
	const uint64_t self[] = {0, b->self};
	const struct scmp_arg_cmp prio_process = SCMP_A0(SCMP_CMP_MASKED_EQ, MASK32, PRIO_PROCESS);
	const struct scmp_arg_cmp read_only = SCMP_A2(SCMP_CMP_EQ, 0);
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(self_pid_calls); i++)
		r = allow_values32(b, self_pid_calls[i], 0, self, ELEMENTSOF(self), NULL, 0);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(self_pid_readers); i++)
		r = policy->allow_fork ? allow(b, self_pid_readers[i], 0, NULL)
				       : allow_values32(b, self_pid_readers[i], 0, self,
							ELEMENTSOF(self), NULL, 0);
	if (r >= 0 && policy->allow_fork)
		r = allow(b, "getpriority", 0, NULL);
	else if (r >= 0)
		r = allow_values32(b, "getpriority", 1, self, ELEMENTSOF(self), &prio_process, 1);
	/* prlimit64(pid, resource, new, old): reading (new == NULL) is what
	 * the kernel already limits to processes of the same uid. */
	if (r >= 0 && policy->allow_fork)
		r = allow(b, "prlimit64", 1, &read_only);
	if (r >= 0)
		r = allow_values32(b, "prlimit64", 0, self, ELEMENTSOF(self), NULL, 0);
	if (r >= 0)
		r = allow_values32(b, "setpriority", 1, self, ELEMENTSOF(self), &prio_process, 1);
	return r;
}

/* timer_settime, timer_delete: any timer of the process but timeout='s two
 * (watchdog.h), which fail with EINVAL, as timers it does not have. The id
 * is an int: compared on the low 32 bits the kernel reads, and an id with
 * high bits set is refused. */
static int add_timers(struct build_ctx *b)
{
	static const char *const changes[] = {"timer_settime", "timer_delete"};
	const struct scmp_arg_cmp an_int = SCMP_A0(SCMP_CMP_MASKED_EQ, ~(uint64_t)MASK32, 0);
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(changes); i++) {
		for (size_t t = 0; r >= 0 && t < ELEMENTSOF(b->timers); t++) {
			const struct scmp_arg_cmp timer =
			    SCMP_A0(SCMP_CMP_MASKED_EQ, MASK32, b->timers[t]);

			if (t == 0 || b->timers[t] != b->timers[0])
				r = rule(b, SCMP_ACT_ERRNO(EINVAL), changes[i], 1, &timer);
		}
		if (r >= 0)
			r = allow(b, changes[i], 1, &an_int);
	}
	return r;
}

static int add_ioctl_fcntl_prctl(struct build_ctx *b)
{
	int r = 0;

	/* The kernel declares ioctl's cmd as unsigned int, so it only looks at
	 * the low 32 bits of the register: a 64-bit equality on an allowed
	 * request would be harmless, but a denylist compared that way let
	 * TIOCSTI | 1UL << 32 through (CVE-2017-5226, bubblewrap's TIOCSTI
	 * escape, had this shape); masking keeps the two views the same. */
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(ioctl_table); i++) {
		const uint64_t v = ioctl_table[i].cmd & MASK32;

		r = allow_values32(b, "ioctl", 1, &v, 1, NULL, 0);
	}
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(fcntl_table); i++) {
		const uint64_t v = fcntl_table[i].cmd;

		r = allow_values32(b, "fcntl", 1, &v, 1, NULL, 0);
	}
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(prctl_table); i++) {
		const uint64_t v = prctl_table[i].option;

		r = allow_values32(b, "prctl", 0, &v, 1, NULL, 0);
	}
	/* personality(2): exactly PER_LINUX (0) and the 0xffffffff query; the
	 * flags (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO...)
	 * weaken what runs next. The kernel takes an unsigned int. */
	if (r >= 0) {
		const uint64_t personas[] = {0, MASK32};

		r = allow_values32(b, "personality", 0, personas, ELEMENTSOF(personas), NULL, 0);
	}
	return r;
}

/* The chmod family, with an expose-rw rule: any mode but the set-user-ID
 * and set-group-ID bits. A file the program writes and marks set-id outlives
 * the sandbox: anyone who may run it from the expose-rw directory runs it as
 * the sandbox's user (uid 0 without capabilities still owns what it
 * creates: a setuid-root binary). Creating a file with those bits and then
 * filling it does not work (the kernel clears them on the first write
 * without CAP_FSETID). The mode is a umode_t: only its low 16 bits count,
 * which the mask stays within. fchmodat2 (newer glibc's lchmod()) is unknown
 * to libseccomp 2.5.4. Entries: the call, the mode's argument. */
static const struct {
	const char *name;
	unsigned arg;
} chmod_calls[] = {{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}};

static int add_chmod(struct build_ctx *b, const struct sb_seccomp_policy *policy)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && policy->allow_write && i < ELEMENTSOF(chmod_calls); i++) {
		const struct scmp_arg_cmp no_setid = {chmod_calls[i].arg, SCMP_CMP_MASKED_EQ,
						      S_ISUID | S_ISGID, 0};

		r = allow(b, chmod_calls[i].name, 1, &no_setid);
	}
	return r;
}

/* fallocate(fd, mode, ...): mode 0 (posix_fallocate(), which extends the
 * file as a write would: RLIMIT_FSIZE holds) and punching a hole (frees
 * blocks). Not FALLOC_FL_KEEP_SIZE on its own or with ZERO_RANGE or
 * UNSHARE_RANGE: blocks past the end of the file, which no size limit sees
 * (limit-file-size=1MB let a 0-byte file hold 200 MB of disk), nor
 * INSERT_RANGE. The mode is an int. */
static int add_fallocate(struct build_ctx *b)
{
	const uint64_t modes[] = {0, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE};

	return allow_values32(b, "fallocate", 1, modes, ELEMENTSOF(modes), NULL, 0);
}

static int add_sockets(struct build_ctx *b, const struct sb_seccomp_policy *policy)
{
	static const int inet_domains[] = {AF_INET, AF_INET6};
	int r;

	/* An unnamed pair reaches nothing outside the process (asyncio's
	 * self-pipe, multiprocessing): AF_UNIX only, and connected for good: a
	 * datagram pair's socket can be pointed anywhere with connect() or
	 * sendto(path) (the host's /dev/log, a daemon's control socket), which
	 * Landlock does not check for named sockets; a stream or seqpacket
	 * pair's cannot (EISCONN). Datagram pairs only where AF_UNIX sockets are
	 * allowed anyway. The domain is an int; the type carries SOCK_NONBLOCK
	 * and SOCK_CLOEXEC above SOCK_TYPE_MASK (0xf). */
	{
		const struct scmp_arg_cmp unix_domain =
		    SCMP_A0(SCMP_CMP_MASKED_EQ, MASK32, AF_UNIX);
		const uint64_t pair_types[] = {SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM};
		const size_t n_types = policy->allow_unix_socket ? 3 : 2;

		r = 0;
		for (size_t i = 0; r >= 0 && i < n_types; i++)
			r = allow_range(b, "socketpair", 1, 0xf, pair_types[i], pair_types[i],
					&unix_domain, 1);
	}
	/* socket(): allowed domains only, compared on all 64 bits (a value
	 * the kernel would truncate to an allowed domain is refused: an
	 * allowlist fails closed). AF_NETLINK, AF_PACKET, AF_VSOCK, AF_ALG,
	 * AF_KEY and the rest are refused even with every grant. */
	if (r >= 0 && policy->allow_unix_socket)
		r = allow(b, "socket", 1, &SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	/* net= rules speak of TCP and UDP only: SOCK_STREAM with protocol 0 or
	 * TCP, plus SOCK_DGRAM with 0 or UDP with a udp rule. SOCK_RAW (root in
	 * a container could craft UDP with it), SOCK_SEQPACKET, SCTP and MPTCP
	 * (SOCK_STREAM with their own protocol numbers) are refused. The type
	 * carries SOCK_NONBLOCK and SOCK_CLOEXEC above SOCK_TYPE_MASK (0xf),
	 * which is what the kernel looks at. */
	for (size_t i = 0; r >= 0 && policy->allow_inet && i < ELEMENTSOF(inet_domains); i++) {
		const struct {
			int type, protocol;
		} kinds[] = {{SOCK_STREAM, 0},
			     {SOCK_STREAM, IPPROTO_TCP},
			     {SOCK_DGRAM, 0},
			     {SOCK_DGRAM, IPPROTO_UDP}};

		for (size_t k = 0; r >= 0 && k < ELEMENTSOF(kinds); k++) {
			if (kinds[k].type == SOCK_DGRAM && !policy->allow_udp)
				continue;
			const struct scmp_arg_cmp cmp[3] = {
			    SCMP_A0(SCMP_CMP_EQ, inet_domains[i]),
			    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, kinds[k].type),
			    SCMP_A2(SCMP_CMP_MASKED_EQ, MASK32, kinds[k].protocol),
			};
			r = allow(b, "socket", 3, cmp);
		}
	}
	/* setsockopt(): the protocol levels above, and SOL_SOCKET without the
	 * options that attach BPF programs. */
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(socket_levels); i++) {
		const uint64_t v = socket_levels[i];

		r = allow_values32(b, "setsockopt", 1, &v, 1, NULL, 0);
	}
	if (r >= 0) {
		const struct scmp_arg_cmp level = SCMP_A1(SCMP_CMP_MASKED_EQ, MASK32, SOL_SOCKET);
		uint64_t next = 0; /* lowest option not decided yet (sorted table) */

		for (size_t i = 0; r >= 0 && i < ELEMENTSOF(socket_option_refused); i++) {
			if (socket_option_refused[i] > next)
				r = allow_range(b, "setsockopt", 2, MASK32, next,
						socket_option_refused[i] - 1, &level, 1);
			next = socket_option_refused[i] + 1;
		}
		if (r >= 0)
			r = allow_range(b, "setsockopt", 2, MASK32, next, MASK32, &level, 1);
	}
	return r;
}

/* Every number above the last one libseccomp names, below the bound: ENOSYS. */
static int add_unknown_syscalls(struct build_ctx *b)
{
	int last = -1;

	for (int nr = 0; nr < SB_SECCOMP_NR_BOUND; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

		if (name)
			last = nr;
		free(name);
	}
	for (int nr = last + 1; nr < SB_SECCOMP_NR_BOUND; nr++) {
		int r = seccomp_rule_add_exact(b->ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);

		if (r < 0)
			return sb_error(b->reterr, r, "seccomp_rule_add_exact(syscall %d): %s", nr,
					strerror(-r));
	}
	return 0;
}

/* Learning: the observed calls go to the helper whatever their arguments,
 * through the default action (no rule of theirs was added); sendto() only
 * with a destination (the datagrams of an unconnected socket): without one
 * it stays allowed. */
static int add_observed(struct build_ctx *b)
{
	for (const char *const *o = b->observe; *o; o++) {
		int nr = resolve(*o), r;

		if (nr < 0 || !streq(*o, "sendto"))
			continue;
		r = seccomp_rule_add_exact(b->ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A4(SCMP_CMP_EQ, 0));
		if (r < 0)
			return sb_error(b->reterr, r, "seccomp_rule_add_exact(%s): %s", *o,
					strerror(-r));
	}
	return 0;
}

static int set_attr(scmp_filter_ctx ctx, enum scmp_filter_attr attr, uint32_t value,
		    const char *attr_name, char **reterr)
{
	int r = seccomp_attr_set(ctx, attr, value);

	if (r < 0)
		return sb_error(reterr, r, "seccomp_attr_set(%s): %s", attr_name, strerror(-r));
	return 0;
}

/* The libseccomp context of a policy, ready to load or export; `refuse` is
 * what happens to everything the list does not allow. */
static int build(const struct sb_seccomp_policy *policy, uint32_t self_pid,
		 const uint32_t timers[2], uint32_t refuse, const char *const *observe,
		 scmp_filter_ctx *ret, char **reterr)
{
	_cleanup_(sb_scmp_releasep) scmp_filter_ctx ctx = NULL;
	struct build_ctx b = {
	    .self = self_pid,
	    .timers = {timers[0], timers[1]},
	    .observe = observe,
	    .reterr = reterr,
	};
	int r;

	if (!policy)
		return sb_error(reterr, -EINVAL, "sb_seccomp_apply: no policy");

	ctx = seccomp_init(refuse);
	if (!ctx)
		return sb_error(reterr, -ENOMEM, "seccomp_init: out of memory");
	b.ctx = ctx;

	/* The filter only lists x86_64 numbers. A 64-bit process can still
	 * enter the kernel through the i386 ABI (int $0x80: different numbers,
	 * ptrace is 26 there, not 101) or the x32 ABI (numbers with bit 30
	 * set): a native-only filter would let those through untouched. The
	 * filter first checks the arch field, and x32 numbers on the x86_64
	 * arch, and kills the whole process for anything foreign; no Python
	 * program makes such calls. */
	r = set_attr(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS, "ACT_BADARCH", reterr);
	/* no_new_privs: required to load a filter without CAP_SYS_ADMIN, and
	 * keeps a setuid binary from running under a filter it did not expect. */
	if (r >= 0)
		r = set_attr(ctx, SCMP_FLTATR_CTL_NNP, 1, "CTL_NNP", reterr);
	/* Every thread, in case a library started one before us; fails (rather
	 * than leaving a thread unfiltered) if that is impossible. */
	if (r >= 0)
		r = set_attr(ctx, SCMP_FLTATR_CTL_TSYNC, 1, "CTL_TSYNC", reterr);
	if (r < 0)
		return r;
	/* Best effort, not security relevant: the kernel's errno from
	 * seccomp_load() rather than -ECANCELED, and a binary tree over the
	 * syscall numbers instead of a linear scan of some 250 of them. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(allowed_table); i++)
		if (granted(policy, allowed_table[i].grant))
			r = allow(&b, allowed_table[i].name, 0, NULL);
	if (r >= 0)
		r = add_open(&b, policy);
	if (r >= 0)
		r = add_clone(&b, policy);
	if (r >= 0)
		r = add_signals(&b, policy);
	if (r >= 0)
		r = add_self_pid_calls(&b, policy);
	if (r >= 0)
		r = add_timers(&b);
	if (r >= 0)
		r = add_ioctl_fcntl_prctl(&b);
	if (r >= 0)
		r = add_fallocate(&b);
	if (r >= 0)
		r = add_chmod(&b, policy);
	if (r >= 0)
		r = add_sockets(&b, policy);
	if (r >= 0)
		r = add_unknown_syscalls(&b);
	if (r >= 0 && observe)
		r = add_observed(&b);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(ctx);
	return 0;
}

/* The ids of the timers to protect, SB_SECCOMP_NO_TIMER for the others. */
static void protected_timers(const struct sb_seccomp_self *self, uint32_t ret[2])
{
	for (unsigned i = 0; i < 2; i++)
		ret[i] = self && i < self->n_timers && self->timers[i] >= 0
			     ? (uint32_t)self->timers[i]
			     : SB_SECCOMP_NO_TIMER;
}

int sb_seccomp_apply_dynamic(const struct sb_seccomp_policy *policy,
			     const struct sb_seccomp_self *self, char **reterr)
{
	_cleanup_(sb_scmp_releasep) scmp_filter_ctx ctx = NULL;
	uint32_t timers[2];
	int r;

	protected_timers(self, timers);
	r = build(policy, (uint32_t)getpid(), timers, SCMP_ACT_ERRNO(EPERM), NULL, &ctx, reterr);
	if (r < 0)
		return r;
	r = seccomp_load(ctx);
	if (r < 0)
		return sb_error(reterr, r, "seccomp_load: %s", strerror(-r));
	return 0;
}

int sb_seccomp_apply_notify(const struct sb_seccomp_policy *policy, const char *const *observe,
			    int *ret_fd, char **reterr)
{
	_cleanup_(sb_scmp_releasep) scmp_filter_ctx ctx = NULL;
	int r, fd;

	r = build(policy, (uint32_t)getpid(),
		  (const uint32_t[2]){SB_SECCOMP_NO_TIMER, SB_SECCOMP_NO_TIMER}, SCMP_ACT_NOTIFY,
		  observe, &ctx, reterr);
	if (r < 0)
		return r;
	r = seccomp_load(ctx);
	if (r < 0)
		return sb_error(reterr, r, "seccomp_load: %s", strerror(-r));
	/* libseccomp keeps the number in its global state too, but closes it
	 * only in seccomp_reset(NULL), which python-sb never calls. */
	fd = seccomp_notify_fd(ctx);
	if (fd < 0) /* loaded, and nobody can answer: nothing may run */
		return sb_error(reterr, -EPIPE, "seccomp_notify_fd: %s", strerror(-fd));
	*ret_fd = fd;
	return 0;
}

int sb_seccomp_export(const struct sb_seccomp_policy *policy, int fd, char **reterr)
{
	_cleanup_(sb_scmp_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	r = build(policy, SB_SECCOMP_SELF_PID,
		  (const uint32_t[2]){SB_SECCOMP_TIMER_0, SB_SECCOMP_TIMER_1},
		  SCMP_ACT_ERRNO(EPERM), NULL, &ctx, reterr);
	if (r < 0)
		return r;
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return sb_error(reterr, r, "seccomp_export_bpf: %s", strerror(-r));
	return 0;
}

size_t sb_seccomp_patch_self_pid(void *insns, size_t n_insns, uint32_t pid)
{
	struct sock_filter *f = insns;
	size_t n = 0;

	for (size_t i = 0; i < n_insns; i++)
		if (f[i].code == (BPF_JMP | BPF_JEQ | BPF_K) && f[i].k == SB_SECCOMP_SELF_PID) {
			f[i].k = pid;
			n++;
		}
	return n;
}

size_t sb_seccomp_patch_timers(void *insns, size_t n_insns, const struct sb_seccomp_self *self)
{
	const uint32_t placeholders[2] = {SB_SECCOMP_TIMER_0, SB_SECCOMP_TIMER_1};
	struct sock_filter *f = insns;
	uint32_t timers[2];
	size_t n = 0;

	protected_timers(self, timers);
	for (size_t i = 0; i < n_insns; i++)
		for (size_t t = 0; t < ELEMENTSOF(placeholders); t++)
			if (f[i].code == (BPF_JMP | BPF_JEQ | BPF_K) && f[i].k == placeholders[t]) {
				f[i].k = timers[t];
				n++;
				break;
			}
	return n;
}

unsigned sb_seccomp_policy_key(const struct sb_seccomp_policy *policy)
{
	/* UDP without inet sockets means nothing: one key for both. */
	return (policy->allow_inet ? 1u : 0u) |
	       (policy->allow_inet && policy->allow_udp ? 2u : 0u) |
	       (policy->allow_unix_socket ? 4u : 0u) | (policy->allow_exec ? 8u : 0u) |
	       (policy->allow_fork ? 16u : 0u) | (policy->allow_write ? 32u : 0u) |
	       /* With allow_write, open() is unrestricted either way. */
	       (policy->landlock && !policy->allow_write ? 64u : 0u);
}

void sb_seccomp_policy_from_key(unsigned key, struct sb_seccomp_policy *ret)
{
	*ret = (struct sb_seccomp_policy){
	    .allow_inet = key & 1u,
	    .allow_udp = (key & 1u) && (key & 2u),
	    .allow_unix_socket = key & 4u,
	    .allow_exec = key & 8u,
	    .allow_fork = key & 16u,
	    .allow_write = key & 32u,
	    .landlock = (key & 64u) && !(key & 32u),
	};
}

enum sb_seccomp_need sb_seccomp_rule_for(int nr, const uint64_t args[6], const char **ret_rule)
{
	static const enum sb_seccomp_need of_grant[] = {
	    [G_BASE] = SB_SECCOMP_NEED_NONE,	[G_SOCKET] = SB_SECCOMP_NEED_NET,
	    [G_WRITE] = SB_SECCOMP_NEED_WRITE,	[G_FORK] = SB_SECCOMP_NEED_PROCESS,
	    [G_EXEC] = SB_SECCOMP_NEED_PROCESS,
	};
	const uint64_t writes = O_ACCMODE | O_CREAT | O_TRUNC | O_TMPFILE_BIT;
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	enum sb_seccomp_need need = SB_SECCOMP_NEED_NONE;

	*ret_rule = NULL;
	if (!name)
		return need;
	for (size_t i = 0; i < ELEMENTSOF(allowed_table); i++)
		if (streq(name, allowed_table[i].name)) {
			need = of_grant[allowed_table[i].grant];
			goto done;
		}
	for (size_t i = 0; i < ELEMENTSOF(chmod_calls); i++)
		if (streq(name, chmod_calls[i].name)) {
			if (!(args[chmod_calls[i].arg] & (S_ISUID | S_ISGID)))
				need = SB_SECCOMP_NEED_WRITE;
			goto done;
		}
	if ((streq(name, "open") && (args[1] & writes)) ||
	    (streq(name, "openat") && (args[2] & writes)) || streq(name, "openat2") ||
	    streq(name, "creat"))
		need = SB_SECCOMP_NEED_WRITE;
	else if (streq(name, "clone") && !(args[0] & CLONE_NS_FLAGS))
		need = SB_SECCOMP_NEED_PROCESS;
	else if (((streq(name, "getpgid") || streq(name, "getsid") ||
		   (streq(name, "prlimit64") && !args[2])) &&
		  (args[0] & MASK32) != 0) ||
		 (streq(name, "getpriority") &&
		  ((args[0] & MASK32) != PRIO_PROCESS || (args[1] & MASK32) != 0)))
		need = SB_SECCOMP_NEED_PROCESS;
	else if ((streq(name, "kill") || streq(name, "tgkill") || streq(name, "rt_sigqueueinfo") ||
		  streq(name, "rt_tgsigqueueinfo")) &&
		 (args[0] & MASK32) != MASK32)
		need = SB_SECCOMP_NEED_PROCESS;
	else if (streq(name, "socket") && (args[0] == AF_INET || args[0] == AF_INET6) &&
		 ((args[1] & 0xf) == SOCK_STREAM || (args[1] & 0xf) == SOCK_DGRAM))
		need = SB_SECCOMP_NEED_NET;
	else if (streq(name, "socket") && args[0] == AF_UNIX)
		need = SB_SECCOMP_NEED_UNIX;
done:
	free(name);
	switch (need) {
	case SB_SECCOMP_NEED_NONE:
		break;
	case SB_SECCOMP_NEED_WRITE:
		*ret_rule = grant_rule[G_WRITE];
		break;
	case SB_SECCOMP_NEED_PROCESS:
		*ret_rule = grant_rule[G_FORK];
		break;
	case SB_SECCOMP_NEED_NET:
		*ret_rule = (args[1] & 0xf) == SOCK_DGRAM ? "a udp net= rule" : "a tcp net= rule";
		break;
	case SB_SECCOMP_NEED_UNIX:
		*ret_rule = "an expose-rw rule with py-sandbox=true";
		break;
	}
	return need;
}

/* ---- --explain --------------------------------------------------------------- */

static int describe_call(struct sb_buf *out, enum group k, enum grant g, bool granted,
			 const char *name, bool *first)
{
	int r;

	if (*first && granted)
		r = sb_buf_printf(out, "#   seccomp allows, %s: %s", group_name[k], name);
	else if (*first)
		r = sb_buf_printf(out, "#   seccomp refuses (needs %s), %s: %s", grant_rule[g],
				  group_name[k], name);
	else
		r = sb_buf_printf(out, ", %s", name);
	*first = false;
	return r;
}

static int describe_group(struct sb_buf *out, const struct sb_seccomp_policy *policy, enum group k,
			  bool want_granted)
{
	bool first = true;
	int r = 0;

	/* The chmod family is allowed with conditions where writing is
	 * (add_chmod(), described with the other conditions), and refused with
	 * the rest of its group where it is not. */
	for (size_t i = 0; r >= 0 && k == K_METADATA && !want_granted && !policy->allow_write &&
			   i < ELEMENTSOF(chmod_calls);
	     i++)
		if (resolve(chmod_calls[i].name) >= 0)
			r = describe_call(out, k, G_WRITE, false, chmod_calls[i].name, &first);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(allowed_table); i++) {
		const struct allowed *a = &allowed_table[i];

		if (a->group != k || granted(policy, a->grant) != want_granted ||
		    resolve(a->name) < 0)
			continue;
		r = describe_call(out, k, a->grant, want_granted, a->name, &first);
	}
	return r < 0 || first ? r : sb_buf_putc(out, '\n');
}

#define NAMES_OF(table, field)                                                                     \
	({                                                                                         \
		int _r = 0;                                                                        \
		for (size_t _i = 0; _r >= 0 && _i < ELEMENTSOF(table); _i++)                       \
			_r = sb_buf_printf(out, "%s%s", _i ? "," : "", table[_i].field);           \
		_r;                                                                                \
	})

int sb_seccomp_describe(const struct sb_seccomp_policy *policy, struct sb_buf *out)
{
	int r;

	r = sb_buf_printf(out,
			  "#   seccomp: an allowlist; anything else fails with EPERM, numbers "
			  "past libseccomp %u.%u.%u's table with ENOSYS (libc falls back); foreign "
			  "ABIs (i386 int $0x80, x32) kill the process\n",
			  seccomp_version()->major, seccomp_version()->minor,
			  seccomp_version()->micro);
	for (int k = 0; r >= 0 && k < K__N; k++)
		r = describe_group(out, policy, (enum group)k, true);
	if (r >= 0)
		r = sb_buf_printf(out,
				  "#   seccomp allows, with conditions: open, openat %s; "
				  "clone: %s (clone3: ENOSYS, libc falls back to clone); ",
				  policy->allow_write ? "with any flags (an expose-rw rule)"
				  : policy->landlock
				      ? "with any flags (Landlock decides which files may be "
					"written: /dev/null only, without an expose-rw rule)"
				      : "read-only (no write access, O_CREAT, O_TRUNC, O_TMPFILE "
					"without an expose-rw rule: nothing checks paths without "
					"Landlock; openat2: ENOSYS; creat refused)",
				  policy->allow_fork ? "threads and processes, no CLONE_NEW* flag"
						     : "threads only, no CLONE_NEW* flag");
	if (r >= 0)
		r = sb_buf_printf(out, "kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo: %s; ",
				  policy->allow_fork ? "any pid but -1" : "this process only");
	if (r >= 0)
		r = sb_buf_puts(out, "sched_setaffinity, sched_setscheduler, sched_setparam, "
				     "sched_setattr, setpriority, prlimit64 with a new limit: this "
				     "process only (pid 0 or its own); ");
	if (r >= 0)
		r = sb_buf_printf(
		    out, "getpgid, getsid, getpriority, prlimit64 reading a limit: %s; ",
		    policy->allow_fork ? "any pid" : "this process only (pid 0 or its own)");
	if (r >= 0)
		r = sb_buf_puts(
		    out, "timer_settime, timer_delete: "
			 "any timer but timeout='s own two (EINVAL); personality: PER_LINUX "
			 "and the 0xffffffff query; chmod, fchmod, fchmodat, fchmodat2 (with "
			 "an expose-rw rule): never the set-user-ID or set-group-ID bit (a "
			 "set-id program left behind runs as the sandbox's user); fallocate: "
			 "mode 0 (extends the file "
			 "within limit-file-size) and punching holes, not FALLOC_FL_KEEP_SIZE "
			 "(blocks past the end no size limit sees)\n#   seccomp allows "
			 "ioctl() ");
	if (r >= 0)
		r = NAMES_OF(ioctl_table, name);
	if (r >= 0)
		r = sb_buf_puts(out, " only (request compared on 32 bits; never TIOCSTI, "
				     "TIOCLINUX)\n#   seccomp allows fcntl() ");
	if (r >= 0)
		r = NAMES_OF(fcntl_table, name);
	if (r >= 0)
		r = sb_buf_puts(out, " only\n#   seccomp allows prctl() ");
	if (r >= 0)
		r = NAMES_OF(prctl_table, name);
	if (r >= 0)
		r = sb_buf_printf(
		    out,
		    " only\n#   seccomp: socket(): AF_UNIX %s; AF_INET/AF_INET6 %s; every other "
		    "domain refused; socketpair(): AF_UNIX, stream and seqpacket (datagram with "
		    "AF_UNIX sockets: its socket could be pointed at any named socket); "
		    "setsockopt(): IP, TCP, UDP, IPv6 and SOL_SOCKET levels, no SO_ATTACH_* (BPF "
		    "programs)\n",
		    policy->allow_unix_socket ? "allowed (the Python guard checks the socket path)"
					      : "refused (needs an expose-rw rule and "
						"py-sandbox=true)",
		    !policy->allow_inet ? "refused (no net= rule)"
		    : policy->allow_udp ? "SOCK_STREAM (TCP) and SOCK_DGRAM (UDP) only"
					: "SOCK_STREAM (TCP) only (no udp net= rule)");
	for (int k = 0; r >= 0 && k < K__N; k++)
		r = describe_group(out, policy, (enum group)k, false);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(refused_table);) {
		const char *reason = refused_table[i].reason;
		bool first = true;

		r = sb_buf_printf(out, "#   seccomp refuses whatever the rules, %s:", reason);
		for (; r >= 0 && i < ELEMENTSOF(refused_table) &&
		       streq(refused_table[i].reason, reason);
		     i++) {
			if (resolve(refused_table[i].name) < 0)
				continue; /* not on this architecture */
			r = sb_buf_printf(out, "%s %s", first ? "" : ",", refused_table[i].name);
			first = false;
		}
		if (r >= 0)
			r = sb_buf_putc(out, '\n');
	}
	return r;
}
