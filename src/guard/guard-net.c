/* SPDX-License-Identifier: MIT */
/* net=: the network part of the guard (spec §3.5). Decisions come from the
 * compiled policy (net-policy.c) on the audit events of the socket module;
 * resolution of the names of rules is pinned, so getaddrinfo() and
 * gethostbyname[_ex]() are replaced by C functions answering from the pin, and
 * listen(), which raises no audit event, is replaced on _socket.socket. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <structmember.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "guard-files-check.h"
#include "guard-observer.h"
#include "profile.h"
#include "guard-part.h"
#include "guard-runtime.h"
#include "net-policy.h"
#include "pysandboxes-module.h"
#include "util.h"

/* A name resolves to at most this many addresses in a decision; more are
 * refused rather than judged on a part of them. */
#define SB_NET_MAX_ADDRS 32

static struct {
	struct sb_net_policy *policy;
	PyTypeObject *sock_type; /* _socket.socket */
	Py_ssize_t off_family, off_type;
	PyObject *fileno;      /* _socket.socket.fileno, the C method */
	PyObject *orig_listen; /* _socket.socket.listen */
	PyObject *orig_getaddrinfo, *orig_gethostbyname, *orig_gethostbyname_ex;
	PyObject *wrappers[3]; /* getaddrinfo, gethostbyname, gethostbyname_ex */
	PyObject *gaierror;
	PyObject *seen_modules[2]; /* the _socket and socket modules last patched */
	/* What seccomp refuses at socket() (kernel/boundary.c): AF_INET/AF_INET6
	 * without any ALLOW rule, SOCK_DGRAM without a udp one; every provider
	 * but none loads it. The guard refuses first, naming the rule. */
	bool seccomp, inet_allowed, udp_allowed;
} net;

/* One endpoint to decide on: what the program wrote and what it resolves to. */
struct target {
	char host[256];
	bool is_name; /* host is a name, not an address */
	struct sb_net_addr addrs[SB_NET_MAX_ADDRS];
	size_t n_addrs;
	uint16_t port;
};

static inline void pyobject_decrefp(PyObject **p)
{
	Py_XDECREF(*p);
}

static const char *kind_name(unsigned kind)
{
	return kind == SB_NET_UDP ? "udp" : "tcp";
}

static int raise_refused(const char *fmt, ...) _printf_(1, 2);
static int raise_refused(const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (r < 0) {
		text = NULL;
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_connection_refused(text);
}

/* "'host' (ip:port)" for a name, "'[ip]:port'" for an address. */
static void describe(const struct target *t, size_t index, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN + 2];

	if (index < t->n_addrs)
		sb_net_addr_format(&t->addrs[index], t->is_name, ip, sizeof(ip));
	else
		snprintf(ip, sizeof(ip), "?");
	if (t->is_name)
		snprintf(buf, size, "'%s' (%s:%u)", t->host, ip, t->port);
	else
		snprintf(buf, size, "'[%s]:%u'", ip, t->port);
}

static int refuse_target(const struct target *t, unsigned kind, unsigned direction,
			 const struct sb_net_policy_rule *rule, size_t index)
{
	char what[sizeof(t->host) + INET6_ADDRSTRLEN + 32], ip[INET6_ADDRSTRLEN];

	/* Only the implicit default policy's refusal is offered: a DENY rule
	 * is a decision. */
	if (!rule) {
		if (index < t->n_addrs)
			sb_net_addr_format(&t->addrs[index], false, ip, sizeof(ip));
		else
			snprintf(ip, sizeof(ip), "0.0.0.0");
		if (sb_guard_refused(&(struct sb_refusal){.kind = SB_REFUSAL_NET,
							  .subject = t->is_name ? t->host : ip,
							  .protocol = kind,
							  .port = t->port,
							  .direction = direction}) ==
		    SB_RECORDED_ALLOW)
			return 0;
	}
	describe(t, index, what, sizeof(what));
	if (rule)
		return raise_refused(
		    "Guard network connection to %s DENIED by rule '%s' from %s:%u", what,
		    rule->text, rule->file, rule->line);
	if (index < t->n_addrs)
		sb_net_addr_format(&t->addrs[index], false, ip, sizeof(ip));
	return raise_refused("Guard network connection to %s DENIED by implicit default policy. "
			     "Add 'net=ALLOW|%s|%s|%u|%s' to '%s'",
			     what, kind_name(kind), t->is_name ? t->host : ip, t->port,
			     direction == SB_NET_IN ? "IN" : "OUT", sb_guard_profile_path());
}

/* Whether the refusal of name stands, when it comes before any of its
 * addresses is decided on (at resolution; no rule names it): the observer may
 * let it resolve, and the connection is then decided on its addresses. */
static bool name_refusal_stands(const char *name)
{
	return sb_guard_refused(
		   &(struct sb_refusal){.kind = SB_REFUSAL_NET_NAME, .subject = name}) == SB_REFUSE;
}

static int refuse_name(const char *name, const char *why)
{
	return raise_refused("Guard network connection to '%s' DENIED by implicit default policy: "
			     "%s",
			     name, why);
}

/* The text of a host (str, bytes or bytearray) as the socket module would
 * send it: ASCII, non-ASCII names through the idna codec as CPython does.
 * 1 when copied, 0 for another type (not a host), -1 with an exception. */
