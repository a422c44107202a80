"""DNS messages on the wire, for the end-to-end suites' own clients and the scripted fake
upstream (fake_upstream.py): names, queries, a parse of any message, and a raw-UDP client
fast enough to poll every few milliseconds (ask_udp). Standard library only.
"""
import random
import socket
import struct
import threading
import time

TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16,
         "AAAA": 28, "SRV": 33, "OPT": 41, "ANY": 255}
CLASS_IN, CLASS_CH = 1, 3
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED = 0, 1, 2, 3, 4, 5
RCODE_NAMES = {NOERROR: "NOERROR", FORMERR: "FORMERR", SERVFAIL: "SERVFAIL",
               NXDOMAIN: "NXDOMAIN", NOTIMP: "NOTIMP", REFUSED: "REFUSED"}


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def read_name(data, offset):
    """(name text with a trailing dot, offset after the name); follows pointers."""
    labels, jumped, end = [], False, offset
    for _ in range(128):
        length = data[offset]
        if length >= 0xC0:
            if not jumped:
                end = offset + 2
            offset = ((length & 0x3F) << 8) | data[offset + 1]
            jumped = True
            continue
        offset += 1
        if length == 0:
            break
        labels.append(data[offset:offset + length].decode("latin-1"))
        offset += length
    if not jumped:
        end = offset
    return ".".join(labels) + ".", end


def parse_message(data):
    """Header fields, the first question, whether an OPT (and DO) is present and its
    options ((code, data) pairs)."""
    ident, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", data[:12])
    msg = {"id": ident, "flags": flags, "qr": bool(flags & 0x8000), "rcode": flags & 0xF,
           "tc": bool(flags & 0x0200), "aa": bool(flags & 0x0400), "rd": bool(flags & 0x0100),
           "counts": (qd, an, ns, ar), "edns": False, "do": False, "payload": None,
           "options": [], "answers": []}
    offset = 12
    if qd:
        name, offset = read_name(data, offset)
        qtype, qclass = struct.unpack("!HH", data[offset:offset + 4])
        offset += 4
        msg.update(qname=name, qtype=qtype, qclass=qclass, question_end=offset)
    for section, count in (("an", an), ("ns", ns), ("ar", ar)):
        for _ in range(count):
            owner, offset = read_name(data, offset)
            rtype, rclass, ttl, rdlen = struct.unpack("!HHIH", data[offset:offset + 10])
            rdata = data[offset + 10:offset + 10 + rdlen]
            offset += 10 + rdlen
            if rtype == TYPES["OPT"]:
                msg["edns"] = True
                msg["payload"] = rclass
                msg["do"] = bool(ttl & 0x8000)
                at = 0
                while at + 4 <= len(rdata):
                    code, length = struct.unpack("!HH", rdata[at:at + 4])
                    msg["options"].append((code, rdata[at + 4:at + 4 + length]))
                    at += 4 + length
            elif section == "an":
                msg["answers"].append((owner, rtype, ttl, rdata))
    return msg


def build_query(name, qtype="A", qclass=CLASS_IN, ident=0x1234, edns=True, do=False, rd=True,
                options=(), cd=False, payload=1232):
    """A query, as a client (for direct checks, not for what dig already shows), the one
    query builder of the Python tests and benchmarks: `qtype` a type name or number; RD and
    CD as asked; with `edns`, an OPT record advertising `payload` with DO as asked and the
    EDNS `options` ((code, data) pairs)."""
    flags = (0x0100 if rd else 0) | (0x0010 if cd else 0)
    header = struct.pack("!HHHHHH", ident, flags, 1, 0, 0, 1 if edns else 0)
    body = encode_name(name) + struct.pack("!HH", TYPES.get(qtype, qtype) if isinstance(
        qtype, str) else qtype, qclass)
    if edns:
        rdata = b"".join(struct.pack("!HH", code, len(data)) + data for code, data in options)
        body += b"\0" + struct.pack("!HHIH", TYPES["OPT"], payload, 0x8000 if do else 0,
                                     len(rdata)) + rdata
    return header + body


class ReplyReader:
    """Reads what comes back to `sock` (a flooder's, with a receive timeout) on a thread,
    handing each parsed message to on_message(message), until stop()."""

    def __init__(self, sock, on_message):
        self.sock, self.on_message = sock, on_message
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.is_set():
            try:
                message = parse_message(self.sock.recv(4096))
            except OSError:
                continue
            self.on_message(message)

    def stop(self, timeout=2):
        self.stopping.set()
        self.thread.join(timeout)


def udp_exchange(port, payload, timeout=5.0, host="127.0.0.1"):
    """Sends one datagram and returns the first reply (or None on timeout)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(payload, (host, port))
        return s.recvfrom(65535)[0]
    except OSError:
        return None
    finally:
        s.close()


def tcp_exchange(sock, query):
    """Sends `query` with its length prefix on the connected TCP socket `sock` and returns the
    reply (without its prefix); OSError when the server closes first."""
    sock.sendall(struct.pack("!H", len(query)) + query)
    data = b""
    while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("closed by the server")
        data += chunk
    return data[2:]


def records_of(msg):
    """The A addresses and TXT strings of a parsed message's answer section."""
    out = []
    for _, rtype, _, rdata in msg["answers"]:
        if rtype == TYPES["A"] and len(rdata) == 4:
            out.append(socket.inet_ntoa(rdata))
        elif rtype == TYPES["TXT"]:
            i = 0
            while i < len(rdata):
                out.append(rdata[i + 1:i + 1 + rdata[i]].decode(errors="replace"))
                i += 1 + rdata[i]
    return out


def ask_udp(port, name, qtype="A", qclass=CLASS_IN, timeout=1.0, full=False):
    """One query (RD, no EDNS) to 127.0.0.1:port: (rcode name, records_of the reply), or
    (None, []) on timeout; with full, the parsed reply (parse_message), or None."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ident = random.randrange(65536)
        sock.sendto(build_query(name, qtype, qclass, ident=ident, edns=False),
                    ("127.0.0.1", port))
        deadline = time.monotonic() + timeout
        while True:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            msg = parse_message(sock.recv(4096))
            if msg["id"] == ident:
                if full:
                    return msg
                return RCODE_NAMES.get(msg["rcode"], str(msg["rcode"])), records_of(msg)
    except OSError:  # a timeout, or nothing listening
        return None if full else (None, [])
    finally:
        sock.close()
