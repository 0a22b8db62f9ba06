/* SPDX-License-Identifier: MIT */
/* The os-sandbox providers, one line each: SB_OS_SANDBOX(id, name).
 * id is SB_OS_<id> in enum sb_os_sandbox (profile.h); name is what
 * os-sandbox= and the <name>.<key> parameters spell, written as a C
 * identifier: src/providers/<name>.c defines sb_provider_<name>, the
 * provider's behaviour (provider.h). This line and that file are all a new
 * provider needs (docs/development.md, "How to add a provider").
 *
 * Included by profile.h (the enum), profile-keys.c (the names) and
 * provider.{c,h} (the table). No include guard: each includer expands the
 * list its own way. */
SB_OS_SANDBOX(NONE, none)
SB_OS_SANDBOX(SUBPROCESS, subprocess)
SB_OS_SANDBOX(LANDLOCK, landlock)
SB_OS_SANDBOX(UNSHARE, unshare)
SB_OS_SANDBOX(BWRAP, bwrap)
SB_OS_SANDBOX(FIREJAIL, firejail)
SB_OS_SANDBOX(QEMU, qemu)