static int host_text(PyObject *host, char *buf, size_t size)
{
	_cleanup_(pyobject_decrefp) PyObject *encoded = NULL;
	const char *s;
	Py_ssize_t n;

	if (PyUnicode_Check(host)) {
		if (PyUnicode_IS_ASCII(host)) {
			s = PyUnicode_AsUTF8AndSize(host, &n);
		} else {
			encoded = PyUnicode_AsEncodedString(host, "idna", NULL);
			if (!encoded)
				return -1;
			s = PyBytes_AS_STRING(encoded);
			n = PyBytes_GET_SIZE(encoded);
		}
	} else if (PyBytes_Check(host)) {
		s = PyBytes_AS_STRING(host);
		n = PyBytes_GET_SIZE(host);
	} else if (PyByteArray_Check(host)) {
		s = PyByteArray_AS_STRING(host);
		n = PyByteArray_GET_SIZE(host);
	} else {
		return 0;
	}
	if (!s)
		return -1;
	if ((size_t)n >= size || memchr(s, '\0', (size_t)n)) {
		PyErr_SetString(PyExc_ValueError, "host name too long or with a NUL byte");
		return -1;
	}
	memcpy(buf, s, (size_t)n);
	buf[n] = '\0';
	return 1;
}

/* getaddrinfo() without the GIL; adds the addresses of family (AF_UNSPEC:
 * both) to t. 0, or an EAI_* code. */
static int lookup(const char *host, int family, int flags, struct target *t)
{
	struct addrinfo hints = {
	    .ai_family = family, .ai_socktype = SOCK_STREAM, .ai_flags = flags};
	struct addrinfo *res = NULL;
	PyThreadState *ts;
	int e;

	/* A lookup may wait on the network: other threads run meanwhile. */
	ts = PyEval_SaveThread();
	e = getaddrinfo(host, NULL, &hints, &res);
	PyEval_RestoreThread(ts);
	if (e != 0)
		return e;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		struct sb_net_addr a;
		bool dup = false;

		if (!sb_net_addr_from_sockaddr(ai->ai_addr, &a))
			continue;
		for (size_t i = 0; i < t->n_addrs && !dup; i++)
			dup = memcmp(&t->addrs[i], &a, sizeof(a)) == 0;
		if (dup)
			continue;
		if (t->n_addrs == SB_NET_MAX_ADDRS) {
			freeaddrinfo(res);
			return EAI_OVERFLOW;
		}
		t->addrs[t->n_addrs++] = a;
	}
	freeaddrinfo(res);
	return t->n_addrs ? 0 : EAI_NONAME;
}

static bool is_numeric(const char *host, int family, struct target *t)
{
	size_t before = t->n_addrs;

	if (lookup(host, family, AI_NUMERICHOST, t) == 0)
		return true;
	t->n_addrs = before;
	return false;
}

/* The addresses t->host stands for on a socket of this family, the way
 * CPython's setipaddr() reads it: "" is the wildcard, "<broadcast>" the IPv4
 * broadcast, a numeric address itself; a pinned name its pinned addresses of
 * that family; another name what the resolver says, when some rule could
 * allow an unpinned name at all. 0, or -1 with an exception. */
static int resolve_target(struct target *t, int family)
{
	const struct sb_net_pin *pin;
	int e;

	t->is_name = false;
	t->n_addrs = 0;
	if (!*t->host) {
		t->addrs[0] = (struct sb_net_addr){.family = family};
		t->n_addrs = 1;
		return 0;
	}
	if (family == AF_INET && streq(t->host, "<broadcast>")) {
		sb_net_addr_parse("255.255.255.255", &t->addrs[0]);
		t->n_addrs = 1;
		return 0;
	}
	if (is_numeric(t->host, family, t))
		return 0;
	t->is_name = true;
	pin = sb_net_policy_pin(net.policy, t->host);
	if (pin) {
		for (size_t i = 0; i < pin->n_addrs && t->n_addrs < SB_NET_MAX_ADDRS; i++)
			if (pin->addrs[i].family == family)
				t->addrs[t->n_addrs++] = pin->addrs[i];
		if (!t->n_addrs)
			return refuse_name(t->host, family == AF_INET6
							? "the name has no pinned IPv6 address"
							: "the name has no pinned IPv4 address");
		return 0;
	}
	if (!net.policy->allows_networks && name_refusal_stands(t->host))
		return refuse_name(t->host, "no net= rule can allow a name that no rule names");
	e = lookup(t->host, family, 0, t);
	if (e != 0)
		return refuse_name(t->host, e == EAI_OVERFLOW ? "the name has too many addresses"
							      : gai_strerror(e));
	return 0;
}

static int ensure_socket_guard(void);

/* The family and the kind (tcp/udp) of a socket, read from the C object:
 * a subclass overriding .family or .type cannot change what is checked.
 * 0, or -1 with an exception. */
static int socket_kind(PyObject *sock, int *ret_family, unsigned *ret_kind, int *ret_type)
{
	int type = 0;

	if (ensure_socket_guard() < 0)
		return -1;
	if (!net.sock_type || !PyObject_TypeCheck(sock, net.sock_type))
		return raise_refused("Guard network connection DENIED: not a socket object");
	*ret_family = *(int *)((char *)sock + net.off_family);
	type = *(int *)((char *)sock + net.off_type) & 0xf; /* without SOCK_NONBLOCK/CLOEXEC */
	*ret_type = type;
	*ret_kind = type == SOCK_STREAM ? SB_NET_TCP : type == SOCK_DGRAM ? SB_NET_UDP : 0;
	return 0;
}

