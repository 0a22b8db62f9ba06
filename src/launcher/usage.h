/* SPDX-License-Identifier: MIT */
#pragma once

/* The text of python-sb --help. */
extern const char sb_usage_text[];
