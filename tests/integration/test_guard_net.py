# SPDX-License-Identifier: MIT
"""net= rules enforced by the C guard (spec §3.5, §10 items 28-33).

Every run uses os-sandbox=subprocess: the guard alone decides (seccomp only
keeps socket() itself from families and types no rule could allow). Only
loopback is ever a real target. Connections to other addresses (10.0.0.5,
93.184.216.34) are on non-blocking sockets and must be refused by the guard,
whose exception (RuleSocketConnectionRefusedError) is raised by the audit hook
before the system call. The allowed case of item 29 and the three-address host
of item 30 need real remote addresses or a private hosts file: they are unit
tests (tests/unit/test-net-policy.c).
"""

import socket
import threading

import pytest

BASE = "os-sandbox=subprocess\npython-import=*\n"

PRELUDE = '''\
import errno, os, socket, sys
import pysandboxes

def attempt(name, fn, *a, **k):
    try:
        r = fn(*a, **k)
    except pysandboxes.RuleSocketConnectionRefusedError as e:
        assert isinstance(e, ConnectionRefusedError) and e.errno == errno.ECONNREFUSED
        assert isinstance(e, pysandboxes.SandBoxError)
        print(f"{name}: REFUSED {e.strerror}")
    except OSError as e:
        print(f"{name}: {type(e).__name__} {errno.errorcode.get(e.errno, e.errno)}")
    except Exception as e:
        print(f"{name}: {type(e).__name__} {e}")
    else:
        print(f"{name}: OK" + ("" if r is None else f" {r!r}"))

def nonblocking(family=socket.AF_INET, type=socket.SOCK_STREAM):
    s = socket.socket(family, type)
    s.setblocking(False)
    return s
'''


def outcomes(r):
    out = {}
    for line in r.stdout.splitlines():
        name, sep, rest = line.partition(": ")
        if sep:
            out[name] = rest
    return out


def run(sb, rules, body, extra=""):
    profile = BASE + extra + "".join(f"net={rule}\n" for rule in rules)
    r = sb.run_code(profile, PRELUDE + body)
    return r, outcomes(r)


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_free_ports():
    a = free_port()
    b = free_port()
    while b == a:
        b = free_port()
    return a, b


def localhost_addresses():
    """What the guard pins localhost to: the hosts file, else 127.0.0.1."""
    found = []
    try:
        with open("/etc/hosts") as f:
            for line in f:
                fields = line.split("#", 1)[0].split()
                if len(fields) > 1 and "localhost" in [n.lower() for n in fields[1:]]:
                    if fields[0] not in found:
                        found.append(fields[0])
    except OSError:
        pass
    return found or ["127.0.0.1"]


def has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


needs_ipv6 = pytest.mark.skipif(not has_ipv6_loopback(), reason="no IPv6 loopback")


