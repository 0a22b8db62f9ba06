/* SPDX-License-Identifier: MIT */
#pragma once

/* A wrapper's network namespace with net= ALLOW rules (bwrap; firejail as
 * root): the tool makes the namespace (bwrap --unshare-net, firejail
 * --net=none); once the inner python-sb has started in it (the tool is done
 * with the namespace then: bwrap configures its loopback itself, which
 * slirp4netns's configuration must not race), it says so on a socket pair of
 * this module's, whose end the sealed record names (wrap.h), and the kernel
 * gives us its pid with the word (SCM_CREDENTIALS). The launching python-sb,
 * in the host's namespaces, then loads the nftables filter in that process's
 * network namespace and starts slirp4netns for it (sb_netns_start():
 * os-sandbox=unshare's code, the same plan), and answers; the inner
 * python-sb's own start-up runs meanwhile, and it enters the boundary only
 * after the answer. The filter is loaded from outside rather than by the inner
 * python-sb because slirp4netns must run outside anyway (it relays through
 * the host's sockets), and the inner python-sb would need CAP_NET_ADMIN and
 * nft in the new root for it.
 *
 * Host names are pinned here, where the host's resolver is reachable; the
 * sandbox's /etc/hosts (--ro-bind-data, --hosts-file) lists the pins, which
 * the inner python-sb's guard reads first when it pins the same names: both
 * layers name the same addresses.
 *
 * Fail closed: the inner python-sb runs the program only after reading the
 * answer; end-of-file (the launching side failed, or died) stops it. When the
 * network cannot be set up, the launching side also kills the tool. (Not the
 * status pipe for the word: reading it while the inner python-sb runs would
 * fire wrap.c's lifeline.) */

#include <stdbool.h>
#include <sys/types.h>

#include "netns.h"
#include "profile.h"

struct sb_wrap_net {
	struct sb_netns_plan plan;
	struct sb_netns_tools tools;
	/* A socket pair: the inner python-sb writes one byte on ready_inner
	 * when it starts, and reads one once the network is up (a socket: its
	 * credentials come with the word, and writing to an inner python-sb
	 * that is gone raises no SIGPIPE). */
	int ready_inner, ready_ours;
	int hosts_fd; /* the tool's: the sandbox's /etc/hosts */
	struct sb_netns running;
};

#define SB_WRAP_NET_NULL                                                                           \
	((struct sb_wrap_net){                                                                     \
	    .ready_inner = -1, .ready_ours = -1, .hosts_fd = -1, .running = SB_NETNS_NULL})

/* Whether the profile's net= rules need a network from outside (an ALLOW
 * rule). */
bool sb_wrap_net_wanted(const struct sb_profile *p);

/* The plan (pinned, or symbolic for --explain, which resolves nothing), the
 * programs it needs, and the descriptors: the tool's ends inheritable, ours
 * not. 0, or -errno with *reterr. */
int sb_wrap_net_prepare(const struct sb_profile *p, bool symbolic, struct sb_wrap_net *ret,
			char **reterr);

/* Once the tool is spawned: closes the tool's and the inner python-sb's ends
 * here. */
void sb_wrap_net_spawned(struct sb_wrap_net *n);

/* Waits for the inner python-sb's start, then, for its network namespace,
 * loads the filter, starts slirp4netns and answers it. 0 (also when no inner
 * python-sb started: the tool's status says why), or -errno with *reterr:
 * then the caller kills the tool. */
int sb_wrap_net_start(struct sb_wrap_net *n, char **reterr);

/* Once the tool has ended, when the launching python-sb is about to exit:
 * releases slirp4netns (sb_netns_release(), not waited for) and closes
 * everything. */
void sb_wrap_net_done(struct sb_wrap_net *n);