int sb_guard_net_check_unix_path(const char *path, const char *op)
{
	PyObject *type, *value, *tb, *text;
	const char *why = NULL;

	if (sb_guard_file_check(path, true) >= 0)
		return 0;
	/* Reported as what a socket user catches, with the files part's
	 * words about the rule. */
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	/* The OSError's own words, without "[Errno 2]" and the path. */
	text = value ? PyObject_GetAttrString(value, "strerror") : NULL;
	if (!text || !PyUnicode_Check(text)) {
		Py_XDECREF(text);
		PyErr_Clear();
		text = value ? PyObject_Str(value) : NULL;
	}
	if (text)
		why = PyUnicode_AsUTF8(text);
	PyErr_Clear();
	raise_refused("Guard network %s to AF_UNIX socket '%s' DENIED: %s", op, path,
		      why ? why : "no expose-rw= rule covers this path");
	Py_XDECREF(text);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
	return -1;
}

/* An AF_UNIX address: abstract names are refused; a path needs the files
 * part's write grant (expose-rw), for bind as for connect and send. */
static int check_unix(PyObject *address, const char *op)
{
	_cleanup_(pyobject_decrefp) PyObject *bytes = NULL;
	Py_buffer view;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	size_t n;

	if (PyUnicode_Check(address)) {
		bytes = PyUnicode_EncodeFSDefault(address);
		if (!bytes)
			return -1;
		address = bytes;
	}
	if (PyObject_GetBuffer(address, &view, PyBUF_SIMPLE) < 0)
		return -1;
	n = (size_t)view.len < sizeof(path) - 1 ? (size_t)view.len : sizeof(path) - 1;
	memcpy(path, view.buf, n);
	path[n] = '\0';
	PyBuffer_Release(&view);
	/* An empty address autobinds to an abstract name. Abstract names live
	 * outside the file system, where no expose= rule can speak of them. */
	if (n == 0 || path[0] == '\0')
		return raise_refused("Guard network %s to abstract AF_UNIX socket '%s' DENIED: "
				     "abstract sockets are refused",
				     op, n > 1 ? path + 1 : "");
	return sb_guard_net_check_unix_path(path, op);
}

static int check_address(PyObject *sock, PyObject *address, unsigned direction, const char *op)
{
	const struct sb_net_policy_rule *rule = NULL;
	struct target t;
	PyObject *host, *port;
	unsigned kind = 0;
	size_t index = 0;
	long p;
	int family = 0, type = 0, r;

	if (socket_kind(sock, &family, &kind, &type) < 0)
		return -1;
	if (address == Py_None)
		return 0; /* sendmsg() on a connected socket: checked at connect */
	if (family == AF_UNIX)
		return check_unix(address, op);
	if (family != AF_INET && family != AF_INET6)
		return raise_refused("Guard network %s DENIED: address family %d is not covered "
				     "by net= rules",
				     op, family);
	if (!kind)
		return raise_refused("Guard network %s DENIED: socket type %d is not covered by "
				     "net= rules (tcp and udp only)",
				     op, type);
	/* CPython parsed the same object before raising the event, so a shape
	 * it refused never arrives here: anything else is refused. */
	if (!PyTuple_Check(address) || PyTuple_GET_SIZE(address) < 2) {
		PyErr_SetString(PyExc_TypeError, "socket address must be a tuple (host, port)");
		return -1;
	}
	host = PyTuple_GET_ITEM(address, 0);
	port = PyTuple_GET_ITEM(address, 1);
	/* An exact int: a __index__ could answer one value here and another to
	 * the socket call. */
	p = PyLong_Check(port) ? PyLong_AsLong(port) : -1;
	if (p < 0 || p > 65535) {
		PyErr_Clear();
		PyErr_SetString(PyExc_ValueError, "Invalid port number");
		return -1;
	}
	t.port = (uint16_t)p;
	r = host_text(host, t.host, sizeof(t.host));
	if (r <= 0) {
		if (r == 0)
			PyErr_SetString(PyExc_TypeError, "host must be str, bytes or bytearray");
		return -1;
	}
	if (resolve_target(&t, family) < 0)
		return -1;
	for (size_t i = 0; sb_guard_observed() && i < t.n_addrs; i++) {
		char ip[INET6_ADDRSTRLEN];

		sb_net_addr_format(&t.addrs[i], false, ip, sizeof(ip));
		sb_guard_note_net(ip, t.port, direction);
	}
	if (sb_net_policy_decide_all(net.policy, kind, t.addrs, t.n_addrs, t.port, direction, &rule,
				     &index))
		return 0;
	return refuse_target(&t, kind, direction, rule, index);
}

static int on_connect(PyObject *args)
{
	if (PyTuple_GET_SIZE(args) < 2)
		return 0;
	return check_address(PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1), SB_NET_OUT,
			     "connection");
}

static int on_bind(PyObject *args)
{
	if (PyTuple_GET_SIZE(args) < 2)
		return 0;
	return check_address(PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1), SB_NET_IN,
			     "bind");
}

/* sendto()/sendmsg() with an address: on a UDP socket a datagram out, on a
 * TCP socket a connect (TCP Fast Open, MSG_FASTOPEN): OUT either way. */
static int on_send(PyObject *args)
{
	if (PyTuple_GET_SIZE(args) < 2)
		return 0;
	return check_address(PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1), SB_NET_OUT,
			     "connection");
}

/* tcp and/or udp from getaddrinfo's type and proto. */
static unsigned kinds_of(int type, int proto)
{
	if (type == SOCK_STREAM || (type == 0 && proto == IPPROTO_TCP))
		return SB_NET_TCP;
	if (type == SOCK_DGRAM || (type == 0 && proto == IPPROTO_UDP))
		return SB_NET_UDP;
	return SB_NET_TCP | SB_NET_UDP;
}

/* A port given to getaddrinfo: an int or a numeric string; -1 for "some
 * port" (None, a service name). */
