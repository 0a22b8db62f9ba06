/* SPDX-License-Identifier: MIT */
/* A sandbox's own network namespace: the nftables filter from net= rules,
 * slirp4netns, /etc/hosts for pinned names (netns.h). */
#include "netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "fd-pass.h"

/* Where the programs are looked up: the system's own directories, never the
 * PATH the profile gives the program. */
static const char *const tool_dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
					"/usr/bin",	   "/sbin",	     "/bin"};

/* How long slirp4netns may take to configure tap0. */
#define SB_SLIRP_START_MS 10000
/* How long a stopping slirp4netns gets before SIGKILL. */
#define SB_SLIRP_STOP_MS 2000

extern char **environ;

/* ------------------------------------------------------------------------ */
/* The plan */

static bool is_addr(const struct sb_net_addr *a, const char *text)
{
	struct sb_net_addr b;

	return sb_net_addr_parse(text, &b) == 0 && a->family == b.family &&
	       memcmp(a->bytes, b.bytes, a->family == AF_INET ? 4 : 16) == 0;
}

/* The addresses a rule names, as (address, prefix) pairs; an IPv4-mapped
 * IPv6 network becomes the IPv4 one (the kernel sends IPv4 packets for it). */
struct target {
	struct sb_net_addr addr;
	unsigned prefix_len;
};

static int rule_targets(const struct sb_net_rule *rule, const struct sb_net_policy *pins,
			struct target **ret, size_t *ret_n)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	struct target *t;

	*ret = NULL;
	*ret_n = 0;
	if (rule->network_kind == SB_NET_NETWORK_CIDR) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		t->addr.family = rule->family;
		memcpy(t->addr.bytes, rule->address, sizeof(t->addr.bytes));
		t->prefix_len = rule->prefix_len;
		if (rule->family == AF_INET6 && rule->prefix_len >= 96 &&
		    memcmp(rule->address, mapped, sizeof(mapped)) == 0) {
			sb_net_addr_unmap(&t->addr, &t->addr);
			t->prefix_len -= 96;
		}
		*ret = t;
		*ret_n = 1;
		return 0;
	}
	if (rule->network_kind == SB_NET_NETWORK_HOST && pins) {
		const struct sb_net_pin *pin = sb_net_policy_pin(pins, rule->network);

		if (!pin || pin->n_addrs == 0)
			return 0;
		t = calloc(pin->n_addrs, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < pin->n_addrs; i++) {
			sb_net_addr_unmap(&pin->addrs[i], &t[i].addr);
			t[i].prefix_len = t[i].addr.family == AF_INET ? 32 : 128;
		}
		*ret = t;
		*ret_n = pin->n_addrs;
	}
	return 0;
}

/* Whether an ALLOW rule names this one address itself (a /32, or a pinned
 * host name's address): what opens slirp4netns's special addresses. */
static int names_address(const struct sb_net_rule *rule, const struct sb_net_policy *pins,
			 const char *address, bool *ret)
{
	_cleanup_free_ struct target *t = NULL;
	size_t n;
	int r;

	*ret = false;
	if (rule->action != SB_NET_ALLOW || !(rule->directions & SB_NET_OUT))
		return 0;
	r = rule_targets(rule, pins, &t, &n);
	for (size_t i = 0; r >= 0 && i < n; i++)
		if (t[i].prefix_len == 32 && is_addr(&t[i].addr, address))
			*ret = true;
	return r;
}

/* A profile's text in an nft comment: printable, one line. */
static int put_comment(struct sb_buf *b, const struct sb_net_rule *rule)
{
	int r = sb_buf_printf(b, "\t\t# net=");

	for (const char *c = rule->text; r >= 0 && *c; c++)
		r = sb_buf_putc(b, (*c >= 0x20 && *c < 0x7f) ? *c : '?');
	if (r >= 0)
		r = sb_buf_printf(b, " (%s:%u)\n", rule->origin.file ? rule->origin.file : "?",
				  rule->origin.line);
	return r;
}

static int put_ports(struct sb_buf *b, const struct sb_net_rule *rule)
{
	int r;

	if (rule->n_ports == 1 && rule->ports[0].first == 0 && rule->ports[0].last == 65535)
		return 0;
	r = sb_buf_puts(b, " th dport ");
	if (r >= 0 && rule->n_ports > 1)
		r = sb_buf_puts(b, "{ ");
	for (size_t i = 0; r >= 0 && i < rule->n_ports; i++) {
		const struct sb_port_range *p = &rule->ports[i];

		r = sb_buf_printf(b, "%s%u", i ? ", " : "", p->first);
		if (r >= 0 && p->last != p->first)
			r = sb_buf_printf(b, "-%u", p->last);
	}
	if (r >= 0 && rule->n_ports > 1)
		r = sb_buf_puts(b, " }");
	return r;
}

