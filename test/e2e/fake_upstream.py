"""A scripted fake upstream DNS server for the frontend-cache end-to-end tests.

FakeUpstream listens on 127.0.0.1, one free port for UDP and TCP, in threads of the test
process (standard library only). What it does with a query depends on the query name:
an explicit rule set with `set(name, kind, **params)`, else one for every name under a
zone, `set_zone(zone, kind, **params)` (so `set_zone("slow.test", "silent")` makes a domain
whose servers never answer), else the kind named by the first label up to its first '-'
(so `servfail-3.fake.test` is a SERVFAIL), else `default` (`answer` unless the FakeUpstream
was made with another, with `default_params`).

Kinds (params in brackets):
  answer     NOERROR with A records [ips (default: the server's answer_ip), ttl=3600]
             (AAAA queries get NODATA, TXT queries one TXT "fake", others NODATA)
  silent     no reply at all (a timeout)
  servfail   SERVFAIL;  refused: REFUSED
  nxdomain   NXDOMAIN with an SOA in the authority section [soa_ttl=3600, minimum=3600]
  nodata     NOERROR, no answer, an SOA in the authority section [soa_ttl, minimum]
  nxnosoa    NXDOMAIN without an SOA
  tc         over UDP: TC set and no records; over TCP: the answer
  big        NOERROR with `count` A records [count=60] (about 1000 bytes: > 512)
  wrongid    over UDP: first a poisoned reply (A 6.6.6.6) with another ID, then the answer
  wrongq     over UDP: first a poisoned reply with our ID but the question renamed to
             `victim.<rest of the name>`, then the answer
  spoofport  over UDP: first a poisoned reply with the right ID and question sent from
             another port of 127.0.0.1, then the answer
  spoofaddr  the same, sent from 127.0.0.2 (the right port number)
  wrongcase  over UDP: first a poisoned reply with our ID and question, the name's letters
             in flipped case (a spoof that guessed port and ID but not the 0x20 case), then
             the answer
  slow       the answer after `delay` seconds [delay=2]
  hold       the answer once release(name) is called (or after `max_hold` s, default 20)
Poisoned replies carry POISON_IP. A FakeUpstream made with loop_to=(host, port) relays
every query, as is, to that server and its reply back (a forwarder that forwards to us).

Every query received is logged (`queries`): name as received, type, transport, ID, EDNS
and DO bit, source; `tcp_connections` counts the TCP connections accepted. Queries
pipelined on one connection are answered as they come, each in its own thread (so a held
one does not hold the others back, and answers go out in any order). Replies echo the question as received (its case too), unless the
FakeUpstream was made with echo_case=False: then every reply's question is lower-cased, as
a server that does not echo the 0x20 case writes it.
"""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dns_wire import (  # noqa: E402
    CLASS_IN, NOERROR, NXDOMAIN, REFUSED, SERVFAIL, TYPES, encode_name, parse_message)

POISON_IP = "6.6.6.6"

def rr(owner_wire, rtype, ttl, rdata, rclass=CLASS_IN):
    return owner_wire + struct.pack("!HHIH", rtype, rclass, ttl, len(rdata)) + rdata


def zone_of(qname):
    """The zone a name's SOA belongs to: its parent, in lower case, as a server writes its
    zone's SOA from its own data (not in the case of the query, which may be random: 0x20)."""
    return qname.split(".", 1)[1].lower() if "." in qname.rstrip(".") else "."


def soa_rdata(zone, minimum):
    return (encode_name("ns." + zone) + encode_name("hostmaster." + zone) +
            struct.pack("!IIIII", 1, 7200, 3600, 1209600, minimum))


def build_reply(query, rcode=NOERROR, answers=(), authority=(), tc=False, ident=None,
                question=None):
    """A reply to the raw `query` bytes: its question (or `question`: name text, type,
    class), RD copied, RA and AA set, and an OPT record when the query had one."""
    q = parse_message(query)
    if question is None:
        qwire = query[12:q["question_end"]]
    else:
        qwire = encode_name(question[0]) + struct.pack("!HH", question[1], question[2])
    flags = 0x8000 | 0x0400 | 0x0080 | (q["flags"] & 0x0100) | rcode
    if tc:
        flags |= 0x0200
    additional = []
    if q["edns"]:
        additional.append(b"\0" + struct.pack("!HHIH", TYPES["OPT"], 1232,
                                              0x8000 if q["do"] else 0, 0))
    header = struct.pack("!HHHHHH", q["id"] if ident is None else ident, flags, 1,
                         len(answers), len(authority), len(additional))
    return header + qwire + b"".join(answers) + b"".join(authority) + b"".join(additional)


