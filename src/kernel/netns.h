/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "net-policy.h"
#include "net-rule.h"
#include "util.h"

/* The network of a sandbox that has a network namespace of its own
 * (os-sandbox=unshare; bwrap, and firejail as root, from outside: wrap-net.h).
 * Without a net= ALLOW rule the namespace keeps its loopback alone: nothing
 * outside can be reached, and no helper runs. With one, slirp4netns, run in
 * the host's namespaces, gives the namespace a tap0 device (10.0.2.100/24,
 * gateway 10.0.2.2) whose traffic it relays through ordinary sockets of the
 * host, and an nftables table inside the namespace drops every packet the
 * rules do not allow (default drop, DENY rules first, then ALLOW). Host names
 * are pinned: the filter names the addresses resolved once before the start
 * (the Python guard's pin, so both layers agree), and /etc/hosts lists them
 * for native code.
 *
 * slirp4netns's two special addresses stay out of reach unless a rule names
 * them: 10.0.2.2 is the host's own loopback (its 127.0.0.1 services), 10.0.2.3
 * slirp4netns's DNS forwarder. A net=ALLOW|tcp|*|... rule reaches neither.
 *
 * Use: sb_netns_plan_build() (pure), sb_netns_find_tools() before any other
 * step, then from the host's namespaces, once the target process is in the
 * new network namespace, sb_netns_start(); sb_netns_stop() at the end (or
 * sb_netns_release() for a caller about to exit). A caller that moves into
 * the new namespaces itself (unshare) forks a helper first:
 * sb_netns_helper_fork(), then sb_netns_helper_start() once it is in. */

#define SB_NETNS_GUEST	 "10.0.2.100"
#define SB_NETNS_GATEWAY "10.0.2.2" /* the host's loopback */
#define SB_NETNS_DNS	 "10.0.2.3" /* slirp4netns's DNS forwarder */

struct sb_netns_plan {
	bool outside;	    /* some ALLOW rule: slirp4netns and the filter */
	bool host_loopback; /* an ALLOW rule names 10.0.2.2 */
	bool dns;	    /* an ALLOW rule names 10.0.2.3 */
	/* Without pins (--explain), host names stand as "<name>": the text
	 * then shows the filter, and is not given to nft. */
	bool symbolic;
	char *ruleset; /* the nft script; NULL when !outside */
	char *hosts;   /* /etc/hosts: loopback names, then every pinned name */
	char **notes;  /* what the kernel does not filter, for --explain */
};

/* The plan for these rules. pins: the pinned addresses of the host names
 * (sb_net_policy_build()); NULL gives a symbolic plan. 0 or -ENOMEM. */
int sb_netns_plan_build(const struct sb_net_rule *rules, size_t n_rules,
			const struct sb_net_policy *pins, struct sb_netns_plan *ret);
void sb_netns_plan_done(struct sb_netns_plan *plan);

/* The programs the plan needs, looked up in the system's directories (never
 * the program's PATH). 0, or -ENOENT with *reterr naming the missing program
 * and its Debian package. */
struct sb_netns_tools {
	char *slirp4netns;
	char *nft;
};
int sb_netns_find_tools(const struct sb_netns_plan *plan, struct sb_netns_tools *ret,
			char **reterr);
void sb_netns_tools_done(struct sb_netns_tools *tools);

/* A running slirp4netns. */
struct sb_netns {
	pid_t slirp;
	int exit_fd; /* slirp4netns ends when this closes */
	/* A sock_diag socket of the namespace, made by the nft process inside
	 * (-1 if it could not): sb_netns_drain() before slirp4netns stops. */
	int diag_fd;
};
#define SB_NETNS_NULL ((struct sb_netns){.slirp = -1, .exit_fd = -1, .diag_fd = -1})