static const char *l4(const struct sb_net_rule *rule)
{
	switch (rule->protocols & (SB_NET_TCP | SB_NET_UDP)) {
	case SB_NET_TCP:
		return "tcp";
	case SB_NET_UDP:
		return "udp";
	default:
		return "{ tcp, udp }";
	}
}

/* One statement per address family the rule names. */
static int put_rule(struct sb_buf *b, const struct sb_net_rule *rule,
		    const struct sb_net_policy *pins)
{
	const char *verdict = rule->action == SB_NET_DENY ? "jump refuse" : "accept";
	_cleanup_free_ struct target *t = NULL;
	size_t n = 0;
	int r;

	r = put_comment(b, rule);
	if (r < 0)
		return r;
	if (rule->n_ports == 0)
		return sb_buf_puts(b, "\t\t# (no port: the rule matches nothing)\n");
	if (rule->network_kind == SB_NET_NETWORK_ANY) {
		r = sb_buf_printf(b, "\t\tmeta l4proto %s", l4(rule));
		if (r >= 0)
			r = put_ports(b, rule);
		return r < 0 ? r : sb_buf_printf(b, " %s\n", verdict);
	}
	if (rule->network_kind == SB_NET_NETWORK_HOST && !pins) {
		r = sb_buf_printf(b, "\t\tip daddr <%s> meta l4proto %s", rule->network, l4(rule));
		if (r >= 0)
			r = put_ports(b, rule);
		return r < 0 ? r : sb_buf_printf(b, " %s\n", verdict);
	}
	r = rule_targets(rule, pins, &t, &n);
	if (r < 0)
		return r;
	if (n == 0)
		return sb_buf_printf(b, "\t\t# (%s has no pinned address: nothing to allow)\n",
				     rule->network);
	for (int family = AF_INET; r >= 0; family = AF_INET6) {
		size_t count = 0;

		for (size_t i = 0; i < n; i++)
			count += t[i].addr.family == family;
		if (count) {
			r = sb_buf_printf(b, "\t\t%s daddr %s", family == AF_INET ? "ip" : "ip6",
					  count > 1 ? "{ " : "");
			for (size_t i = 0, k = 0; r >= 0 && i < n; i++) {
				char text[64];

				if (t[i].addr.family != family)
					continue;
				sb_net_addr_format(&t[i].addr, false, text, sizeof(text));
				r = sb_buf_printf(b, "%s%s", k++ ? ", " : "", text);
				if (r >= 0 && t[i].prefix_len != (family == AF_INET ? 32u : 128u))
					r = sb_buf_printf(b, "/%u", t[i].prefix_len);
			}
			if (r >= 0)
				r = sb_buf_printf(b, "%s meta l4proto %s", count > 1 ? " }" : "",
						  l4(rule));
			if (r >= 0)
				r = put_ports(b, rule);
			if (r >= 0)
				r = sb_buf_printf(b, " %s\n", verdict);
		}
		if (family == AF_INET6)
			break;
	}
	return r;
}

static bool names_special(const struct sb_net_rule *rule, const struct sb_net_policy *pins)
{
	bool a = false, b = false;

	names_address(rule, pins, SB_NETNS_GATEWAY, &a);
	names_address(rule, pins, SB_NETNS_DNS, &b);
	return a || b;
}

