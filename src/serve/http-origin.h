/* SPDX-License-Identifier: MIT */
#pragma once

/* Which requests a browser could have been made to send: the checks against
 * a web page that makes the visitor's browser use a service it can reach
 * (one on localhost, on the visitor's network) without the visitor knowing.
 *
 * - DNS rebinding: a page of evil.example whose name is made to resolve to
 *   127.0.0.1 is then of the same origin as the service, and reads its
 *   answers. Its requests carry "Host: evil.example": the service answers
 *   only to IP addresses, localhost (and *.localhost) and the names given
 *   with --allow-host ("*": any).
 * - Cross-site requests: a page of any origin may POST a text/plain body to
 *   any address without asking first (a "simple" request), and a run would
 *   be run. The browser says where the page is from (Origin): a POST whose
 *   Origin is not the service's own (the Host it names) nor one of the names
 *   of --allow-host is refused. Clients that are not browsers send no Origin.
 *
 * Both return NULL when the request may go on, else why not (a static
 * text). */

/* host: the Host header (NULL: none, HTTP/1.0). */
const char *sb_http_host_problem(const char *host, char *const *allowed);
/* origin: the Origin header (NULL: none); host: the Host header. */
const char *sb_http_origin_problem(const char *origin, const char *host, char *const *allowed);