static int port_of(PyObject *port)
{
	char text[16];
	unsigned long long v;
	long p;

	if (!port || port == Py_None)
		return -1;
	if (PyLong_Check(port)) {
		p = PyLong_AsLong(port);
		if (p < 0 || p > 65535) {
			PyErr_Clear();
			return -1;
		}
		return (int)p;
	}
	if (host_text(port, text, sizeof(text)) <= 0) {
		PyErr_Clear();
		return -1;
	}
	if (sb_safe_atou64(text, &v) < 0 || v > 65535)
		return -1;
	return (int)v;
}

/* Whether a name may be resolved at all, before any query is sent: a pinned
 * name when some use of its pinned addresses can be allowed, another name
 * only when an ALLOW rule names a network it could resolve into. 0, or -1 with
 * an exception. Numeric hosts pass: nothing is looked up, and the connect
 * decides. */
static int check_resolution(PyObject *host, int port, unsigned kinds)
{
	const struct sb_net_pin *pin;
	struct target t = {0};
	int r;

	if (!host || host == Py_None)
		return 0;
	r = host_text(host, t.host, sizeof(t.host));
	if (r <= 0)
		return r; /* CPython refuses other types itself */
	if (!*t.host || is_numeric(t.host, AF_UNSPEC, &t))
		return 0;
	pin = sb_net_policy_pin(net.policy, t.host);
	if (pin) {
		if (sb_net_policy_can_allow(net.policy, kinds, SB_NET_IN | SB_NET_OUT, pin->addrs,
					    pin->n_addrs, port))
			return 0;
		if (!name_refusal_stands(t.host))
			return 0;
		return refuse_name(t.host, "no net= rule allows every address this name is "
					   "pinned to (refused at resolution)");
	}
	if (net.policy->allows_networks || !name_refusal_stands(t.host))
		return 0;
	return refuse_name(t.host, "no net= rule can allow this name (refused at resolution)");
}

/* After an unpinned name resolved: refused when no use of all of its
 * addresses can be allowed, so that a caller trying the addresses in turn
 * cannot reach the allowed ones of a name that has a denied one. */
static int check_answer(const char *name, const struct target *t, int port, unsigned kinds)
{
	/* The observer learns which name an address came from (learning writes
	 * a rule for the name a connection used). */
	for (size_t i = 0; sb_guard_observed() && i < t->n_addrs; i++) {
		char ip[INET6_ADDRSTRLEN];

		sb_net_addr_format(&t->addrs[i], false, ip, sizeof(ip));
		sb_guard_note_name(name, ip);
	}
	if (sb_net_policy_can_allow(net.policy, kinds, SB_NET_IN | SB_NET_OUT, t->addrs, t->n_addrs,
				    port) ||
	    !name_refusal_stands(name))
		return 0;
	return refuse_name(name, "no net= rule allows every address this name resolves to");
}

static int on_getaddrinfo(PyObject *args)
{
	int type = 0, proto = 0;

	if (PyTuple_GET_SIZE(args) < 5)
		return 0;
	type = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 3));
	proto = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 4));
	if (PyErr_Occurred())
		return -1;
	return check_resolution(PyTuple_GET_ITEM(args, 0), port_of(PyTuple_GET_ITEM(args, 1)),
				kinds_of(type, proto));
}

static int on_gethostbyname(PyObject *args)
{
	if (PyTuple_GET_SIZE(args) < 1)
		return 0;
	return check_resolution(PyTuple_GET_ITEM(args, 0), -1, SB_NET_TCP | SB_NET_UDP);
}

/* Reverse lookups tell the resolver an address: only addresses some rule
 * allows. */
static int check_reverse(PyObject *host, int port)
{
	struct target t = {0};
	int r;

	r = host_text(host, t.host, sizeof(t.host));
	if (r <= 0)
		return r;
	if (!is_numeric(t.host, AF_UNSPEC, &t))
		return check_resolution(host, port, SB_NET_TCP | SB_NET_UDP);
	if (sb_net_policy_can_allow(net.policy, SB_NET_TCP | SB_NET_UDP, SB_NET_IN | SB_NET_OUT,
				    t.addrs, t.n_addrs, port))
		return 0;
	return raise_refused("Guard network connection to '%s' DENIED by implicit default "
			     "policy: no net= rule allows this address (reverse lookup refused)",
			     t.host);
}

static int on_gethostbyaddr(PyObject *args)
{
	if (PyTuple_GET_SIZE(args) < 1)
		return 0;
	return check_reverse(PyTuple_GET_ITEM(args, 0), -1);
}

static int on_getnameinfo(PyObject *args)
{
	PyObject *sa;

	if (PyTuple_GET_SIZE(args) < 1)
		return 0;
	sa = PyTuple_GET_ITEM(args, 0);
	if (!PyTuple_Check(sa) || PyTuple_GET_SIZE(sa) < 2)
		return 0; /* CPython refuses it */
	return check_reverse(PyTuple_GET_ITEM(sa, 0), port_of(PyTuple_GET_ITEM(sa, 1)));
}

static PyObject *raise_gaierror(int code)
{
	PyObject *v = Py_BuildValue("(is)", code, gai_strerror(code));

	if (v) {
		PyErr_SetObject(net.gaierror ? net.gaierror : PyExc_OSError, v);
		Py_DECREF(v);
	}
	return NULL;
}

/* A pinned name, or NULL (also NULL for hosts that are not text). */
static const struct sb_net_pin *pinned(PyObject *host, char *buf, size_t size)
{
	int r;

	if (!host || host == Py_None)
		return NULL;
	r = host_text(host, buf, size);
	if (r <= 0) {
		PyErr_Clear();
		return NULL;
	}
	return sb_net_policy_pin(net.policy, buf);
}