static int build_ruleset(const struct sb_net_rule *rules, size_t n,
			 const struct sb_net_policy *pins, struct sb_buf *b)
{
	int r;

	/* Input: nothing reaches the namespace from outside but the replies to
	 * its own connections (slirp4netns forwards no port into it). Output:
	 * what no rule allows is refused at once (a reset for TCP, an ICMP
	 * error otherwise), not dropped: a dropped SYN leaves connect() waiting
	 * for its timeout. */
	r = sb_buf_puts(b, "table inet python_sb {\n"
			   "\tchain refuse {\n"
			   "\t\tmeta l4proto tcp reject with tcp reset\n"
			   "\t\treject with icmpx type admin-prohibited\n"
			   "\t}\n"
			   "\tchain input {\n"
			   "\t\ttype filter hook input priority 0; policy drop;\n"
			   "\t\tiif \"lo\" accept\n"
			   "\t\tct state established,related accept\n"
			   "\t}\n"
			   "\tchain output {\n"
			   "\t\ttype filter hook output priority 0; policy drop;\n"
			   "\t\toif \"lo\" accept\n"
			   "\t\tct state established,related accept\n");
	/* DENY first: it wins over any ALLOW (spec 3.5). */
	for (size_t i = 0; r >= 0 && i < n; i++)
		if (rules[i].action == SB_NET_DENY && (rules[i].directions & SB_NET_OUT))
			r = put_rule(b, &rules[i], pins);
	/* The host's loopback and the DNS forwarder: only for the rules that
	 * name them, never through a wider network. */
	for (size_t i = 0; r >= 0 && i < n; i++)
		if (rules[i].action == SB_NET_ALLOW && (rules[i].directions & SB_NET_OUT) &&
		    names_special(&rules[i], pins))
			r = put_rule(b, &rules[i], pins);
	if (r >= 0)
		r = sb_buf_puts(b, "\t\t# the host's loopback and the DNS forwarder, unless named "
				   "above\n"
				   "\t\tip daddr { " SB_NETNS_GATEWAY ", " SB_NETNS_DNS
				   " } jump refuse\n");
	for (size_t i = 0; r >= 0 && i < n; i++)
		if (rules[i].action == SB_NET_ALLOW && (rules[i].directions & SB_NET_OUT) &&
		    !names_special(&rules[i], pins))
			r = put_rule(b, &rules[i], pins);
	if (r >= 0)
		r = sb_buf_puts(b, "\t\tjump refuse\n\t}\n}\n");
	return r;
}

static int build_hosts(const struct sb_net_policy *pins, struct sb_buf *b)
{
	int r = sb_buf_puts(b, "127.0.0.1\tlocalhost\n"
			       "::1\tlocalhost ip6-localhost ip6-loopback\n");

	for (size_t i = 0; r >= 0 && pins && i < pins->n_pins; i++) {
		const struct sb_net_pin *pin = &pins->pins[i];

		for (size_t j = 0; r >= 0 && j < pin->n_addrs; j++) {
			char text[64];

			sb_net_addr_format(&pin->addrs[j], false, text, sizeof(text));
			r = sb_buf_printf(b, "%s\t%s\n", text, pin->name);
		}
	}
	return r;
}

int sb_netns_plan_build(const struct sb_net_rule *rules, size_t n_rules,
			const struct sb_net_policy *pins, struct sb_netns_plan *ret)
{
	struct sb_netns_plan plan = {.symbolic = !pins};
	struct sb_buf b = {0};
	bool in_rules = false, v6 = false;
	int r = 0;

	for (size_t i = 0; i < n_rules; i++) {
		const struct sb_net_rule *rule = &rules[i];
		bool named = false;

		if (rule->action == SB_NET_ALLOW)
			plan.outside = true;
		if (rule->directions & SB_NET_IN)
			in_rules = true;
		if (rule->network_kind == SB_NET_NETWORK_CIDR && rule->family == AF_INET6)
			v6 = true;
		if (r >= 0)
			r = names_address(rule, pins, SB_NETNS_GATEWAY, &named);
		plan.host_loopback = plan.host_loopback || named;
		if (r >= 0)
			r = names_address(rule, pins, SB_NETNS_DNS, &named);
		plan.dns = plan.dns || named;
	}
	if (r >= 0 && plan.outside) {
		r = build_ruleset(rules, n_rules, pins, &b);
		if (r >= 0) {
			plan.ruleset = sb_buf_steal(&b);
			r = plan.ruleset ? 0 : -ENOMEM;
		}
	}
	if (r >= 0)
		r = build_hosts(pins, &b);
	if (r >= 0) {
		plan.hosts = sb_buf_steal(&b);
		r = plan.hosts ? 0 : -ENOMEM;
	}
	if (r >= 0 && in_rules)
		r = sb_strv_pushf(&plan.notes,
				  "net= IN rules: nothing outside the namespace can connect to it "
				  "(no port is forwarded); a server is reachable from the "
				  "sandbox's own loopback only");
	if (r >= 0 && v6 && plan.outside)
		r = sb_strv_pushf(&plan.notes,
				  "IPv6: the namespace has no IPv6 route (slirp4netns runs "
				  "without IPv6), so IPv6 addresses stay unreachable");
	if (r >= 0 && plan.outside)
		r = sb_strv_pushf(&plan.notes,
				  "127.0.0.1 is the sandbox's own loopback; the host's is "
				  "10.0.2.2, reachable only through a rule naming 10.0.2.2");
	sb_buf_reset(&b);
	if (r < 0) {
		sb_netns_plan_done(&plan);
		return r;
	}
	*ret = plan;
	return 0;
}

