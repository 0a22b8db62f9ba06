/* SPDX-License-Identifier: MIT */
/* From a profile to the kernel policy: which paths Landlock grants, which TCP
 * ports, what seccomp allows. Pure: nothing is applied here (a wrapper's boundary
 * is refused before its first step). */
#include <sys/resource.h>

#include "boundary.h"
#include "provider.h"
#include "fake-env.h"
#include "tap.h"

static char *host[] = {"HOME=/home/tester", NULL};

static struct sb_profile *load(const char *text)
{
	char path[] = "/tmp/sb-boundary-test-XXXXXX";
	int fd = mkstemp(path);
	struct sb_profile *p = NULL;
	struct sb_diags d = {0};
	struct sb_load_options o = {
	    .path = path, .getenv = fake_getenv, .getenv_userdata = host, .cwd = "/"};
	int r;

	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		return NULL;
	close(fd);
	r = sb_profile_load(&o, &p, &d);
	if (r == 0)
		r = sb_profile_check(p, &o, &d);
	for (size_t i = 0; i < d.n; i++)
		tap_diag("%u: %s", d.items[i].line, d.items[i].message);
	unlink(path);
	sb_diags_done(&d);
	if (r < 0)
		p = sb_profile_free(p);
	return p;
}

static const struct sb_landlock_path *find(const struct sb_boundary *b, const char *path)
{
	for (size_t i = 0; i < b->n_paths; i++)
		if (streq(b->paths[i].path, path))
			return &b->paths[i];
	return NULL;
}

static void test_grants(void)
{
	_cleanup_(sb_profile_freep) struct sb_profile *p =
	    load("expose-ro=/usr\nexpose-rw=/tmp\nexpose-ro=/etc\n");
	char *dirs[] = {"/usr/lib/python3.11", NULL};
	char *files[] = {"/usr/bin/env", NULL};
	struct sb_interp_paths interp = {.dirs = dirs, .files = files};
	struct sb_boundary b;
	const struct sb_landlock_path *e;

	if (!tap_ok(p != NULL, "profile loads"))
		return;
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_landlock, &interp, SB_MODE_ENFORCE, &b), 0,
		   "build");
	tap_ok(b.n_paths > 0 && b.use_seccomp, "landlock provider: Landlock and seccomp");
	e = find(&b, "/tmp");
	tap_ok(e && e->writable && !e->optional, "expose-rw: writable, required");
	e = find(&b, "/usr");
	tap_ok(e && !e->writable && !e->optional, "expose-ro: read-only, required");
	e = find(&b, "/usr/lib/python3.11");
	tap_ok(e && !e->writable && e->optional, "interpreter dir: read-only, optional");
	e = find(&b, "/usr/bin/env");
	tap_ok(e && !e->writable, "interpreter file granted");
	e = find(&b, "/dev/null");
	tap_ok(e && e->writable, "/dev/null is writable");
	tap_ok(find(&b, "/home/tester") == NULL && find(&b, "/root") == NULL,
	       "no home directory is granted implicitly");
	tap_ok(b.restrict_bind && b.n_bind_ports == 0 && b.restrict_connect &&
		   b.n_connect_ports == 0,
	       "no net= rule: every TCP port refused");
	tap_ok(!b.seccomp.allow_inet && !b.seccomp.allow_udp, "no net= rule: no inet socket");
	tap_ok(b.seccomp.allow_unix_socket, "an expose-rw rule allows AF_UNIX");
	tap_ok(!b.seccomp.allow_exec && !b.seccomp.allow_fork, "no process-exec: no fork/exec");
	sb_boundary_done(&b);
}

static void test_network(void)
{
	_cleanup_(sb_profile_freep) struct sb_profile *p =
	    load("net=ALLOW|tcp|127.0.0.1|8080,8443|OUT\nnet=ALLOW|tcp|*|9000-9002|IN\n"
		 "net=DENY|tcp|10.0.0.0/8|*|OUT\nnet=ALLOW|udp|*|53|OUT\n");
	struct sb_boundary b;

	if (!tap_ok(p != NULL, "net profile loads"))
		return;
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_landlock, NULL, SB_MODE_ENFORCE, &b), 0,
		   "build");
	tap_ok(b.restrict_connect && b.n_connect_ports == 2 && b.connect_ports[0] == 8080 &&
		   b.connect_ports[1] == 8443,
	       "connect ports from OUT rules");
	tap_ok(b.restrict_bind && b.n_bind_ports == 3 && b.bind_ports[0] == 9000,
	       "bind ports from IN rules");
	tap_ok(b.seccomp.allow_inet && b.seccomp.allow_udp, "tcp and udp sockets allowed");
	tap_ok(!b.seccomp.allow_unix_socket, "no expose-rw: no AF_UNIX");
	tap_ok(sb_strv_length(b.notes) >= 2, "host, DENY and UDP rules are noted for --explain");
	{
		_cleanup_free_ char *err = NULL;

		TAP_IS_INT(sb_provider_landlock_check_abi(&b, 3, &err), -EOPNOTSUPP,
			   "ABI 3 cannot filter the ports this profile allows: fail closed");
		tap_ok(err && strstr(err, "ABI 4"), "the message names the ABI needed");
	}
	TAP_IS_INT(sb_provider_landlock_check_abi(&b, 4, NULL), 0, "ABI 4 can");
	sb_boundary_done(&b);

	p = sb_profile_free(p);
	p = load("net=ALLOW|tcp|*|*|OUT\n");
	if (!tap_ok(p != NULL, "all-ports profile loads"))
		return;
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_landlock, NULL, SB_MODE_ENFORCE, &b), 0,
		   "build");
	tap_ok(!b.restrict_connect, "every port allowed: connect left unrestricted");
	tap_ok(b.restrict_bind && b.n_bind_ports == 0, "bind still refused everywhere");
	TAP_IS_INT(sb_provider_landlock_check_abi(&b, 3, NULL), 0,
		   "nothing to filter by port: an old ABI is enough");
	sb_boundary_done(&b);
}

