/* SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "env-policy.h"
#include "fake-env.h"
#include "tap.h"

static char *host[] = {
    "HOME=/root", "USER=root",	"TERM=xterm",	"SECRET=s3cret", "API_KEY=k",
    "API_URL=u",  "API_EMPTY=", "LANG=C.UTF-8", "PATH=/usr/bin", NULL,
};

/* Builds the environment for a profile made of the given lines (written to a
 * temporary file) and returns it joined with ' ' in sorted order. */
static char *env_for(const char *profile_text, enum sb_rules_mode mode)
{
	char path[] = "/tmp/sb-env-test-XXXXXX";
	int fd = mkstemp(path);
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	_cleanup_strv_free_ char **envp = NULL;
	struct sb_diags diags = {0};
	struct sb_load_options opts = {
	    .path = path, .getenv = fake_getenv, .getenv_userdata = host, .cwd = "/tmp"};
	struct sb_buf out = {0};
	size_t n;
	int r;

	if (fd < 0 || write(fd, profile_text, strlen(profile_text)) < 0)
		return NULL;
	close(fd);
	r = sb_profile_load(&opts, &p, &diags);
	unlink(path);
	if (r < 0) {
		for (size_t i = 0; i < diags.n; i++)
			tap_diag("%u: %s", diags.items[i].line, diags.items[i].message);
		sb_diags_done(&diags);
		return strdup("(error)");
	}
	sb_diags_done(&diags);
	if (sb_env_build(p, host, mode, &envp) < 0)
		return NULL;
	n = sb_strv_length(envp);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(envp[i], envp[j]) > 0) {
				char *t = envp[i];
				envp[i] = envp[j];
				envp[j] = t;
			}
	for (size_t i = 0; i < n; i++)
		sb_buf_printf(&out, "%s%s", i ? " " : "", envp[i]);
	return sb_buf_steal(&out);
}

static const struct {
	const char *profile;
	const char *env;
	const char *name;
} cases[] = {
    {"", "TERM=xterm", "nothing passes but TERM"},
    {"env=My_ENV=x\n", "My_ENV=x TERM=xterm", "literal value (spec 10.34)"},
    {"env=X=${UNSET}\n", "TERM=xterm", "forwarded unset variable is absent"},
    {"env=X=${UNSET:-d}\n", "TERM=xterm X=d", "forward default applies when unset"},
    {"env=X=${USER:-d}\n", "TERM=xterm X=root", "forward default unused when set"},
    {"env=X=${API_EMPTY}\n", "TERM=xterm X=", "forwarded empty variable is set and empty"},
    {"env=HOME=${HOME}\n", "HOME=/root TERM=xterm", "forward same name"},
    {"env=X=pre-${USER}-post\n", "TERM=xterm X=pre-root-post", "mixed text is a literal"},
    {"env=X=pre-${UNSET}-post\n", "TERM=xterm X=pre--post", "literal with unset ref"},
    {"env=API_*=${API_*}\n", "API_KEY=k API_URL=u TERM=xterm", "wildcard copies non-empty matches"},
    {"env=API_*=fixed\n", "API_KEY=fixed API_URL=fixed TERM=xterm",
     "wildcard with a literal sets it on every match"},
    {"env=API_KEY=exact\nenv=API_*=${API_*}\n", "API_KEY=exact API_URL=u TERM=xterm",
     "exact beats wildcard (exact first)"},
    {"env=API_*=${API_*}\nenv=API_KEY=exact\n", "API_KEY=exact API_URL=u TERM=xterm",
     "exact beats wildcard (wildcard first)"},
    {"env=API_*=${API_*}\nenv=API_KEY=${UNSET}\n", "API_URL=u TERM=xterm",
     "exact forward of an unset variable removes a wildcard match"},
    {"env=A=1\nunenv=A\n", "TERM=xterm", "unenv removes"},
    {"unenv=A\nenv=A=1\n", "TERM=xterm", "unenv wins wherever the line sits"},
    {"env=API_*=${API_*}\nunenv=API_K*\n", "API_URL=u TERM=xterm", "unenv pattern"},
    {"unenv=TERM\n", "", "TERM can be removed"},
    {"env=TERM=dumb\n", "TERM=dumb", "an explicit TERM rule replaces the implicit one"},
    {"env=${USER}_NAME=v\n", "TERM=xterm root_NAME=v", "keys are expanded too"},
    {"env=X=${SECRET}\n", "TERM=xterm X=s3cret", "forward under another name"},
};

/* Learning: the whole host environment, the rules' values on top (an unenv=
 * removes from what the rules give, not from the host's). */
static const struct {
	const char *profile;
	const char *env;
	const char *name;
} learn_cases[] = {
    {"",
     "API_EMPTY= API_KEY=k API_URL=u HOME=/root LANG=C.UTF-8 PATH=/usr/bin SECRET=s3cret "
     "TERM=xterm USER=root",
     "learning: the whole host environment"},
    {"env=HOME=/tmp\nenv=NEW=1\n",
     "API_EMPTY= API_KEY=k API_URL=u HOME=/tmp LANG=C.UTF-8 NEW=1 PATH=/usr/bin SECRET=s3cret "
     "TERM=xterm USER=root",
     "learning: a rule's value replaces the host's, a new name is added"},
    {"unenv=SECRET\n",
     "API_EMPTY= API_KEY=k API_URL=u HOME=/root LANG=C.UTF-8 PATH=/usr/bin SECRET=s3cret "
     "TERM=xterm USER=root",
     "learning: unenv= does not hide a host variable"},
};

int main(void)
{
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *got = env_for(cases[i].profile, SB_MODE_ENFORCE);

		TAP_IS_STR(got, cases[i].env, cases[i].name);
	}
	for (size_t i = 0; i < ELEMENTSOF(learn_cases); i++) {
		_cleanup_free_ char *got = env_for(learn_cases[i].profile, SB_MODE_LEARN);

		TAP_IS_STR(got, learn_cases[i].env, learn_cases[i].name);
	}
	return tap_done();
}