void sb_netns_plan_done(struct sb_netns_plan *plan)
{
	free(plan->ruleset);
	free(plan->hosts);
	sb_strv_free(plan->notes);
	*plan = (struct sb_netns_plan){0};
}

/* ------------------------------------------------------------------------ */
/* The programs */

static int find_tool(const char *name, const char *package, const char *why, char **ret,
		     char **reterr)
{
	for (size_t i = 0; i < ELEMENTSOF(tool_dirs); i++) {
		_cleanup_free_ char *path = sb_path_join(tool_dirs[i], name);

		if (!path)
			return -ENOMEM;
		if (access(path, X_OK) == 0) {
			*ret = TAKE_PTR(path);
			return 0;
		}
	}
	return sb_error(reterr, -ENOENT,
			"%s is not installed (Debian package %s), and net= rules need it %s", name,
			package, why);
}

int sb_netns_find_tools(const struct sb_netns_plan *plan, struct sb_netns_tools *ret, char **reterr)
{
	struct sb_netns_tools t = {0};
	int r = 0;

	if (plan->outside)
		r = find_tool("nft", "nftables", "to filter the sandbox's traffic", &t.nft, reterr);
	if (r >= 0 && plan->outside)
		r = find_tool("slirp4netns", "slirp4netns",
			      "to give the sandbox's network namespace a route out", &t.slirp4netns,
			      reterr);
	if (r < 0) {
		sb_netns_tools_done(&t);
		return r;
	}
	*ret = t;
	return 0;
}

void sb_netns_tools_done(struct sb_netns_tools *tools)
{
	free(tools->slirp4netns);
	free(tools->nft);
	*tools = (struct sb_netns_tools){0};
}

/* ------------------------------------------------------------------------ */
/* Running them */

/* What a program wrote into a memory file: its lines that say something,
 * joined, for a message. */
static char *memfd_message(int fd)
{
	char buf[2048];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	struct sb_buf out = {0};
	char *line, *save = NULL;

	if (n <= 0)
		return strdup("");
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line = sb_strstrip(line);
		if (!*line || strstr(line, "WARNING") || startswith(line, "sent tapfd"))
			continue;
		if (sb_buf_printf(&out, "%s%s", out.len ? "; " : "", line) < 0)
			break;
	}
	return out.data ? sb_buf_steal(&out) : strdup("");
}

static int wait_exit(pid_t pid, int *ret_status)
{
	while (waitpid(pid, ret_status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* Joining a user namespace gives every capability in it, but execve() takes
 * them away from a uid other than 0 there (the caller's own uid is mapped, not
 * root): CAP_NET_ADMIN goes into the ambient set, which execve() keeps. */
static int keep_net_admin(void)
{
	struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &header, data) < 0)
		return -errno;
	data[0].inheritable |= 1u << CAP_NET_ADMIN;
	if (syscall(SYS_capset, &header, data) < 0)
		return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_ADMIN, 0, 0) < 0)
		return -errno;
	return 0;
}

/* The network namespace of target and the user namespace that owns it, which
 * is not always target's own: bwrap, run unprivileged, moves its process into
 * a user namespace nested in the one that owns the network namespace (to map
 * the sandbox's uid), where nothing has a capability over that network.
 * *ret_user is -1 when the owner is the caller's own user namespace (root
 * without a user namespace): there is nothing to join. */
static int open_target(pid_t target, int *ret_net, int *ret_user, char **reterr)
{
	_cleanup_close_ int net_fd = -1, user_fd = -1;
	struct stat owner, ours;
	char netns[64];

	snprintf(netns, sizeof(netns), "/proc/%d/ns/net", (int)target);
	net_fd = open(netns, O_RDONLY | O_CLOEXEC);
	if (net_fd < 0)
		return sb_error(reterr, -errno,
				"cannot open the network namespace of process %d: %s", (int)target,
				strerror(errno));
	user_fd = ioctl(net_fd, NS_GET_USERNS);
	if (user_fd < 0)
		return sb_error(reterr, -errno,
				"cannot find the owner of the sandbox's network namespace: %s",
				strerror(errno));
	if (fcntl(user_fd, F_SETFD, FD_CLOEXEC) < 0 || fstat(user_fd, &owner) < 0 ||
	    stat("/proc/self/ns/user", &ours) < 0)
		return sb_error(reterr, -errno, "cannot compare user namespaces: %s",
				strerror(errno));
	if (owner.st_ino == ours.st_ino && owner.st_dev == ours.st_dev)
		sb_closep(&user_fd);
	*ret_net = TAKE_FD(net_fd);
	*ret_user = TAKE_FD(user_fd);
	return 0;
}