static void test_providers_and_api(void)
{
	_cleanup_(sb_profile_freep) struct sb_profile *p =
	    load("python-api=ALLOW:process-exec\nlimit-cpu=2s\ntimeout=5s\n");
	struct sb_boundary b;

	if (!tap_ok(p != NULL, "api profile loads"))
		return;
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_subprocess, NULL, SB_MODE_ENFORCE, &b), 0,
		   "build subprocess");
	tap_ok(b.use_seccomp && b.n_paths == 0 && !b.restrict_bind && !b.restrict_connect,
	       "subprocess: seccomp without Landlock");
	tap_ok(b.seccomp.allow_exec && b.seccomp.allow_fork, "process-exec granted: fork/exec");
	TAP_IS_INT(b.limits.cpu_ms, 2000, "limits copied");
	TAP_IS_INT(b.limits.timeout_ms, 5000, "timeout copied");
	sb_boundary_done(&b);
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_none, NULL, SB_MODE_ENFORCE, &b), 0,
		   "build none");
	tap_ok(b.n_paths == 0 && !b.use_seccomp, "none: no seccomp");
	TAP_IS_INT(b.limits.cpu_ms, 2000, "none still has the limits");
	sb_boundary_done(&b);
}

/* Learning is an input of the build: the same profile, the seccomp filter of
 * learning (nothing the guard records refused), the limits unchanged. */
static void test_learning_mode(void)
{
	_cleanup_(sb_profile_freep) struct sb_profile *p = load("limit-cpu=2s\n");
	struct sb_boundary b;

	if (!tap_ok(p != NULL, "learning profile loads"))
		return;
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_subprocess, NULL, SB_MODE_ENFORCE, &b), 0,
		   "build, enforced");
	tap_ok(!b.seccomp.allow_inet && !b.seccomp.allow_unix_socket && !b.seccomp.allow_exec &&
		   !b.seccomp.allow_fork,
	       "enforced: no socket, no fork/exec without a rule");
	sb_boundary_done(&b);
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_subprocess, NULL, SB_MODE_LEARN, &b), 0,
		   "build, learning");
	tap_ok(b.use_seccomp && b.seccomp.allow_inet && b.seccomp.allow_udp &&
		   b.seccomp.allow_unix_socket && b.seccomp.allow_exec && b.seccomp.allow_fork,
	       "learning: the filter refuses nothing the guard would record");
	TAP_IS_INT(b.limits.cpu_ms, 2000, "learning keeps the limits");
	tap_ok(p->os_sandbox == SB_OS_UNSET, "the profile is not rewritten");
	sb_boundary_done(&b);
}

/* A wrapper provider confines the program it runs: until the launcher runs
 * one, entering its boundary in this process must fail before any step. */
static void test_wrapper_fails_closed(void)
{
	_cleanup_(sb_profile_freep) struct sb_profile *p = load("limit-open-files=3\n");
	_cleanup_strv_free_ char **warnings = NULL;
	_cleanup_free_ char *err = NULL;
	struct rlimit before, after;
	struct sb_boundary b;

	if (!tap_ok(p != NULL, "wrapper profile loads"))
		return;
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_bwrap, NULL, SB_MODE_ENFORCE, &b), 0,
		   "build bwrap");
	getrlimit(RLIMIT_NOFILE, &before);
	TAP_IS_INT(sb_boundary_enter(&b, &warnings, &err), -EOPNOTSUPP,
		   "entering a wrapper's boundary here is refused");
	getrlimit(RLIMIT_NOFILE, &after);
	tap_ok(err && strstr(err, "os-sandbox=bwrap"), "the message names the provider");
	tap_ok(before.rlim_cur == after.rlim_cur, "nothing was applied");
	sb_boundary_done(&b);
}

int main(void)
{
	test_grants();
	test_network();
	test_providers_and_api();
	test_learning_mode();
	test_wrapper_fails_closed();
	return tap_done();
}
