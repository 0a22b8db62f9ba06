/* SPDX-License-Identifier: MIT */
/* sb_ipython_decide(): whether ipython-sb runs IPython or the plain REPL
 * (spec section 2), for each rule that keeps IPython out, IPython's
 * installation included (which the integration tests cannot vary). */

#include "api-registry.h"
#include "ipython.h"
#include "tap.h"
#include "util.h"

struct rules {
	struct sb_profile p;
	struct sb_api_rule *apis;
	size_t n_apis;
	struct sb_name_rule import;
	struct sb_env_rule env;
	struct sb_expose_rule expose;
};

/* IPython allowed, threads allowed: what it needs. */
static void full(struct rules *r, bool threads, bool imports)
{
	char *err = NULL;

	free(r->apis);
	*r = (struct rules){0};
	if (threads && sb_api_rule_parse("ALLOW:threads", (struct sb_origin){0}, &r->apis,
					 &r->n_apis, &err) < 0)
		abort();
	r->import.name = (char *)"IPython";
	r->p.apis = r->apis;
	r->p.n_apis = r->n_apis;
	r->p.imports = imports ? &r->import : NULL;
	r->p.n_imports = imports ? 1 : 0;
}

static void check(const struct sb_profile *p, bool installed, bool learning,
		  enum sb_ipython_choice want, const char *want_reason_start, const char *name)
{
	const char *reason = NULL;
	enum sb_ipython_choice got = sb_ipython_decide(p, installed, learning, &reason);

	TAP_IS_INT(got, want, name);
	tap_ok(want_reason_start ? reason && startswith(reason, want_reason_start) : !reason,
	       "%s: reason '%s'", name, reason ? reason : "(none)");
}

int main(void)
{
	struct rules r = {0};

	full(&r, true, true);
	check(&r.p, true, false, SB_IPYTHON_PRIVATE, NULL, "everything IPython needs");
	check(&r.p, false, false, SB_IPYTHON_PLAIN, "IPython is not installed", "not installed");

	full(&r, true, false);
	check(&r.p, true, false, SB_IPYTHON_PLAIN, "python-import= does not allow IPython",
	      "no python-import=IPython");
	r.p.import_all = true;
	check(&r.p, true, false, SB_IPYTHON_PRIVATE, NULL, "python-import=*");

	full(&r, false, true);
	check(&r.p, true, false, SB_IPYTHON_PLAIN, "python-api= does not allow threads",
	      "no threads");
	/* Learning records what is missing instead of refusing it. */
	full(&r, false, false);
	check(&r.p, true, true, SB_IPYTHON_PRIVATE, NULL, "learning");
	check(&r.p, false, true, SB_IPYTHON_PLAIN, "IPython is not installed",
	      "learning, not installed");

	/* learn=false: command-line rules are refused. */
	full(&r, true, true);
	r.p.learn_locked = true;
	check(&r.p, true, false, SB_IPYTHON_PLAIN, "learn=false refuses",
	      "learn=false, no declared directory");
	r.env = (struct sb_env_rule){
	    .name = (char *)"IPYTHONDIR", .kind = SB_ENV_LITERAL, .value = (char *)"/srv/ip/dir"};
	r.p.envs = &r.env;
	r.p.n_envs = 1;
	check(&r.p, true, false, SB_IPYTHON_PLAIN, "learn=false refuses",
	      "learn=false, IPYTHONDIR not granted");
	r.expose = (struct sb_expose_rule){
	    .path = (char *)"/srv/ip", .resolved = (char *)"/srv/ip", .writable = false};
	r.p.exposes = &r.expose;
	r.p.n_exposes = 1;
	check(&r.p, true, false, SB_IPYTHON_PLAIN, "learn=false refuses",
	      "learn=false, IPYTHONDIR read-only");
	r.expose.writable = true;
	check(&r.p, true, false, SB_IPYTHON_DECLARED, NULL, "learn=false, IPYTHONDIR declared");
	r.expose.resolved = r.expose.path = (char *)"/srv/i";
	check(&r.p, true, false, SB_IPYTHON_PLAIN, "learn=false refuses",
	      "learn=false, a grant of a sibling prefix");
	free(r.apis);
	return tap_done();
}