/* nft -f - in the network namespace (after joining its owner), started by
 * filter_start() and waited for by filter_wait(). Forked, because joining
 * namespaces is for good: the caller stays where it is. Being there, the
 * process also makes the namespace's sock_diag socket (sb_netns_drain()),
 * whatever the sandbox's own filters will refuse it. */
struct filter_run {
	pid_t pid;
	int err;  /* nft's output, for the message */
	int diag; /* where the sock_diag socket comes */
};

static int filter_start(const struct sb_netns_plan *plan, const struct sb_netns_tools *tools,
			int net_fd, int user_fd, struct filter_run *ret, char **reterr)
{
	_cleanup_close_ int in = -1, err = -1, diag_ours = -1, diag_child = -1;
	int pair[2];
	char *argv[] = {(char *)"nft", (char *)"-f", (char *)"-", NULL};
	pid_t pid;

	in = sb_memfd_with("nft-rules", plan->ruleset, plan->ruleset ? strlen(plan->ruleset) : 0);
	err = sb_memfd_with("nft-errors", NULL, 0);
	if (in < 0 || err < 0)
		return sb_error(reterr, in < 0 ? in : err, "cannot pass the rules to nft: %s",
				strerror(-(in < 0 ? in : err)));
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) < 0)
		return sb_error(reterr, -errno, "cannot create a socket pair: %s", strerror(errno));
	diag_ours = pair[0];
	diag_child = pair[1];
	pid = fork();
	if (pid < 0)
		return sb_error(reterr, -errno, "cannot start nft: %s", strerror(errno));
	if (pid == 0) {
		int diag;

		if ((user_fd >= 0 && setns(user_fd, CLONE_NEWUSER) < 0) ||
		    setns(net_fd, CLONE_NEWNET) < 0 || keep_net_admin() < 0 ||
		    dup2(in, STDIN_FILENO) < 0 || dup2(err, STDOUT_FILENO) < 0 ||
		    dup2(err, STDERR_FILENO) < 0)
			_exit(126);
		diag = sb_netns_diag_open();
		if (diag >= 0)
			(void)sb_send_fd(diag_child, diag);
		execve(tools->nft, argv, environ);
		_exit(127);
	}
	*ret = (struct filter_run){.pid = pid, .err = TAKE_FD(err), .diag = TAKE_FD(diag_ours)};
	return 0;
}

/* *ret_diag: the namespace's sock_diag socket, or -1. */
static int filter_wait(struct filter_run *f, int *ret_diag, char **reterr)
{
	_cleanup_close_ int err = TAKE_FD(f->err), diag = TAKE_FD(f->diag);
	_cleanup_free_ char *msg = NULL;
	int status, r;

	r = wait_exit(f->pid, &status);
	if (r < 0)
		return sb_error(reterr, r, "cannot wait for nft: %s", strerror(-r));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		/* Sent before nft ran, if at all. */
		r = sb_receive_fd(diag, MSG_DONTWAIT);
		*ret_diag = r < 0 ? -1 : r;
		return 0;
	}
	msg = memfd_message(err);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
		return sb_error(reterr, -EPERM,
				"cannot enter the sandbox's network namespace to load its filter");
	return sb_error(reterr, -EIO, "nft refused the sandbox's filter (status %d)%s%s",
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
			msg && *msg ? ": " : "", msg ? msg : "");
}

static void kill_and_reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	(void)wait_exit(pid, &status);
}

/* Waits for the ready byte, or slirp4netns's end, or the deadline. */
static int wait_ready(int ready_fd, uint64_t deadline)
{
	for (;;) {
		struct pollfd pfd = {.fd = ready_fd, .events = POLLIN};
		uint64_t now = sb_monotonic_ms();
		char c;
		int n;

		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(deadline - now));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		n = (int)read(ready_fd, &c, 1);
		if (n == 1)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return -EPIPE; /* it exited without writing */
	}
}

