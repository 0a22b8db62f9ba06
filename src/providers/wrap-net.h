/* SPDX-License-Identifier: MIT */
#pragma once

/* A wrapper's network namespace with net= ALLOW rules (os-sandbox=bwrap):
 * the tool makes the namespace (--unshare-net) and writes the pid of its
 * first process (--info-fd); the launching python-sb, in the host's
 * namespaces, loads the nftables filter there and starts slirp4netns for it
 * (sb_netns_start(): os-sandbox=unshare's code, the same plan), and only then
 * lets the tool run python-sb (--block-fd). The filter is loaded from outside
 * rather than by the inner python-sb because slirp4netns must run outside
 * anyway (it relays through the host's sockets), and the inner python-sb
 * would need CAP_NET_ADMIN and nft in the new root for it.
 *
 * Host names are pinned here, where the host's resolver is reachable; the
 * sandbox's /etc/hosts (--ro-bind-data) lists the pins, which the inner
 * python-sb's guard reads first when it pins the same names: both layers
 * name the same addresses.
 *
 * Fail closed: the tool waits on the block descriptor until the network is up
 * and filtered; when it cannot be, the launching side kills the tool before
 * it closes that descriptor (a tool reading end-of-file there would go on).
 * A launching side killed meanwhile leaves the namespace with its loopback
 * alone (no slirp4netns runs before the filter is loaded), and the tool dies
 * with it (--die-with-parent). */

#include <stdbool.h>
#include <sys/types.h>

#include "netns.h"
#include "profile.h"

struct sb_wrap_net {
	struct sb_netns_plan plan;
	struct sb_netns_tools tools;
	int info_read, info_write;   /* the tool writes {"child-pid": N, ...} to info_write */
	int block_read, block_write; /* the tool reads block_read before it runs python-sb */
	int hosts_fd;		     /* the tool's: the sandbox's /etc/hosts */
	struct sb_netns running;
};

#define SB_WRAP_NET_NULL                                                                           \
	((struct sb_wrap_net){.info_read = -1,                                                     \
			      .info_write = -1,                                                    \
			      .block_read = -1,                                                    \
			      .block_write = -1,                                                   \
			      .hosts_fd = -1,                                                      \
			      .running = SB_NETNS_NULL})

/* Whether the profile's net= rules need a network from outside (an ALLOW
 * rule). */
bool sb_wrap_net_wanted(const struct sb_profile *p);

/* The plan (pinned, or symbolic for --explain, which resolves nothing), the
 * programs it needs, and the descriptors: the tool's ends inheritable, ours
 * not. 0, or -errno with *reterr. */
int sb_wrap_net_prepare(const struct sb_profile *p, bool symbolic, struct sb_wrap_net *ret,
			char **reterr);

/* Once the tool is spawned: closes the tool's ends here. */
void sb_wrap_net_spawned(struct sb_wrap_net *n);

/* Reads the tool's pid, loads the filter, starts slirp4netns and releases
 * the tool. 0, or -errno with *reterr: then the caller kills the tool before
 * sb_wrap_net_done(). */
int sb_wrap_net_start(struct sb_wrap_net *n, char **reterr);

/* Stops slirp4netns (the tool has ended) and closes everything. */
void sb_wrap_net_done(struct sb_wrap_net *n);
