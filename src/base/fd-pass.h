/* SPDX-License-Identifier: MIT */
#pragma once

/* One descriptor over a Unix socket (SCM_RIGHTS), with a one-byte message. */

/* 0, or -errno. */
int sb_send_fd(int sock, int fd);
/* The descriptor (close-on-exec), or -errno: -EPROTO for a message without
 * one, -ENODATA at the end of the stream. flags: recvmsg(2)'s (MSG_DONTWAIT
 * for one that must be there already). */
int sb_receive_fd(int sock, int flags);