static int move_high(int *fd)
{
	int high = fcntl(*fd, F_DUPFD_CLOEXEC, 10);

	if (high < 0)
		return -errno;
	close(*fd);
	*fd = high;
	return 0;
}

static int spawn_slirp(const struct sb_netns_plan *plan, const struct sb_netns_tools *tools,
		       int net_fd, int user_fd, struct sb_netns *ret, char **reterr)
{
	int ready[2] = {-1, -1}, exit_pipe[2] = {-1, -1};
	_cleanup_close_ int out = -1, net_high = -1, user_high = -1;
	_cleanup_free_ char *msg = NULL;
	const char *argv[20];
	size_t n = 0;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	pid_t pid = -1;
	int r;

	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(exit_pipe, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	/* Above the numbers slirp4netns is given (3 and 4), so that the dup2s
	 * below cannot overwrite one another's source. */
	r = move_high(&ready[1]);
	if (r >= 0)
		r = move_high(&exit_pipe[0]);
	/* Copies: the caller's stay where they are. */
	net_high = fcntl(net_fd, F_DUPFD_CLOEXEC, 10);
	user_high = user_fd >= 0 ? fcntl(user_fd, F_DUPFD_CLOEXEC, 10) : -1;
	if (r >= 0 && (net_high < 0 || (user_fd >= 0 && user_high < 0)))
		r = -errno;
	if (r < 0)
		goto out;
	out = sb_memfd_with("slirp4netns-output", NULL, 0);
	if (out < 0) {
		r = out;
		goto out;
	}
	argv[n++] = "slirp4netns";
	argv[n++] = "--configure";
	argv[n++] = "--mtu=65520";
	argv[n++] = "--ready-fd=3";
	argv[n++] = "--exit-fd=4";
	if (!plan->host_loopback)
		argv[n++] = "--disable-host-loopback";
	if (!plan->dns)
		argv[n++] = "--disable-dns";
	/* slirp4netns parses the sandbox's packets: a seccomp filter of its
	 * own, and for root a mount namespace and no capability (it needs
	 * setegid(0) for that, which an unprivileged user cannot do). */
	if (geteuid() == 0)
		argv[n++] = "--enable-sandbox";
	argv[n++] = "--enable-seccomp";
	/* The namespaces by descriptor (5, 6), as load_filter() joins them. */
	argv[n++] = "--netns-type=path";
	if (user_fd >= 0)
		argv[n++] = "--userns-path=/proc/self/fd/6";
	argv[n++] = "/proc/self/fd/5";
	argv[n++] = "tap0";
	argv[n] = NULL;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	/* A session of its own: ^C at the terminal is the program's, it must
	 * not take the network away. */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					    POSIX_SPAWN_SETSIGDEF);
	{
		sigset_t none, all;

		sigemptyset(&none);
		sigfillset(&all);
		posix_spawnattr_setsigmask(&attr, &none);
		posix_spawnattr_setsigdefault(&attr, &all);
	}
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out, STDERR_FILENO);
	posix_spawn_file_actions_adddup2(&fa, ready[1], 3);
	posix_spawn_file_actions_adddup2(&fa, exit_pipe[0], 4);
	posix_spawn_file_actions_adddup2(&fa, net_high, 5);
	if (user_high >= 0)
		posix_spawn_file_actions_adddup2(&fa, user_high, 6);
	posix_spawn_file_actions_addclosefrom_np(&fa, user_high >= 0 ? 7 : 6);
	r = -posix_spawn(&pid, tools->slirp4netns, &fa, &attr, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r < 0) {
		pid = -1;
		goto out;
	}
	close(ready[1]);
	ready[1] = -1;
	close(exit_pipe[0]);
	exit_pipe[0] = -1;

	r = wait_ready(ready[0], sb_monotonic_ms() + SB_SLIRP_START_MS);
	if (r < 0)
		goto out;
	*ret = (struct sb_netns){.slirp = pid, .exit_fd = exit_pipe[1]};
	exit_pipe[1] = -1;
	pid = -1;
out:
	if (pid > 0)
		kill_and_reap(pid);
	if (r < 0 && out >= 0)
		msg = memfd_message(out);
	for (size_t i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (exit_pipe[i] >= 0)
			close(exit_pipe[i]);
	}
	if (r >= 0)
		return 0;
	return sb_error(reterr, r, "slirp4netns could not give the sandbox a network: %s%s%s",
			msg && *msg ? msg : strerror(-r),
			msg && strstr(msg, "/dev/net/tun")
			    ? " (/dev/net/tun must be readable and writable by this user; "
			      "Debian's udev rules make it mode 0666)"
			    : "",
			r == -ETIMEDOUT ? " (timed out)" : "");
}

