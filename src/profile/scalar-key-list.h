/* SPDX-License-Identifier: MIT */
/* The scalar profile keys (a key that may appear once per file and once on the
 * command line, the command line winning), one line per key:
 *   SB_SCALAR_KEY(id, key, parse)
 * id is SB_KEY_<id> in enum sb_scalar_key (profile.h), key the profile's
 * spelling, parse its parser in profile-keys.c. The resource-limit keys are
 * scalar keys too; they have their own list (limit-key-list.h) since their
 * unit alone decides how they are parsed, stored and applied.
 *
 * Included by profile.h (the enum) and profile-keys.c (the key table and the
 * names). No include guard: each includer expands the list its own way. */
SB_SCALAR_KEY(OS_SANDBOX, "os-sandbox", parse_os_sandbox)
SB_SCALAR_KEY(PY_SANDBOX, "py-sandbox", parse_py_sandbox)
SB_SCALAR_KEY(LEARN, "learn", parse_learn)
SB_SCALAR_KEY(PORT, "port", parse_port)
SB_SCALAR_KEY(RESULT_MODE, "remote-result-mode", parse_result_mode)
SB_SCALAR_KEY(RESULT_GUARD, "remote-result-guard", parse_result_guard)
SB_SCALAR_KEY(USER, "user", parse_user)