/* The addresses of a list of getaddrinfo() results, for check_answer(). */
static void collect_answer(PyObject *list, struct target *t)
{
	for (Py_ssize_t i = 0; list && PyList_Check(list) && i < PyList_GET_SIZE(list); i++) {
		PyObject *item = PyList_GET_ITEM(list, i), *sa;
		char text[INET6_ADDRSTRLEN + 16];

		if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 5)
			continue;
		sa = PyTuple_GET_ITEM(item, 4);
		if (!PyTuple_Check(sa) || PyTuple_GET_SIZE(sa) < 1 ||
		    host_text(PyTuple_GET_ITEM(sa, 0), text, sizeof(text)) <= 0) {
			PyErr_Clear();
			continue;
		}
		/* Scope ids (fe80::1%eth0) are not part of the address. */
		text[strcspn(text, "%")] = '\0';
		if (t->n_addrs < SB_NET_MAX_ADDRS &&
		    sb_net_addr_parse(text, &t->addrs[t->n_addrs]) == 0)
			t->n_addrs++;
	}
}

static PyObject *guarded_getaddrinfo(PyObject *self _unused_, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = {"host", "port", "family", "type", "proto", "flags", NULL};
	PyObject *host, *port, *result;
	int family = 0, type = 0, proto = 0, flags = 0;
	const struct sb_net_pin *pin;
	char name[256];

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|iiii:getaddrinfo", kwlist, &host, &port,
					 &family, &type, &proto, &flags))
		return NULL;
	if (!sb_guard_armed())
		return PyObject_Call(net.orig_getaddrinfo, args, kwds);
	pin = pinned(host, name, sizeof(name));
	if (!pin) {
		struct target t = {0};
		bool name_given = host != Py_None && host_text(host, t.host, sizeof(t.host)) > 0 &&
				  *t.host && !is_numeric(t.host, AF_UNSPEC, &t);

		PyErr_Clear();
		/* The audit event of the real call refuses names beforehand. */
		result = PyObject_Call(net.orig_getaddrinfo, args, kwds);
		if (!result || !name_given)
			return result;
		t.n_addrs = 0;
		collect_answer(result, &t);
		if (check_answer(t.host, &t, port_of(port), kinds_of(type, proto)) < 0)
			Py_CLEAR(result);
		return result;
	}
	if (check_resolution(host, port_of(port), kinds_of(type, proto)) < 0)
		return NULL;
	/* The answer comes from the pin: each pinned address of the family
	 * asked, through the real getaddrinfo() as a numeric host, which fills
	 * in the socket types, protocols and the port as it would. */
	result = PyList_New(0);
	if (!result)
		return NULL;
	for (size_t i = 0; i < pin->n_addrs; i++) {
		const struct sb_net_addr *a = &pin->addrs[i];
		char text[INET6_ADDRSTRLEN];
		PyObject *part, *merged;

		if (family != AF_UNSPEC && family != a->family)
			continue;
		sb_net_addr_format(a, false, text, sizeof(text));
		part = PyObject_CallFunction(net.orig_getaddrinfo, "sOiiii", text, port, a->family,
					     type, proto, flags | AI_NUMERICHOST);
		if (!part) {
			Py_DECREF(result);
			return NULL;
		}
		merged = PySequence_InPlaceConcat(result, part);
		Py_DECREF(part);
		Py_DECREF(result);
		if (!merged)
			return NULL;
		result = merged;
	}
	if (PyList_GET_SIZE(result) == 0) {
		Py_DECREF(result);
		return raise_gaierror(EAI_NONAME);
	}
	return result;
}

/* The IPv4 addresses of a pin, as a list of str. */
static PyObject *pinned_ipv4(const struct sb_net_pin *pin)
{
	PyObject *list = PyList_New(0);

	for (size_t i = 0; list && i < pin->n_addrs; i++) {
		char text[INET6_ADDRSTRLEN];
		PyObject *s;

		if (pin->addrs[i].family != AF_INET)
			continue;
		sb_net_addr_format(&pin->addrs[i], false, text, sizeof(text));
		s = PyUnicode_FromString(text);
		if (!s || PyList_Append(list, s) < 0)
			Py_CLEAR(list);
		Py_XDECREF(s);
	}
	return list;
}

/* gethostbyname() and gethostbyname_ex(): a pinned name answers from the
 * pin; another name resolves for real (its audit event decides first), and
 * its answer must be allowable. */