int sb_netns_start(const struct sb_netns_plan *plan, const struct sb_netns_tools *tools,
		   pid_t target, struct sb_netns *ret, char **reterr)
{
	_cleanup_close_ int net_fd = -1, user_fd = -1;
	struct filter_run filter = {.pid = -1, .err = -1, .diag = -1};
	int r, r_filter, diag = -1;

	*ret = SB_NETNS_NULL;
	if (!plan->outside)
		return 0;
	if (plan->symbolic || !tools->nft || !tools->slirp4netns)
		return sb_error(reterr, -EINVAL, "the network plan has no pinned addresses");
	r = open_target(target, &net_fd, &user_fd, reterr);
	if (r < 0)
		return r;
	/* nft and slirp4netns start side by side (each takes ~10 ms), and
	 * this returns only once both are done: whoever runs the program
	 * waits for that (the tool on its block descriptor, os-sandbox=
	 * unshare's process on the helper's report), so the program never has
	 * a route without the filter. Meanwhile only our own code runs in the
	 * namespace, and nothing comes in from outside: slirp4netns forwards
	 * no port into it. */
	r = filter_start(plan, tools, net_fd, user_fd, &filter, reterr);
	if (r < 0)
		return r;
	r = spawn_slirp(plan, tools, net_fd, user_fd, ret, reterr);
	r_filter = filter_wait(&filter, &diag, r < 0 ? NULL : reterr);
	if (r >= 0 && r_filter < 0) {
		sb_netns_stop(ret);
		r = r_filter;
	}
	if (r >= 0)
		ret->diag_fd = TAKE_FD(diag);
	sb_closep(&diag);
	return r;
}

/* Not reaching the end is no error of the program's: what is left is lost
 * as it would be on a network that broke. */
static void drain(struct sb_netns *n)
{
	if (n->diag_fd >= 0 && n->slirp > 0)
		(void)sb_netns_drain(n->diag_fd, SB_NETNS_DRAIN_MS);
	sb_closep(&n->diag_fd);
}

void sb_netns_stop(struct sb_netns *n)
{
	uint64_t deadline;
	int status;

	drain(n);
	deadline = sb_monotonic_ms() + SB_SLIRP_STOP_MS;
	if (n->exit_fd >= 0)
		close(n->exit_fd);
	if (n->slirp > 0) {
		for (;;) {
			pid_t r = waitpid(n->slirp, &status, WNOHANG);

			if (r == n->slirp || (r < 0 && errno != EINTR))
				break;
			if (sb_monotonic_ms() >= deadline) {
				kill_and_reap(n->slirp);
				break;
			}
			nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
		}
	}
	*n = SB_NETNS_NULL;
}

void sb_netns_release(struct sb_netns *n)
{
	drain(n);
	if (n->exit_fd >= 0)
		close(n->exit_fd);
	*n = SB_NETNS_NULL;
}

