/* SPDX-License-Identifier: MIT */
#pragma once

/* Landlock UAPI bits newer than the build host's <linux/landlock.h>.
 *
 * Why: the kernel we run on and the kernel headers we build against are
 * independent. Debian 12's linux-libc-dev only knows ABI 1-2 (filesystem
 * rights up to REFER), while the machines run kernels with ABI 7. The values
 * below are fixed kernel ABI (include/uapi/linux/landlock.h), so defining them
 * here is safe; each block is guarded so a newer header wins. Whether the
 * *running* kernel supports a right is decided at run time from the ABI
 * version (landlock.c), never from what the headers know. */

#include <linux/landlock.h>
#include <linux/types.h>
#include <sys/syscall.h>

/* Since Linux 5.x new system calls share one number on every architecture
 * (alpha excepted, which is offset), so the generic numbers are right where
 * the C library's headers are simply too old to name them. */
#ifndef SYS_landlock_create_ruleset
#if defined(__alpha__)
#error "landlock syscall numbers are not known for alpha"
#endif
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* ABI 2 */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
/* ABI 3 */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
/* ABI 5 */
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

/* ABI 4: TCP port rules. A header that defines the access macros also has the
 * struct and the enum value (they arrived in the same kernel release), so the
 * macro is the guard for all three. In a new header LANDLOCK_RULE_NET_PORT is
 * an enumerator; here it is a macro with the same value. */
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP	(1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define LANDLOCK_RULE_NET_PORT		2

struct landlock_net_port_attr {
	__u64 allowed_access;
	__u64 port; /* host endianness */
};
#endif

/* ABI 6: IPC scoping. */
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* struct landlock_ruleset_attr grew twice (handled_access_net in ABI 4, scoped
 * in ABI 6) and no macro tells which generation a header carries, so we
 * cannot extend it with #ifndef. Use our own copy of the newest layout
 * instead. The kernel takes the size we pass and requires any bytes it does
 * not know to be zero, so this full-size struct also works on an ABI 1 kernel
 * as long as the newer fields stay 0 there. */
struct sb_landlock_ruleset_attr {
	__u64 handled_access_fs;
	__u64 handled_access_net;
	__u64 scoped;
};

_Static_assert(sizeof(struct sb_landlock_ruleset_attr) == 24, "landlock_ruleset_attr ABI layout");
_Static_assert(sizeof(struct landlock_net_port_attr) == 16, "landlock_net_port_attr ABI layout");