static PyObject *gethostbyname_common(PyObject *args, bool ex)
{
	PyObject *orig = ex ? net.orig_gethostbyname_ex : net.orig_gethostbyname;
	PyObject *host, *list, *result;
	const struct sb_net_pin *pin;
	char name[256];

	if (!PyArg_ParseTuple(args, ex ? "O:gethostbyname_ex" : "O:gethostbyname", &host))
		return NULL;
	if (!sb_guard_armed())
		return PyObject_Call(orig, args, NULL);
	pin = pinned(host, name, sizeof(name));
	if (!pin) {
		struct target t = {0};

		result = PyObject_Call(orig, args, NULL);
		if (!result || host_text(host, t.host, sizeof(t.host)) <= 0 ||
		    is_numeric(t.host, AF_UNSPEC, &t)) {
			if (result)
				PyErr_Clear();
			return result;
		}
		t.n_addrs = 0;
		list = ex && PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 3
			   ? PyTuple_GET_ITEM(result, 2)
			   : NULL;
		for (Py_ssize_t i = 0;
		     i < (ex ? (list && PyList_Check(list) ? PyList_GET_SIZE(list) : 0) : 1); i++) {
			char text[INET6_ADDRSTRLEN];
			PyObject *item = ex ? PyList_GET_ITEM(list, i) : result;

			if (host_text(item, text, sizeof(text)) > 0 &&
			    t.n_addrs < SB_NET_MAX_ADDRS &&
			    sb_net_addr_parse(text, &t.addrs[t.n_addrs]) == 0)
				t.n_addrs++;
			PyErr_Clear();
		}
		if (check_answer(t.host, &t, -1, SB_NET_TCP | SB_NET_UDP) < 0)
			Py_CLEAR(result);
		return result;
	}
	if (check_resolution(host, -1, SB_NET_TCP | SB_NET_UDP) < 0)
		return NULL;
	list = pinned_ipv4(pin);
	if (!list)
		return NULL;
	if (PyList_GET_SIZE(list) == 0) {
		Py_DECREF(list);
		return raise_gaierror(EAI_NONAME);
	}
	if (!ex) {
		result = PyList_GET_ITEM(list, 0);
		Py_INCREF(result);
		Py_DECREF(list);
		return result;
	}
	return Py_BuildValue("(O[]N)", host, list);
}

static PyObject *guarded_gethostbyname(PyObject *self _unused_, PyObject *args)
{
	return gethostbyname_common(args, false);
}

static PyObject *guarded_gethostbyname_ex(PyObject *self _unused_, PyObject *args)
{
	return gethostbyname_common(args, true);
}

/* listen() raises no audit event. On a socket never bound the kernel binds it
 * to the wildcard address and an ephemeral port: checked as bind(("", 0)). */
static PyObject *guarded_listen(PyObject *self, PyObject *args)
{
	PyObject *call_args, *result, *fd_obj;
	unsigned kind = 0;
	int family = 0, type = 0;

	if (sb_guard_armed()) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		long fd;

		if (socket_kind(self, &family, &kind, &type) < 0)
			return NULL;
		fd_obj = PyObject_CallOneArg(net.fileno, self);
		if (!fd_obj)
			return NULL;
		fd = PyLong_AsLong(fd_obj);
		Py_DECREF(fd_obj);
		if (fd == -1 && PyErr_Occurred())
			return NULL;
		if ((family == AF_INET || family == AF_INET6) && fd >= 0 &&
		    getsockname((int)fd, (struct sockaddr *)&ss, &len) == 0) {
			bool unbound = ss.ss_family == AF_INET
					   ? ((struct sockaddr_in *)&ss)->sin_port == 0
					   : ((struct sockaddr_in6 *)&ss)->sin6_port == 0;

			if (unbound) {
				struct target t = {.port = 0, .n_addrs = 1};
				const struct sb_net_policy_rule *rule = NULL;

				t.addrs[0] = (struct sb_net_addr){.family = family};
				if ((!kind ||
				     !sb_net_policy_decide_all(net.policy, kind, t.addrs, 1, 0,
							       SB_NET_IN, &rule, NULL)) &&
				    refuse_target(&t, kind ? kind : SB_NET_TCP, SB_NET_IN, rule,
						  0) < 0)
					return NULL;
			}
		}
	}
	call_args = PyTuple_New(PyTuple_GET_SIZE(args) + 1);
	if (!call_args)
		return NULL;
	Py_INCREF(self);
	PyTuple_SET_ITEM(call_args, 0, self);
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
		Py_INCREF(PyTuple_GET_ITEM(args, i));
		PyTuple_SET_ITEM(call_args, i + 1, PyTuple_GET_ITEM(args, i));
	}
	result = PyObject_Call(net.orig_listen, call_args, NULL);
	Py_DECREF(call_args);
	return result;
}

static PyMethodDef getaddrinfo_def = {
    "getaddrinfo", (PyCFunction)(void (*)(void))guarded_getaddrinfo, METH_VARARGS | METH_KEYWORDS,
    "getaddrinfo(host, port [, family, type, proto, flags])\n\nResolve host and port "
    "(names of net= rules answer from the addresses pinned at start)."};
static PyMethodDef gethostbyname_def = {"gethostbyname", guarded_gethostbyname, METH_VARARGS,
					"gethostbyname(host) -> address\n\nReturn the IPv4 "
					"address of a host (checked by net= rules)."};
static PyMethodDef gethostbyname_ex_def = {
    "gethostbyname_ex", guarded_gethostbyname_ex, METH_VARARGS,
    "gethostbyname_ex(host) -> (name, aliaslist, addresslist)\n\nReturn the IPv4 addresses "
    "of a host (checked by net= rules)."};
static PyMethodDef listen_def = {"listen", guarded_listen, METH_VARARGS,
				 "listen([backlog])\n\nEnable a server to accept connections "
				 "(checked by net= rules when the socket was never bound)."};

static const char *const wrapped_names[] = {"getaddrinfo", "gethostbyname", "gethostbyname_ex"};

/* Puts the wrappers into a module whose functions are still the originals
 * (the _socket module; socket, when loaded: it copied them at import). */
