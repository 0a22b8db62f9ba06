/* SPDX-License-Identifier: MIT */
#include "identity.h"

#include "util.h"

int sb_identity_parse(const char *text, struct sb_identity *ret, char **reterr)
{
	_cleanup_free_ char *copy = strdup(text);
	unsigned long long uid, gid;
	char *colon;

	if (!copy)
		return -ENOMEM;
	colon = strchr(copy, ':');
	if (colon)
		*colon = '\0';
	/* (uid_t)-1 means "unchanged" to setresuid(): not an identity. */
	if (sb_safe_atou64(copy, &uid) < 0 || uid >= UINT32_MAX ||
	    (colon && (sb_safe_atou64(colon + 1, &gid) < 0 || gid >= UINT32_MAX)))
		return sb_error(reterr, -EINVAL,
				"expected a numeric UID or UID:GID (for example 65534:65534)");
	*ret = (struct sb_identity){
	    .set = true, .uid = (uint32_t)uid, .gid = colon ? (uint32_t)gid : (uint32_t)uid};
	return 0;
}