int sb_netns_loopback_up(char **reterr)
{
	struct ifreq ifr = {0};
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return sb_error(reterr, -errno, "cannot bring the loopback up: socket: %s",
				strerror(errno));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return sb_error(reterr, -errno, "cannot bring the loopback up: %s",
				strerror(errno));
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return sb_error(reterr, -errno, "cannot bring the loopback up: %s",
				strerror(errno));
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The helper process */

static ssize_t read_full(int fd, void *buf, size_t size)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = read(fd, (char *)buf + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static void write_full(int fd, const void *buf, size_t size)
{
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd, (const char *)buf + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		done += (size_t)n;
	}
}

/* The helper's life: wait for the target, start, report, then hold the
 * network until the caller closes go. Only async-signal-safe work matters
 * here for the fork, but the helper is a full process of its own: it may
 * allocate. */
static _Noreturn void helper_main(const struct sb_netns_plan *plan,
				  const struct sb_netns_tools *tools, int go, int report)
{
	struct sb_netns n = SB_NETNS_NULL;
	_cleanup_free_ char *err = NULL;
	int32_t target;
	char end;
	int r;

	/* The terminal's ^C and ^\ are the program's; the helper ends when
	 * the caller does (go closes). */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	if (read_full(go, &target, sizeof(target)) != sizeof(target))
		_exit(0);
	r = sb_netns_start(plan, tools, (pid_t)target, &n, &err);
	if (r < 0)
		write_full(report, err ? err : strerror(-r), strlen(err ? err : strerror(-r)));
	close(report);
	if (r < 0)
		_exit(1);
	while (read(go, &end, 1) < 0 && errno == EINTR)
		;
	/* Not waited for (sb_netns_release()): the helper holds the caller's
	 * stdout and stderr, and whoever reads them to their end would wait
	 * for slirp4netns's tear-down too. */
	sb_netns_release(&n);
	_exit(0);
}

int sb_netns_helper_fork(const struct sb_netns_plan *plan, const struct sb_netns_tools *tools,
			 struct sb_netns_helper *ret, char **reterr)
{
	int go[2], report[2];
	pid_t pid;

	*ret = SB_NETNS_HELPER_NULL;
	if (pipe2(go, O_CLOEXEC) < 0)
		return sb_error(reterr, -errno, "cannot start the network helper: %s",
				strerror(errno));
	if (pipe2(report, O_CLOEXEC) < 0) {
		int r = -errno;

		close(go[0]);
		close(go[1]);
		return sb_error(reterr, r, "cannot start the network helper: %s", strerror(-r));
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		close(go[0]);
		close(go[1]);
		close(report[0]);
		close(report[1]);
		return sb_error(reterr, r, "cannot start the network helper: %s", strerror(-r));
	}
	if (pid == 0) {
		close(go[1]);
		close(report[0]);
		helper_main(plan, tools, go[0], report[1]);
	}
	close(go[0]);
	close(report[1]);
	*ret = (struct sb_netns_helper){.pid = pid, .go_fd = go[1], .report_fd = report[0]};
	return 0;
}

int sb_netns_helper_start(struct sb_netns_helper *h, pid_t target, char **reterr)
{
	int32_t t = (int32_t)target;
	char msg[1024];
	ssize_t n;

	write_full(h->go_fd, &t, sizeof(t));
	n = read_full(h->report_fd, msg, sizeof(msg) - 1);
	close(h->report_fd);
	h->report_fd = -1;
	if (n == 0) {
		/* Closed without a word: started, unless it died. */
		int status;

		if (waitpid(h->pid, &status, WNOHANG) != h->pid)
			return 0;
		h->pid = -1;
		return sb_error(reterr, -EIO, "the network helper ended unexpectedly");
	}
	if (n < 0)
		return sb_error(reterr, (int)n, "cannot read the network helper's report: %s",
				strerror((int)-n));
	msg[n] = '\0';
	return sb_error(reterr, -EIO, "%s", msg);
}

void sb_netns_helper_done(struct sb_netns_helper *h, bool wait)
{
	int status;

	if (h->go_fd >= 0)
		close(h->go_fd);
	if (h->report_fd >= 0)
		close(h->report_fd);
	if (wait && h->pid > 0)
		(void)wait_exit(h->pid, &status);
	*h = SB_NETNS_HELPER_NULL;
}

void sb_netns_helper_forget(struct sb_netns_helper *h)
{
	if (h->go_fd >= 0)
		close(h->go_fd);
	if (h->report_fd >= 0)
		close(h->report_fd);
	*h = SB_NETNS_HELPER_NULL;
}

/* ------------------------------------------------------------------------ */

int sb_netns_explain(const struct sb_netns_plan *plan, struct sb_buf *out)
{
	int r;

	if (!plan->outside)
		return sb_buf_puts(out,
				   "#   network: a namespace of its own with its loopback only "
				   "(no net= ALLOW rule): nothing outside is reachable\n");
	r = sb_buf_printf(
	    out,
	    "#   network: a namespace of its own; slirp4netns gives it tap0 (" SB_NETNS_GUEST
	    "/24, gateway " SB_NETNS_GATEWAY "), host loopback %s, DNS forwarder "
	    "%s; nftables inside it, default drop:\n",
	    plan->host_loopback ? "reachable (a rule names " SB_NETNS_GATEWAY ")" : "off",
	    plan->dns ? "on (a rule names " SB_NETNS_DNS ")" : "off");
	for (const char *line = plan->ruleset; r >= 0 && line && *line;) {
		size_t len = strcspn(line, "\n");

		r = sb_buf_printf(out, "#     %.*s\n", (int)len, line);
		line += len + (line[len] == '\n');
	}
	for (char **n = plan->notes; r >= 0 && n && *n; n++)
		r = sb_buf_printf(out, "#   note: %s\n", *n);
	return r;
}