class Listener:
    """A TCP echo server on 127.0.0.1 owned by the test."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(10)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            with c:
                data = c.recv(100)
                c.sendall(data.upper())

    def close(self):
        self.sock.close()


@pytest.fixture
def listener():
    lst = Listener()
    yield lst
    lst.close()


# ---- item 28: no rule ------------------------------------------------------


def test_item_28_no_rule_name_refused_at_resolution(sb):
    r, o = run(sb, [], 'attempt("conn", socket.create_connection, ("example.com", 80), 2)\n')
    assert r.returncode == 0, r
    assert o["conn"].startswith("REFUSED Guard network connection to 'example.com' DENIED "
                                "by implicit default policy"), r


def test_item_28_no_rule_no_inet_socket_at_all(sb):
    """Without any ALLOW rule, seccomp refuses the socket itself; the guard
    refuses it first, naming the rule (issue 17, item 3)."""
    r, o = run(sb, [], 'attempt("socket", socket.socket)\n'
                       'attempt("udp", socket.socket, socket.AF_INET, socket.SOCK_DGRAM)\n'
                       'attempt("conn", socket.create_connection, ("127.0.0.1", 9), 2)\n')
    prof = sb.path(".py-sandboxes")
    tcp = ("REFUSED Guard network socket(AF_INET, SOCK_STREAM) DENIED by implicit default "
           "policy: no net= rule allows any address. Add 'net=ALLOW|tcp|<host>|<port>|OUT' "
           f"to '{prof}'")
    assert o == {"socket": tcp, "conn": tcp,
                 "udp": "REFUSED Guard network socket(AF_INET, SOCK_DGRAM) DENIED by implicit "
                        "default policy: no net= rule allows udp. Add "
                        f"'net=ALLOW|udp|<host>|<port>|OUT' to '{prof}'"}, r
    assert "python-sb: 3 operations were refused" in r.stderr, r


def test_item_28_udp_socket_without_a_udp_rule(sb):
    r, o = run(sb, ["ALLOW|tcp|127.0.0.1|1|OUT"],
               'attempt("udp", socket.socket, socket.AF_INET, socket.SOCK_DGRAM)\n'
               'attempt("tcp", socket.socket)\n')
    assert o["udp"].startswith("REFUSED Guard network socket(AF_INET, SOCK_DGRAM) DENIED"), r
    assert o["tcp"].startswith("OK <socket.socket"), r


def test_item_28_numeric_refused_by_implicit_default(sb):
    r, o = run(sb, ["ALLOW|tcp|127.0.0.1|1|OUT"],
               'attempt("conn", nonblocking().connect, ("93.184.216.34", 80))\n')
    assert o["conn"] == (
        "REFUSED Guard network connection to '[93.184.216.34]:80' DENIED by implicit default "
        f"policy. Add 'net=ALLOW|tcp|93.184.216.34|80|OUT' to '{sb.path('.py-sandboxes')}'"), r


# ---- item 29 ---------------------------------------------------------------

ITEM_29 = ["ALLOW|*|0.0.0.0/0|443|OUT", "DENY|*|10.0.0.0/8|*|OUT"]


def test_item_29_deny_network_wins(sb):
    r, o = run(sb, ITEM_29, 'attempt("conn", nonblocking().connect, ("10.0.0.5", 443))\n'
                            'attempt("ex", nonblocking().connect_ex, ("10.0.0.5", 443))\n')
    want = ("REFUSED Guard network connection to '[10.0.0.5]:443' DENIED by rule "
            f"'DENY|*|10.0.0.0/8|*|OUT' from {sb.path('.py-sandboxes')}:4")
    assert o == {"conn": want, "ex": want}, r


def test_item_29_ipv4_mapped_judged_by_ipv4_rules(sb):
    if not has_ipv6_loopback():
        pytest.skip("no IPv6")
    r, o = run(sb, ITEM_29, 'attempt("conn", nonblocking(socket.AF_INET6).connect, '
                            '("::ffff:10.0.0.5", 443))\n')
    assert o["conn"].startswith("REFUSED Guard network connection to '[::ffff:10.0.0.5]:443' "
                                "DENIED by rule 'DENY|*|10.0.0.0/8|*|OUT'"), r


def test_item_29_udp_send_to_denied_network(sb):
    r, o = run(sb, ITEM_29, 'attempt("send", nonblocking(type=socket.SOCK_DGRAM).sendto, b"x", '
                            '("10.1.2.3", 443))\n')
    assert o["send"].startswith("REFUSED Guard network connection to '[10.1.2.3]:443' DENIED "
                                "by rule 'DENY|*|10.0.0.0/8|*|OUT'"), r


# ---- item 30, second half: UDP rule vs TCP ----------------------------------


def test_item_30_udp_rule_does_not_allow_tcp(sb):
    port = free_port()
    r, o = run(sb, [f"ALLOW|udp|127.0.0.1/32|{port}|OUT"],
               f'attempt("tcp", socket.socket().connect, ("127.0.0.1", {port}))\n')
    assert o["tcp"].startswith(f"REFUSED Guard network connection to '[127.0.0.1]:{port}' "
                               "DENIED by implicit default policy"), r


def test_item_30_udp_rule_allows_udp(sb):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        server.settimeout(10)
        port = server.getsockname()[1]
        r, o = run(sb, [f"ALLOW|udp|127.0.0.1/32|{port}|OUT"], f'''
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
attempt("udp", u.sendto, b"hello", ("127.0.0.1", {port}))
''')
        assert o == {"udp": "OK 5"}, r
        assert server.recvfrom(100)[0] == b"hello"


def test_tcp_rule_does_not_allow_udp(sb):
    port, other = two_free_ports()
    r, o = run(sb, [f"ALLOW|tcp|127.0.0.1|{port}|OUT", f"ALLOW|udp|127.0.0.1|{other}|OUT"], f'''
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
attempt("udp", u.sendto, b"x", ("127.0.0.1", {port}))
attempt("udp-connect", u.connect, ("127.0.0.1", {port}))
''')
    assert o["udp"].startswith(f"REFUSED Guard network connection to '[127.0.0.1]:{port}'"), r
    assert "Add 'net=ALLOW|udp|127.0.0.1" in o["udp"], r
    assert o["udp-connect"].startswith("REFUSED "), r


def test_udp_sendmsg_checked(sb):
    port, other = two_free_ports()
    r, o = run(sb, [f"ALLOW|udp|127.0.0.1|{port}|OUT"], f'''
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
attempt("ok", u.sendmsg, [b"x"], [], 0, ("127.0.0.1", {port}))
attempt("no", u.sendmsg, [b"x"], [], 0, ("127.0.0.1", {other}))
u.connect(("127.0.0.1", {port}))
attempt("connected", u.sendmsg, [b"x"])
''')
    assert o["ok"] == "OK 1", r
    assert o["no"].startswith("REFUSED "), r
    assert o["connected"] == "OK 1", r


def test_udp_broadcast_is_checked_as_255(sb):
    port = free_port()
    r, o = run(sb, [f"ALLOW|udp|127.0.0.1|{port}|OUT"], f'''
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
attempt("bc", u.sendto, b"x", ("<broadcast>", {port}))
''')
    assert o["bc"].startswith(f"REFUSED Guard network connection to '[255.255.255.255]:{port}'"), r


def test_tcp_fast_open_is_a_connect(sb):
    port, other = two_free_ports()
    r, o = run(sb, [f"ALLOW|tcp|127.0.0.1|{port}|OUT"], f'''
s = nonblocking()
attempt("tfo", s.sendto, b"GET /", getattr(socket, "MSG_FASTOPEN", 0x20000000),
        ("127.0.0.1", {other}))
''')
    assert o["tfo"].startswith(f"REFUSED Guard network connection to '[127.0.0.1]:{other}'"), r


# ---- item 32: bind ---------------------------------------------------------


def test_item_32_bind_other_port_refused_allowed_port_works(sb):
    port, other = two_free_ports()
    r, o = run(sb, [f"ALLOW|TCP|localhost|{port}|IN"], f'''
attempt("other", socket.socket().bind, ("127.0.0.1", {other}))
s = socket.socket()
attempt("allowed", s.bind, ("127.0.0.1", {port}))
attempt("listen", s.listen)
print("name:", s.getsockname())
''')
    assert o["other"] == (
        f"REFUSED Guard network connection to '[127.0.0.1]:{other}' DENIED by implicit default "
        f"policy. Add 'net=ALLOW|tcp|127.0.0.1|{other}|IN' to '{sb.path('.py-sandboxes')}'"), r
    assert o["allowed"] == "OK" and o["listen"] == "OK", r
    assert o["name"] == f"('127.0.0.1', {port})", r


def test_item_32_literal_9998_refused(sb):
    port = free_port()
    r, o = run(sb, [f"ALLOW|TCP|localhost|{port}|IN"],
               'attempt("b", socket.socket().bind, ("127.0.0.1", 9998))\n')
    assert o["b"].startswith("REFUSED Guard network connection to '[127.0.0.1]:9998'"), r


def test_bind_by_pinned_name(sb):
    port, other = two_free_ports()
    r, o = run(sb, [f"ALLOW|tcp|localhost|{port}|IN"], f'''
attempt("ok", socket.socket().bind, ("localhost", {port}))
attempt("no", socket.socket().bind, ("localhost", {other}))
''')
    assert o["ok"] == "OK", r
    assert o["no"].startswith(f"REFUSED Guard network connection to 'localhost' (127.0.0.1:{other})"
                              " DENIED by implicit default policy"), r


def test_bind_empty_host_is_the_wildcard(sb):
    port = free_port()
    r, o = run(sb, [f"ALLOW|tcp|localhost|{port}|IN"],
               f'attempt("b", socket.socket().bind, ("", {port}))\n')
    assert o["b"].startswith(f"REFUSED Guard network connection to '[0.0.0.0]:{port}'"), r
    r, o = run(sb, [f"ALLOW|tcp|0.0.0.0|{port}|IN"],
               f'attempt("b", socket.socket().bind, ("", {port}))\n')
    assert o["b"] == "OK", r


def test_in_rule_does_not_allow_connect(sb, listener):
    r, o = run(sb, [f"ALLOW|tcp|127.0.0.1|{listener.port}|IN"],
               f'attempt("c", socket.socket().connect, ("127.0.0.1", {listener.port}))\n')
    assert o["c"].startswith("REFUSED "), r
    assert listener.accepted == 0


@needs_ipv6
def test_ipv6_loopback_bind(sb):
    port, other = two_free_ports()
    r, o = run(sb, [f"ALLOW|tcp|::1|{port}|IN"], f'''
attempt("ok", socket.socket(socket.AF_INET6).bind, ("::1", {port}))
attempt("no", socket.socket(socket.AF_INET6).bind, ("::1", {other}))
attempt("v4", socket.socket().bind, ("127.0.0.1", {port}))
''')
    assert o["ok"] == "OK", r
    assert o["no"].startswith(f"REFUSED Guard network connection to '[::1]:{other}'"), r
    assert o["v4"].startswith("REFUSED "), r


# ---- listen() --------------------------------------------------------------


def test_listen_unbound_needs_wildcard_in_rule(sb):
    port = free_port()
    r, o = run(sb, [f"ALLOW|tcp|127.0.0.1|{port}|IN"],
               'attempt("l", socket.socket().listen)\n')
    assert o["l"].startswith("REFUSED Guard network connection to '[0.0.0.0]:0' DENIED by "
                             "implicit default policy. Add 'net=ALLOW|tcp|0.0.0.0|0|IN'"), r


def test_listen_unbound_allowed_by_wildcard_rule(sb):
    r, o = run(sb, ["ALLOW|tcp|0.0.0.0|0|IN"], '''
s = socket.socket()
attempt("l", s.listen)
print("port:", s.getsockname()[1] > 0)
''')
    assert o["l"] == "OK" and o["port"] == "True", r


def test_listen_guard_keeps_types_and_is_immutable(sb):
    r, o = run(sb, ["ALLOW|tcp|127.0.0.1|1|IN"], '''
import _socket
class Sub(socket.socket):
    pass
s = Sub()
print("isinstance:", isinstance(s, socket.socket), isinstance(s, _socket.socket))
print("same:", socket.socket.listen is _socket.socket.listen)
attempt("sub", s.listen)
def set_listen():
    _socket.socket.listen = lambda self, *a: None
attempt("set", set_listen)
attempt("again", socket.socket().listen)
''')
    assert o["isinstance"] == "True True" and o["same"] == "True", r
    assert o["sub"].startswith("REFUSED "), r
    assert o["set"].startswith("TypeError"), r
    assert o["again"].startswith("REFUSED "), r


# ---- end to end ------------------------------------------------------------


def test_connect_to_loopback_listener_by_name(sb, listener):
    r, o = run(sb, [f"ALLOW|tcp|localhost|{listener.port}|OUT"], f'''
c = socket.create_connection(("localhost", {listener.port}), timeout=10)
c.sendall(b"ping")
print("reply:", c.recv(100))
''')
    assert r.returncode == 0 and o["reply"] == "b'PING'", r
    assert listener.accepted == 1


def test_connect_other_port_refused(sb, listener):
    r, o = run(sb, [f"ALLOW|tcp|localhost|{listener.port}|OUT"],
               f'attempt("c", socket.socket().connect, ("localhost", {listener.port + 1}))\n')
    assert o["c"].startswith(f"REFUSED Guard network connection to 'localhost' "
                             f"(127.0.0.1:{listener.port + 1}) DENIED by implicit default policy"), r


def test_loopback_server_and_client_in_the_program(sb):
    port = free_port()
    r, o = run(sb, [f"ALLOW|tcp|127.0.0.1|{port}|*"], f'''
srv = socket.socket()
srv.bind(("127.0.0.1", {port}))
srv.listen(1)
cli = socket.create_connection(("127.0.0.1", {port}), timeout=10)
conn, peer = srv.accept()
cli.sendall(b"hi")
print("got:", conn.recv(10))
''')
    assert r.returncode == 0 and o["got"] == "b'hi'", r


def test_create_server_checked(sb):
    port, other = two_free_ports()
    r, o = run(sb, [f"ALLOW|tcp|127.0.0.1|{port}|IN"], f'''
attempt("ok", lambda: socket.create_server(("127.0.0.1", {port})).close())
try:
    socket.create_server(("127.0.0.1", {other}))
except ConnectionRefusedError as e:  # create_server re-raises a plain OSError
    print("no:", type(e).__name__, e.strerror)
''')
    assert o["ok"] == "OK", r
    assert o["no"].startswith(f"ConnectionRefusedError Guard network connection to "
                              f"'[127.0.0.1]:{other}' DENIED"), r


# ---- name resolution -------------------------------------------------------


def test_getaddrinfo_unlisted_name_refused(sb):
    port = free_port()
    r, o = run(sb, [f"ALLOW|tcp|localhost|{port}|OUT"], '''
attempt("gai", socket.getaddrinfo, "example.com", 80)
attempt("c", socket.gethostbyname, "example.com")
attempt("cex", socket.gethostbyname_ex, "example.com")
''')
    for k in ("gai", "c", "cex"):
        assert o[k].startswith("REFUSED Guard network connection to 'example.com' DENIED by "
                               "implicit default policy"), r


def test_getaddrinfo_pinned_name_answers_from_pin(sb):
    port = free_port()
    r, o = run(sb, [f"ALLOW|tcp|localhost|{port}|OUT"], f'''
res = socket.getaddrinfo("localhost", {port}, type=socket.SOCK_STREAM)
print("addrs:", sorted({{a[4][0] for a in res}}))
print("ports:", sorted({{a[4][1] for a in res}}))
print("enum:", all(isinstance(a[0], socket.AddressFamily) for a in res))
res = socket.getaddrinfo("LocalHost.", "{port}")
print("types:", sorted({{a[1] for a in res}}) == sorted({{socket.SOCK_STREAM, socket.SOCK_DGRAM,
                                                         socket.SOCK_RAW}}))
print("v4:", socket.gethostbyname("localhost"))
print("ex:", socket.gethostbyname_ex("localhost"))
''')
    pinned = localhost_addresses()
    assert o["addrs"] == repr(sorted(pinned)), r
    assert o["ports"] == f"[{port}]" and o["enum"] == "True" and o["types"] == "True", r
    v4 = [a for a in pinned if ":" not in a]
    assert o["v4"] == v4[0], r
    assert o["ex"] == repr(("localhost", [], v4)), r


def test_getaddrinfo_pinned_family_filter(sb):
    port = free_port()
    r, o = run(sb, [f"ALLOW|tcp|localhost|{port}|OUT"], f'''
attempt("v4", lambda: sorted({{a[4][0] for a in socket.getaddrinfo("localhost", {port},
                                                                   socket.AF_INET)}}))
attempt("v6", lambda: sorted({{a[4][0] for a in socket.getaddrinfo("localhost", {port},
                                                                   socket.AF_INET6)}}))
''')
    pinned = localhost_addresses()
    v4 = sorted(a for a in pinned if ":" not in a)
    v6 = sorted(a for a in pinned if ":" in a)
    assert o["v4"] == f"OK {v4!r}", r
    if v6:
        assert o["v6"] == f"OK {v6!r}", r
    else:
        assert o["v6"].startswith("gaierror"), r


def test_getaddrinfo_pinned_name_port_not_allowed_refused(sb):
    port, other = two_free_ports()
    r, o = run(sb, [f"ALLOW|tcp|localhost|{port}|OUT"],
               f'attempt("gai", socket.getaddrinfo, "localhost", {other}, type=socket.SOCK_STREAM)\n'
               f'attempt("udp", socket.getaddrinfo, "localhost", {port}, type=socket.SOCK_DGRAM)\n')
    assert o["gai"].startswith("REFUSED Guard network connection to 'localhost' DENIED"), r
    assert o["udp"].startswith("REFUSED "), r


def test_unpinned_name_resolves_into_allowed_network(sb, listener):
    """With a network rule, an unlisted name resolves for real (here through
    the hosts file) and every address it has must be allowed."""
    rules = [f"ALLOW|tcp|127.0.0.0/8|{listener.port}|OUT", f"ALLOW|tcp|::1|{listener.port}|OUT"]
    r, o = run(sb, rules, f'''
c = socket.create_connection(("localhost", {listener.port}), timeout=10)
c.sendall(b"abc")
print("reply:", c.recv(10))
''')
    assert o.get("reply") == "b'ABC'", r


def test_unpinned_name_with_an_address_outside_refused(sb):
    port = free_port()
    # 127.0.0.2/32 cannot hold every address of localhost (127.0.0.1).
    r, o = run(sb, [f"ALLOW|tcp|127.0.0.2/32|{port}|OUT"],
               f'attempt("gai", socket.getaddrinfo, "localhost", {port})\n'
               f'attempt("ghn", socket.gethostbyname, "localhost")\n')
    assert o["gai"].startswith("REFUSED Guard network connection to 'localhost' DENIED"), r
    assert o["ghn"].startswith("REFUSED "), r


def test_numeric_getaddrinfo_passes_and_connect_decides(sb):
    r, o = run(sb, ITEM_29, '''
attempt("gai", lambda: socket.getaddrinfo("10.0.0.5", 443)[0][4])
attempt("conn", nonblocking().connect, ("10.0.0.5", 443))
''')
    assert o["gai"] == "OK ('10.0.0.5', 443)", r
    assert o["conn"].startswith("REFUSED "), r


def test_resolver_wrappers_are_c_functions(sb):
    r, o = run(sb, ["ALLOW|tcp|localhost|1|OUT"], '''
import _socket
print("same:", socket.gethostbyname is _socket.gethostbyname,
      socket.gethostbyname_ex is _socket.gethostbyname_ex)
print("kind:", type(_socket.getaddrinfo).__name__, _socket.getaddrinfo.__self__)
''')
    assert o["same"] == "True True", r
    assert o["kind"] == "builtin_function_or_method None", r


def test_reimported_socket_module_still_guarded(sb):
    r, o = run(sb, ["ALLOW|tcp|localhost|1|OUT"], '''
del sys.modules["_socket"], sys.modules["socket"]
import _socket
attempt("raw", _socket.getaddrinfo, "example.com", 80)
attempt("pinned", lambda: {a[4][0] for a in _socket.getaddrinfo("localhost", 1)})
''')
    assert o["raw"].startswith("REFUSED "), r
    assert o["pinned"].startswith("OK {"), r


def test_reverse_lookups_of_unallowed_addresses_refused(sb):
    r, o = run(sb, ["ALLOW|tcp|127.0.0.1|1|OUT"], '''
attempt("byaddr", socket.gethostbyaddr, "10.0.0.5")
attempt("nameinfo", socket.getnameinfo, ("10.0.0.5", 443), 0)
attempt("loop", socket.getnameinfo, ("127.0.0.1", 1), socket.NI_NUMERICHOST | socket.NI_NUMERICSERV)
''')
    assert o["byaddr"] == ("REFUSED Guard network connection to '10.0.0.5' DENIED by implicit "
                           "default policy: no net= rule allows this address (reverse lookup "
                           "refused)"), r
    assert o["nameinfo"].startswith("REFUSED "), r
    assert o["loop"] == "OK ('127.0.0.1', '1')", r


# ---- the socket object cannot lie ------------------------------------------


def test_subclass_overriding_family_does_not_bypass(sb):
    r, o = run(sb, ITEM_29, '''
class Liar(socket.socket):
    family = property(lambda self: socket.AF_UNIX)
    type = property(lambda self: socket.SOCK_DGRAM)
s = Liar()
s.setblocking(False)
attempt("conn", s.connect, ("10.0.0.5", 443))
''')
    assert o["conn"].startswith("REFUSED Guard network connection to '[10.0.0.5]:443' DENIED by "
                                "rule 'DENY|*|10.0.0.0/8|*|OUT'"), r


def test_refusal_is_a_sandbox_error_with_denials(sb):
    r, o = run(sb, ITEM_29, '''
try:
    nonblocking().connect(("10.0.0.5", 443))
except ConnectionRefusedError as e:
    d = pysandboxes.sandbox_denials(e)
    print("denials:", len(d), d[0].split(":")[0])
''')
    assert o["denials"] == "1 RuleSocketConnectionRefusedError", r


def test_uncaught_refusal_fails_the_program(sb):
    r = sb.run_code(BASE + "net=ALLOW|tcp|127.0.0.1|1|OUT\n",
                    "import socket\nsocket.socket().connect(('10.0.0.5', 443))\nprint('NO')\n")
    assert r.returncode == 1 and "NO" not in r.stdout, r
    assert "RuleSocketConnectionRefusedError" in r.stderr, r


# ---- item 33: AF_UNIX ------------------------------------------------------

UNIX_BASE = "expose-rw=./rw\n"


def test_item_33_abstract_socket_refused(sb):
    sb.mkdir("rw")
    r, o = run(sb, ["ALLOW|tcp|127.0.0.1|1|OUT"], '''
attempt("connect", socket.socket(socket.AF_UNIX).connect, "\\0pysb-test")
attempt("bind", socket.socket(socket.AF_UNIX).bind, b"\\0pysb-test")
attempt("autobind", socket.socket(socket.AF_UNIX).bind, "")
attempt("dgram", socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto, b"x", "\\0pysb-test")
''', extra=UNIX_BASE)
    for k in ("connect", "bind", "autobind", "dgram"):
        assert o[k].startswith("REFUSED Guard network ") and "abstract AF_UNIX socket" in o[k], r


def test_item_33_unix_path_outside_grants_refused(sb, tmp_path):
    sb.mkdir("rw")
    outside = tmp_path / "outside.sock"
    r, o = run(sb, ["ALLOW|tcp|127.0.0.1|1|OUT"], f'''
attempt("connect", socket.socket(socket.AF_UNIX).connect, {str(outside)!r})
attempt("bind", socket.socket(socket.AF_UNIX).bind, {str(outside)!r})
''', extra=UNIX_BASE)
    assert o["connect"].startswith(f"REFUSED Guard network connection to AF_UNIX socket "
                                   f"'{outside}' DENIED"), r
    assert o["bind"].startswith("REFUSED "), r
    assert not outside.exists()


def test_item_33_unix_path_inside_rw_grant_works(sb):
    rw = sb.mkdir("rw")
    path = rw / "s.sock"
    r, o = run(sb, ["ALLOW|tcp|127.0.0.1|1|OUT"], f'''
srv = socket.socket(socket.AF_UNIX)
attempt("bind", srv.bind, {str(path)!r})
attempt("listen", srv.listen)
attempt("connect", socket.socket(socket.AF_UNIX).connect, {str(path)!r})
''', extra=UNIX_BASE)
    assert o == {"bind": "OK", "listen": "OK", "connect": "OK"}, r


def test_item_33_unix_without_rw_grant_no_socket(sb):
    """No writable expose=: seccomp refuses AF_UNIX sockets themselves."""
    r, o = run(sb, ["ALLOW|tcp|127.0.0.1|1|OUT"],
               'attempt("s", socket.socket, socket.AF_UNIX)\n')
    assert o["s"] == "PermissionError EPERM", r


# ---- py-sandbox=false: the guard is off ------------------------------------


def test_guard_off_with_py_sandbox_false(sb):
    port, other = two_free_ports()
    r, o = run(sb, [f"ALLOW|tcp|127.0.0.1|{port}|IN"],
               f'attempt("b", socket.socket().bind, ("127.0.0.1", {other}))\n',
               extra="py-sandbox=false\n")
    assert o["b"] == "OK", r