class FakeUpstream:
    def __init__(self, answer_ip="192.0.2.1", loop_to=None, name="fake", default="answer",
                 default_params=None, echo_case=True):
        self.answer_ip = answer_ip
        self.echo_case = echo_case
        self.default = default
        self.default_params = default_params or {}
        self.loop_to = loop_to
        self.label = name
        self.rules = {}
        self.zone_rules = {}  # lower-case zone with its final dot -> rule
        self.queries = []
        self.tcp_connections = 0
        self.lock = threading.Lock()
        self.held = {}  # lower-case name -> Event
        self.stopping = False
        self.threads = []
        for _ in range(50):
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind(("127.0.0.1", 0))
            self.port = self.udp.getsockname()[1]
            self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.tcp.bind(("127.0.0.1", self.port))
                break
            except OSError:
                self.udp.close()
                self.tcp.close()
        else:
            raise RuntimeError("no free port for the fake upstream")
        self.tcp.listen(64)
        # Sockets for spoofed replies: another port, and another address with our port.
        self.spoof_port = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.spoof_port.bind(("127.0.0.1", 0))
        self.spoof_addr = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.spoof_addr.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.spoof_addr.bind(("127.0.0.2", self.port))
        except OSError:
            self.spoof_addr.bind(("127.0.0.2", 0))
        self.udp.settimeout(0.2)
        self.tcp.settimeout(0.2)
        for target in (self._udp_loop, self._tcp_loop):
            t = threading.Thread(target=target, daemon=True)
            t.start()
            self.threads.append(t)

    @property
    def address(self):
        return "127.0.0.1#%d" % self.port

    # -- control ---------------------------------------------------------------------

    def set(self, name, kind, **params):
        with self.lock:
            self.rules[name.lower().rstrip(".") + "."] = dict(params, kind=kind)

    def set_zone(self, zone, kind, **params):
        """`kind` for every name under `zone` (the zone itself included)."""
        with self.lock:
            self.zone_rules[zone.lower().rstrip(".") + "."] = dict(params, kind=kind)

    def release(self, name=None):
        """Lets held replies go (all of them, or those for `name`)."""
        with self.lock:
            for key, event in self.held.items():
                if name is None or key == name.lower().rstrip(".") + ".":
                    event.set()

    def received(self, name=None, transport=None):
        """The queries logged (for `name`, case-insensitively, over `transport`)."""
        with self.lock:
            out = list(self.queries)
        if name is not None:
            want = name.lower().rstrip(".") + "."
            out = [q for q in out if q["name"].lower() == want]
        if transport is not None:
            out = [q for q in out if q["transport"] == transport]
        return out

    def wait_for(self, name, count=1, timeout=10.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.received(name)) >= count:
                return True
            time.sleep(0.02)
        return False

    def stop(self):
        self.stopping = True
        self.release()
        for t in self.threads:
            t.join(timeout=2)
        for s in (self.udp, self.tcp, self.spoof_port, self.spoof_addr):
            try:
                s.close()
            except OSError:
                pass

    # -- behaviour ---------------------------------------------------------------------

    def _rule(self, qname):
        name = qname.lower()
        with self.lock:
            rule = self.rules.get(name)
            if rule is None:
                rule = next((zone_rule for zone, zone_rule in self.zone_rules.items()
                             if name == zone or name.endswith("." + zone)), None)
        if rule is not None:
            return rule
        first = qname.split(".", 1)[0].lower().split("-", 1)[0]
        known = ("answer", "silent", "servfail", "refused", "nxdomain", "nodata", "nxnosoa",
                 "tc", "big", "wrongid", "wrongq", "wrongcase", "spoofport", "spoofaddr", "slow",
                 "hold")
        if first in known:
            return {"kind": first}
        return dict(self.default_params, kind=self.default)

    def _answer(self, query, msg, rule):
        qname, qtype = msg["qname"], msg["qtype"]
        ttl = rule.get("ttl", 3600)
        owner = b"\xc0\x0c"  # the question name
        if qtype == TYPES["A"] or qtype == TYPES["ANY"]:
            ips = rule.get("ips", [self.answer_ip])
            answers = [rr(owner, TYPES["A"], ttl, socket.inet_aton(ip)) for ip in ips]
        elif qtype == TYPES["TXT"]:
            answers = [rr(owner, TYPES["TXT"], ttl, b"\x04fake")]
        else:
            answers = []
        authority = []
        if not answers:
            zone = zone_of(qname)
            authority = [rr(encode_name(zone), TYPES["SOA"], 300, soa_rdata(zone, 300))]
        return build_reply(query, answers=answers, authority=authority)

    def _negative(self, query, msg, rule, rcode, with_soa=True):
        zone = zone_of(msg["qname"])
        authority = []
        if with_soa:
            authority = [rr(encode_name(zone), TYPES["SOA"], rule.get("soa_ttl", 3600),
                            soa_rdata(zone, rule.get("minimum", 3600)))]
        return build_reply(query, rcode=rcode, authority=authority)

    def _poison(self, query, msg, **kw):
        return build_reply(query, answers=[rr(b"\xc0\x0c", TYPES["A"], 86400,
                                              socket.inet_aton(POISON_IP))], **kw)

    def _respond(self, query, transport, send):
        """Computes and sends (through `send(bytes, sock=None)`) the reply to one query."""
        try:
            msg = parse_message(query)
        except Exception:
            return
        if msg["qr"] or "qname" not in msg:
            return
        with self.lock:
            self.queries.append({"name": msg["qname"], "type": msg["qtype"],
                                 "class": msg["qclass"], "transport": transport,
                                 "id": msg["id"], "edns": msg["edns"], "do": msg["do"],
                                 "options": msg["options"], "time": time.time()})
        if self.loop_to is not None:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(3)
            try:
                s.sendto(query, self.loop_to)
                send(s.recvfrom(65535)[0])
            except OSError:
                pass
            finally:
                s.close()
            return
        if not self.echo_case:
            name_end = msg["question_end"] - 4  # the name, before its type and class
            query = query[:12] + query[12:name_end].lower() + query[name_end:]
        rule = self._rule(msg["qname"])
        kind = rule["kind"]
        udp = transport == "udp"
        if kind == "silent":
            return
        if kind == "servfail":
            return send(build_reply(query, rcode=SERVFAIL))
        if kind == "refused":
            return send(build_reply(query, rcode=REFUSED))
        if kind == "nxdomain":
            return send(self._negative(query, msg, rule, NXDOMAIN))
        if kind == "nxnosoa":
            return send(self._negative(query, msg, rule, NXDOMAIN, with_soa=False))
        if kind == "nodata":
            return send(self._negative(query, msg, rule, NOERROR))
        if kind == "tc" and udp:
            return send(build_reply(query, tc=True))
        if kind == "big":
            count = rule.get("count", 60)
            answers = [rr(b"\xc0\x0c", TYPES["A"], rule.get("ttl", 3600),
                          socket.inet_aton("10.1.%d.%d" % (i // 250, i % 250 + 1)))
                       for i in range(count)] if msg["qtype"] == TYPES["A"] else []
            return send(build_reply(query, answers=answers))
        if kind == "wrongid" and udp:
            send(self._poison(query, msg, ident=msg["id"] ^ 0x5A5A))
            time.sleep(0.05)
        elif kind == "wrongq" and udp:
            victim = "victim." + msg["qname"].split(".", 1)[1]
            send(self._poison(query, msg, question=(victim, msg["qtype"], msg["qclass"])))
            time.sleep(0.05)
        elif kind == "wrongcase" and udp:
            name_end = msg["question_end"] - 4
            flipped = query[:12] + query[12:name_end].swapcase() + query[name_end:]
            send(self._poison(flipped, msg))
            time.sleep(0.05)
        elif kind in ("spoofport", "spoofaddr") and udp:
            send(self._poison(query, msg),
                 sock=self.spoof_port if kind == "spoofport" else self.spoof_addr)
            time.sleep(0.05)
        elif kind == "slow":
            time.sleep(rule.get("delay", 2.0))
        elif kind == "hold":
            with self.lock:
                event = self.held.setdefault(msg["qname"].lower(), threading.Event())
            event.wait(rule.get("max_hold", 20.0))
        if not self.stopping:
            send(self._answer(query, msg, rule))

    def _udp_loop(self):
        while not self.stopping:
            try:
                data, peer = self.udp.recvfrom(65535)
            except socket.timeout:
                continue
            except OSError:
                return

            def send(payload, sock=None, peer=peer):
                try:
                    (sock or self.udp).sendto(payload, peer)
                except OSError:
                    pass
            threading.Thread(target=self._respond, args=(data, "udp", send),
                             daemon=True).start()

    def _tcp_loop(self):
        while not self.stopping:
            try:
                conn, _ = self.tcp.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.tcp_connections += 1
            threading.Thread(target=self._tcp_conn, args=(conn,), daemon=True).start()

    def _tcp_conn(self, conn):
        write_lock = threading.Lock()
        conn.settimeout(0.5)

        def send(payload, sock=None):
            with write_lock:
                try:
                    conn.sendall(struct.pack("!H", len(payload)) + payload)
                except OSError:
                    pass
        buf = b""
        try:
            while not self.stopping:
                try:
                    chunk = conn.recv(65535)
                except socket.timeout:
                    continue
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
                    size = struct.unpack("!H", buf[:2])[0]
                    message, buf = buf[2:2 + size], buf[2 + size:]
                    threading.Thread(target=self._respond, args=(message, "tcp", send),
                                     daemon=True).start()
        except OSError:
            pass
        finally:
            time.sleep(0.1)
            conn.close()
