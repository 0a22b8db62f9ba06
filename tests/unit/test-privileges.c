/* SPDX-License-Identifier: MIT */
/* Identity and capabilities: the parser, and the drop checked by its effect
 * in /proc/self/status of a forked child (it cannot be undone). */
#include <sys/prctl.h>
#include <sys/wait.h>

#include "privileges.h"
#include "tap.h"
#include "util.h"

static void test_parse(void)
{
	static const struct {
		const char *text;
		bool ok;
		uint32_t uid, gid;
	} cases[] = {
	    {"65534", true, 65534, 65534}, {"1000:100", true, 1000, 100},
	    {"0:0", true, 0, 0},	   {"4294967294", true, 4294967294u, 4294967294u},
	    {"4294967295", false, 0, 0}, /* (uid_t)-1: "unchanged" */
	    {"-1", false, 0, 0},	   {"nobody", false, 0, 0},
	    {"1000:", false, 0, 0},	   {":1000", false, 0, 0},
	    {"1000:100:1", false, 0, 0},   {"", false, 0, 0},
	    {" 1000", false, 0, 0},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct sb_identity id = {0};
		_cleanup_free_ char *err = NULL;
		int r = sb_identity_parse(cases[i].text, &id, &err);

		if (cases[i].ok)
			tap_ok(r == 0 && id.set && id.uid == cases[i].uid && id.gid == cases[i].gid,
			       "'%s' -> %u:%u", cases[i].text, cases[i].uid, cases[i].gid);
		else
			tap_ok(r == -EINVAL && err && strstr(err, "numeric"), "'%s' refused (%s)",
			       cases[i].text, err ? err : "?");
	}
}

/* The value of a "Name:\t..." line of /proc/self/status. */
static bool status_field(const char *name, char *out, size_t size)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	size_t n = strlen(name);

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			snprintf(out, size, "%s", line + n + 1 + strspn(line + n + 1, " \t"));
			out[strcspn(out, "\n")] = '\0';
			return true;
		}
	return false;
}

/* Child: drops, then checks; exit status 0 when all holds, else the check
 * number that failed. */
static int child_drop(const struct sb_identity *user, bool root)
{
	static const char *const zero_sets[] = {"CapInh", "CapPrm", "CapEff", "CapAmb"};
	struct sb_privileges_report rep;
	char *err = NULL, v[128];

	if (sb_privileges_drop(user, true, &rep, &err) < 0) {
		(void)fprintf(stderr, "# %s\n", err ? err : "?");
		return 1;
	}
	for (size_t i = 0; i < ELEMENTSOF(zero_sets); i++)
		if (!status_field(zero_sets[i], v, sizeof(v)) || !streq(v, "0000000000000000"))
			return 2 + (int)i;
	if (!status_field("NoNewPrivs", v, sizeof(v)) || !streq(v, "1"))
		return 6;
	if (root) {
		if (!status_field("CapBnd", v, sizeof(v)) || !streq(v, "0000000000000000"))
			return 7;
		/* All eight bits: four flags and their locks. */
		if (prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) != 0xff - 0x10 /* KEEP_CAPS off */)
			return 8;
	} else if (!rep.bounding_kept || !rep.securebits_kept) {
		return 9;
	}
	if (user && root &&
	    (getuid() != user->uid || getgid() != user->gid || !rep.switched ||
	     getgroups(0, NULL) != 0))
		return 10;
	if (user && !root && rep.switched)
		return 11;
	return 0;
}

static int in_child(const struct sb_identity *user, bool root)
{
	int status;
	pid_t pid;

	(void)fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(child_drop(user, root));
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int main(void)
{
	const struct sb_identity nobody = {.set = true, .uid = 65534, .gid = 65534};
	bool root = geteuid() == 0;
	struct sb_buf b = {0};

	test_parse();
	TAP_IS_INT(in_child(NULL, root), 0, "every capability dropped, no_new_privs");
	TAP_IS_INT(in_child(&nobody, root), 0,
		   root ? "user=65534: switched, no groups, no capability"
			: "user=65534 unprivileged: identity kept, no capability");
	tap_ok(sb_privileges_explain(&nobody, true, &b) == 0 && b.data &&
		   strstr(b.data, "#   capabilities: none") &&
		   strstr(b.data, root ? "#   identity: uid 65534, gid 65534"
				       : "not applied: only a python-sb started as root"),
	       "explain: %s", b.data ? b.data : "(none)");
	sb_buf_reset(&b);
	tap_ok(sb_privileges_explain(NULL, false, &b) == 0 && b.data &&
		   strstr(b.data, "#   capabilities: kept (os-sandbox=none)"),
	       "explain without the drop");
	sb_buf_reset(&b);
	return tap_done();
}