/* From the host's namespaces, for the network namespace of target (a process
 * in it; the user namespace that owns it, target's own or one target's is
 * nested in, belongs to our uid): loads the filter in that namespace (nft,
 * after joining the owner and the network namespace) and, side by side,
 * starts slirp4netns for it (given both by descriptor); returns once the
 * filter is loaded and tap0 configured. The program must not run in the
 * namespace before this returns 0: then it never has a route without its
 * filter. Nothing to do when !plan->outside. 0, or -errno with *reterr
 * (nothing is left running then). */
int sb_netns_start(const struct sb_netns_plan *plan, const struct sb_netns_tools *tools,
		   pid_t target, struct sb_netns *ret, char **reterr);
/* Once the sandbox's connections have handed slirp4netns their last bytes
 * (sb_netns_drain()), ends it and reaps it; n may be SB_NETNS_NULL. */
void sb_netns_stop(struct sb_netns *n);
/* For a caller about to exit once the sandbox is gone: once the sandbox's
 * connections have handed slirp4netns their last bytes (sb_netns_drain()),
 * closes the exit descriptor, on which slirp4netns ends by itself, without
 * waiting for it.
 * Its exit closes tap0, and the kernel's unregistering of the device takes
 * tens of milliseconds (RCU grace periods) that nobody needs to wait for: the
 * namespace has no process left to serve. The caller's exit hands it to the
 * reaper. n may be SB_NETNS_NULL. */
void sb_netns_release(struct sb_netns *n);

/* How long a sandbox's connections get to hand their last bytes to
 * slirp4netns once the program is gone: the host's peer may read slowly. */
#define SB_NETNS_DRAIN_MS 5000

/* A sock_diag socket of the caller's network namespace: it goes on
 * answering for that namespace wherever it is passed. A descriptor, or
 * -errno. */
int sb_netns_diag_open(void);
/* Waits, up to timeout_ms, until no TCP socket of diag_fd's network
 * namespace may still have bytes or its end of stream unacknowledged:
 * slirp4netns, the host's end of each connection, stops when the sandbox
 * does, and what it has not yet read from tap0 would be lost, although the
 * program sent it before its exit (on the kernel's own network, a closed
 * socket's data outlives its process). 0, -ETIMEDOUT, or -errno. */
int sb_netns_drain(int diag_fd, uint64_t timeout_ms);

/* Brings the loopback interface of the caller's network namespace up (a new
 * namespace has it down); needs CAP_NET_ADMIN there. 0 or -errno. */
int sb_netns_loopback_up(char **reterr);

/* A helper process for a caller that is about to enter new namespaces itself:
 * forked now, it stays in the host's, and sb_netns_helper_start() has it run
 * sb_netns_start() for the target and report. It stops slirp4netns and exits
 * when the caller closes go_fd (sb_netns_helper_done(), or the caller's
 * exit). */
struct sb_netns_helper {
	pid_t pid;
	int go_fd;     /* ours: the target's pid goes there; closing it ends the helper */
	int report_fd; /* ours: "" for success, or the error text */
};
#define SB_NETNS_HELPER_NULL ((struct sb_netns_helper){.pid = -1, .go_fd = -1, .report_fd = -1})

/* Must be called single-threaded. 0 or -errno with *reterr. */
int sb_netns_helper_fork(const struct sb_netns_plan *plan, const struct sb_netns_tools *tools,
			 struct sb_netns_helper *ret, char **reterr);
/* target: a process (the caller, typically) that now has the new user and
 * network namespaces. Returns once the network is up and filtered. 0, or
 * -errno with *reterr. */
int sb_netns_helper_start(struct sb_netns_helper *h, pid_t target, char **reterr);
/* Closes our ends; with wait, reaps the helper (which stops slirp4netns
 * first). */
void sb_netns_helper_done(struct sb_netns_helper *h, bool wait);
/* In a child of the caller that must not keep the helper alive: closes the
 * inherited ends without touching the helper. */
void sb_netns_helper_forget(struct sb_netns_helper *h);

/* --explain: what the namespace can reach and the filter. */
int sb_netns_explain(const struct sb_netns_plan *plan, struct sb_buf *out);