static int patch_module(PyObject *module)
{
	for (size_t i = 0; i < ELEMENTSOF(wrapped_names); i++) {
		PyObject *cur = PyObject_GetAttrString(module, wrapped_names[i]);
		int r = 0;

		if (!cur) {
			PyErr_Clear();
			continue;
		}
		/* socket.getaddrinfo is a Python function over _socket's: it
		 * keeps converting the families to enums and reaches the
		 * wrapper through _socket. Only C originals are replaced. */
		if (PyCFunction_Check(cur) && cur != net.wrappers[i])
			r = PyObject_SetAttrString(module, wrapped_names[i], net.wrappers[i]);
		Py_DECREF(cur);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* A module re-created after `del sys.modules[...]` comes back with the
 * original functions (single-phase init copies its first dict): patch again. */
static int net_after_import(void)
{
	static const char *const names[] = {"_socket", "socket"};
	PyObject *modules = PyImport_GetModuleDict(); /* borrowed */

	if (ensure_socket_guard() < 0)
		return -1;
	if (!net.wrappers[0])
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		PyObject *m = PyDict_GetItemString(modules, names[i]); /* borrowed */

		if (!m || m == net.seen_modules[i])
			continue;
		if (patch_module(m) < 0)
			return -1;
		net.seen_modules[i] = m;
	}
	return 0;
}

static int member_offset(PyTypeObject *type, const char *name, Py_ssize_t *ret)
{
	PyObject *d = PyDict_GetItemString(type->tp_dict, name); /* borrowed */
	PyMemberDef *m;

	if (!d || !Py_IS_TYPE(d, &PyMemberDescr_Type))
		return -1;
	m = ((PyMemberDescrObject *)d)->d_member;
	if (m->type != T_INT)
		return -1;
	*ret = m->offset;
	return 0;
}

/* Reads what the checks need from _socket and installs the wrappers; done
 * when _socket is first loaded (it is not, for most programs). */
static int install_socket_guard(PyObject *mod, const char **ret_what)
{
	PyObject *type = NULL, *descr = NULL;
	const char *what = "cannot use _socket";
	PyMethodDef *defs[] = {&getaddrinfo_def, &gethostbyname_def, &gethostbyname_ex_def};

	what = "_socket.socket is not the expected type";
	type = PyObject_GetAttrString(mod, "socket");
	if (!type || !PyType_Check(type))
		goto fail;
	net.sock_type = (PyTypeObject *)type;
	/* _socket adds its static type without readying it; Python readies it
	 * on the first attribute lookup, C must do it before reading tp_dict. */
	if (PyType_Ready(net.sock_type) < 0)
		goto fail;
	if (member_offset(net.sock_type, "family", &net.off_family) < 0 ||
	    member_offset(net.sock_type, "type", &net.off_type) < 0)
		goto fail;
	net.fileno = PyDict_GetItemString(net.sock_type->tp_dict, "fileno");
	net.orig_listen = PyDict_GetItemString(net.sock_type->tp_dict, "listen");
	if (!net.fileno || !net.orig_listen)
		goto fail;
	Py_INCREF(net.fileno);
	Py_INCREF(net.orig_listen);

	what = "cannot find the resolver functions of _socket";
	net.orig_getaddrinfo = PyObject_GetAttrString(mod, "getaddrinfo");
	net.orig_gethostbyname = PyObject_GetAttrString(mod, "gethostbyname");
	net.orig_gethostbyname_ex = PyObject_GetAttrString(mod, "gethostbyname_ex");
	net.gaierror = PyObject_GetAttrString(mod, "gaierror");
	if (!net.orig_getaddrinfo || !net.orig_gethostbyname || !net.orig_gethostbyname_ex ||
	    !net.gaierror)
		goto fail;

	what = "cannot install the network guard";
	/* m_self NULL: nothing reachable from a wrapper leads to the original. */
	for (size_t i = 0; i < ELEMENTSOF(defs); i++) {
		net.wrappers[i] = PyCFunction_NewEx(defs[i], NULL, NULL);
		if (!net.wrappers[i])
			goto fail;
	}
	/* The type is static (immutable from Python): its dict is changed from
	 * C, and PyType_Modified() makes socket.socket and every subclass see
	 * the new method; isinstance() is untouched. */
	descr = PyDescr_NewMethod(net.sock_type, &listen_def);
	if (!descr || PyDict_SetItemString(net.sock_type->tp_dict, "listen", descr) < 0)
		goto fail;
	PyType_Modified(net.sock_type);
	Py_CLEAR(descr);
	return 0;
fail:
	Py_XDECREF(descr);
	*ret_what = what;
	return -1;
}

/* 0 when _socket is not loaded yet or the guard is installed; -1 with a
 * Python exception otherwise. */
static int ensure_socket_guard(void)
{
	PyObject *mod;
	const char *what = NULL;
	int r;

	if (net.wrappers[0])
		return 0;
	mod = sb_guard_loaded_module("_socket");
	if (!mod)
		return PyErr_Occurred() ? -1 : 0;
	r = install_socket_guard(mod, &what);
	Py_DECREF(mod);
	if (r < 0 && !PyErr_Occurred())
		PyErr_Format(PyExc_RuntimeError, "python-sb network guard: %s", what);
	return r;
}

static int net_activate(char **reterr)
{
	/* _socket is loaded on demand: importing it here would cost every
	 * program a few per cent of its start-up. The import wrapper and the
	 * _imp wrappers call net_after_import() when it appears. */
	if (ensure_socket_guard() < 0 || net_after_import() < 0) {
		PyErr_Clear();
		*reterr = strdup("cannot install the network guard");
		return -EIO;
	}
	return 0;
}

static void print_warnings(char **warnings)
{
	for (size_t i = 0; warnings && warnings[i]; i++)
		fprintf(stderr, "python-sb: warning: %s\n", warnings[i]);
}

int sb_guard_net_resolve(const struct sb_profile *profile, char ***ret_warnings, char **reterr)
{
	if (net.policy)
		return 0;
	net.seccomp = profile->os_sandbox != SB_OS_NONE;
	for (size_t i = 0; i < profile->n_nets; i++) {
		if (profile->nets[i].action != SB_NET_ALLOW)
			continue;
		net.inet_allowed = true;
		if (profile->nets[i].protocols & SB_NET_UDP)
			net.udp_allowed = true;
	}
	return sb_net_policy_build(profile->nets, profile->n_nets, NULL, &net.policy, ret_warnings,
				   reterr);
}

const struct sb_net_policy *sb_guard_net_policy(void)
{
	return net.policy;
}

static int net_prepare(const struct sb_profile *profile,
		       const struct sb_interp_paths *interp _unused_, char **reterr)
{
	_cleanup_strv_free_ char **warnings = NULL;
	int r;

	/* Normally done by the launcher before the kernel boundary (which may
	 * hide /etc/hosts and the resolver); this is the fallback. */
	if (net.policy)
		return 0;
	r = sb_guard_net_resolve(profile, &warnings, reterr);
	print_warnings(warnings);
	return r;
}

static void net_release(void)
{
	sb_net_policy_free(net.policy);
	/* The Python objects belonged to the finalized interpreter: dropped,
	 * not DECREF'ed. */
	memset(&net, 0, sizeof(net));
}

/* Sockets that no net= rule speaks of: every family but AF_UNIX, AF_INET
 * and AF_INET6 (netlink reconfigures the host's network as root and lists
 * its sockets as anyone, AF_PACKET reads and forges frames, AF_VSOCK
 * reaches the hypervisor), and on AF_INET/AF_INET6 anything but TCP and UDP
 * (SOCK_RAW, SCTP, MPTCP). The seccomp filter refuses them whatever the
 * profile (kernel/seccomp-filter.c); with os-sandbox=none the guard is what
 * holds, and it refuses them the same way, learning included: no rule
 * lifts the refusal. A socket built on an existing descriptor (family -1,
 * fileno=) makes no socket() call. */
static int refuse_uncovered_socket(int family, int type, int proto)
{
	/* -1: _socket's defaults without a descriptor (SOCK_STREAM, 0), or
	 * what it reads from the descriptor it is given. */
	int kind = type == -1 ? SOCK_STREAM : type & 0xf; /* SOCK_TYPE_MASK */

	if (proto == -1)
		proto = 0;
	if (family == -1 || family == AF_UNIX)
		return 0;
	if (family == AF_INET || family == AF_INET6) {
		if ((kind == SOCK_STREAM && (proto == 0 || proto == IPPROTO_TCP)) ||
		    (kind == SOCK_DGRAM && (proto == 0 || proto == IPPROTO_UDP)))
			return 0;
		return raise_refused("Guard network socket(%s, type %d, protocol %d) DENIED "
				     "whatever the rules: net= rules speak of TCP and UDP only",
				     family == AF_INET ? "AF_INET" : "AF_INET6", type, proto);
	}
	return raise_refused("Guard network socket(family %d) DENIED whatever the rules: net= "
			     "rules speak of TCP and UDP over IPv4 and IPv6, and of Unix sockets",
			     family);
}

/* socket.socket(AF_INET...): what seccomp would refuse with a bare EPERM
 * is refused here with the rule (spec #28). A socket built on an existing
 * descriptor (fileno=) makes no socket() call: socket.py leaves its family
 * at -1 unless the caller names one. Learning lets it go: its filter is
 * relaxed, and the connect is what it records. */
static int on_socket_new(PyObject *args)
{
	int family = -1, type = -1, proto = 0;
	bool udp;

	if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 4)
		return 0;
	family = PyLong_Check(PyTuple_GET_ITEM(args, 1))
		     ? (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 1))
		     : -1;
	type = PyLong_Check(PyTuple_GET_ITEM(args, 2))
		   ? (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 2))
		   : -1;
	proto = PyLong_Check(PyTuple_GET_ITEM(args, 3))
		    ? (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 3))
		    : 0;
	if (PyErr_Occurred()) {
		PyErr_Clear();
		return raise_refused("Guard network socket() DENIED: its arguments cannot be read");
	}
	if (refuse_uncovered_socket(family, type, proto) < 0)
		return -1;
	if (!net.seccomp || sb_guard_observed())
		return 0;
	if (family != AF_INET && family != AF_INET6)
		return 0;
	udp = (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_DGRAM;
	if (net.inet_allowed && (!udp || net.udp_allowed))
		return 0;
	return raise_refused("Guard network socket(%s, %s) DENIED by implicit default policy: "
			     "no net= rule allows %s. Add 'net=ALLOW|%s|<host>|<port>|OUT' to "
			     "'%s'",
			     family == AF_INET ? "AF_INET" : "AF_INET6",
			     udp ? "SOCK_DGRAM" : "SOCK_STREAM", udp ? "udp" : "any address",
			     udp ? "udp" : "tcp", sb_guard_profile_path());
}

static const struct sb_audit_handler net_handlers[] = {
    {"socket.__new__", on_socket_new},
    {"socket.bind", on_bind},
    {"socket.connect", on_connect},
    {"socket.getaddrinfo", on_getaddrinfo},
    {"socket.gethostbyaddr", on_gethostbyaddr},
    {"socket.gethostbyname", on_gethostbyname},
    {"socket.getnameinfo", on_getnameinfo},
    {"socket.sendmsg", on_send},
    {"socket.sendto", on_send},
};

const struct sb_guard_part sb_guard_net_part = {
    .name = "net",
    .prepare = net_prepare,
    .activate = net_activate,
    .release = net_release,
    .handlers = net_handlers,
    .n_handlers = ELEMENTSOF(net_handlers),
    .after_import = net_after_import,
};
