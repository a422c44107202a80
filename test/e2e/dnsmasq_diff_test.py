#!/usr/bin/python3
"""frontend-cache against real dnsmasq (Debian's /usr/sbin/dnsmasq): a differential test.

Both run unprivileged on free loopback ports with the same --server configuration and
cache size, forwarding to the same upstreams: NSD (example.test, a reverse zone,
big.test), unbound (other.test, a domain routed to a second upstream) and the scripted
fake upstream (fake.test: errors, truncation, spoofed replies, slow replies). The same
query list (A/AAAA/MX/TXT/SRV/PTR/NS/SOA/ANY, NXDOMAIN, NODATA, a local-only domain, mixed
case, CHAOS, EDNS and not, the DO bit, TCP, truncation) is asked of both with real dig,
twice (the second round mostly from the caches), and each pair of replies is compared:
rcode, the flags that matter (AA TC RD RA AD CD), EDNS (present, DO, payload), and the
answer, authority and additional RRsets; TTLs loosely (each at most the original TTL, asked
of the upstream directly).

Then OPTION_GROUPS: for each group of the dnsmasq options kube-dns Deployments pass
(--address, --local, --addn-hosts, --local-ttl, --domain-needed, --bogus-priv,
--filter-AAAA, --min/--max-cache-ttl, and the ones with no effect on answers here:
--strict-order, --all-servers, --log-queries, --user, --interface, --bind-interfaces,
--no-daemon, --no-poll), a fresh pair of servers started with those options answers the
group's queries, compared the same way (and TTLs exactly where the group says so).

Every difference must match one of DECLARED, each with its reason (where we deliberately
differ, or where dnsmasq is wrong); anything else fails. One line per query and round,
then the declared differences seen, then `N passed, M failed`.
KDNS_KEEP_TMP=1 keeps the temporary directory (logs of every process) after a failure.
"""
import os
import pwd
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402
import fake_upstream as fu  # noqa: E402

FLAGS = ("aa", "tc", "rd", "ra", "ad", "cd")
STAT_NAMES = ("hits.bind.", "misses.bind.", "insertions.bind.", "evictions.bind.")


def Q(qid, name, qtype="A", *opts, route="nsd", qclass=None, rounds=2, timeout=5,
      client="dig"):
    return {"id": qid, "name": name, "type": qtype, "opts": list(opts), "route": route,
            "class": qclass, "rounds": rounds, "timeout": timeout, "client": client}


# The query list, in order (order matters: dnsmasq's cache is shared between queries).
QUERIES = [
    Q("a", "www.example.test", "A"),
    Q("aaaa", "www.example.test", "AAAA"),
    Q("mx", "example.test", "MX"),
    Q("txt", "txt.example.test", "TXT"),
    Q("srv", "_http._tcp.example.test", "SRV"),
    Q("ptr", "10.2.0.192.in-addr.arpa", "PTR"),
    Q("ptr-nxdomain", "99.2.0.192.in-addr.arpa", "PTR"),
    Q("ns", "example.test", "NS"),
    Q("soa", "example.test", "SOA"),
    Q("any", "example.test", "ANY"),
    Q("nxdomain", "nope.example.test", "A"),
    Q("nodata", "onlytxt.example.test", "A"),
    Q("nodata-aaaa", "mail.example.test", "AAAA"),
    Q("cname", "alias.example.test", "A"),
    Q("cname-chain", "chain.example.test", "A"),
    Q("wildcard", "foo.wild.example.test", "A"),
    Q("referral", "www.sub.example.test", "A"),
    Q("short-ttl", "short.example.test", "A"),
    Q("mixed-case-miss", "MaIl.ExAmPlE.tEsT", "A"),
    Q("mixed-case-hit", "WwW.eXaMpLe.TeSt", "A"),
    Q("unknown-type", "www.example.test", "TYPE65280"),
    Q("kdig", "www.example.test", "A", client="kdig"),
    Q("local-only", "host.local.test", "A", route=None),
    Q("local-only-apex", "local.test", "SOA", route=None),
    Q("second-upstream", "www.other.test", "AAAA", route="unbound"),
    Q("second-upstream-txt", "other.test", "TXT", route="unbound"),
    Q("second-upstream-nx", "nope.other.test", "A", route="unbound"),
    # Asked before www.other.test A on purpose (see cname-target-negative below).
    Q("cname-out-of-zone", "outside.example.test", "A"),
    Q("second-upstream-a", "www.other.test", "A", route="unbound"),
    Q("noedns", "www.example.test", "A", "+noedns"),
    Q("do-bit", "www.example.test", "A", "+dnssec"),
    Q("do-bit-nx", "nope.example.test", "A", "+dnssec"),
    Q("cd-bit", "mail.example.test", "A", "+cdflag"),
    Q("bufsize-512", "www.example.test", "A", "+bufsize=512"),
    Q("bufsize-4096", "www.example.test", "A", "+bufsize=4096"),
    Q("norec", "mail.example.test", "A", "+norec"),
    Q("tcp", "www.example.test", "A", "+tcp"),
    Q("tcp-miss", "_http._tcp.example.test", "TXT", "+tcp"),
    Q("big-edns", "many.big.test", "A"),
    Q("big-noedns-tc", "many.big.test", "A", "+noedns", "+ignore"),
    Q("big-noedns-retry", "many.big.test", "A", "+noedns"),
    Q("bigtxt-noedns-tc", "bigtxt.big.test", "TXT", "+noedns", "+ignore"),
    Q("bigtxt-tcp", "bigtxt.big.test", "TXT", "+tcp"),
    Q("fake-big-noedns", "big.fake.test", "A", "+noedns", "+ignore", route="fake"),
    Q("fake-big-tcp", "big.fake.test", "A", "+tcp", route="fake"),
    Q("fake-answer", "www.fake.test", "A", route="fake"),
    Q("fake-servfail", "servfail.fake.test", "A", route="fake"),
    Q("fake-refused", "refused.fake.test", "A", route="fake"),
    Q("fake-nxdomain", "nxdomain.fake.test", "A", route="fake"),
    Q("fake-nx-no-soa", "nxnosoa.fake.test", "A", route="fake"),
    Q("fake-nodata", "nodata.fake.test", "A", route="fake"),
    Q("fake-tc", "tc.fake.test", "A", route="fake"),
    Q("fake-wrong-id", "wrongid.fake.test", "A", route="fake"),
    Q("fake-wrong-question", "wrongq.fake.test", "A", route="fake"),
    Q("fake-victim", "victim.fake.test", "A", route="fake"),
    Q("fake-spoof-port", "spoofport.fake.test", "A", route="fake"),
    Q("fake-spoof-addr", "spoofaddr.fake.test", "A", route="fake"),
    Q("fake-slow", "slow.fake.test", "A", route="fake", timeout=8),
    Q("ch-version", "version.bind", "TXT", qclass="CH", route=None),
    Q("ch-cachesize", "cachesize.bind", "TXT", qclass="CH", route=None),
    Q("ch-hits", "hits.bind", "TXT", qclass="CH", route=None),
    Q("ch-misses", "misses.bind", "TXT", qclass="CH", route=None),
    Q("ch-insertions", "insertions.bind", "TXT", qclass="CH", route=None),
    Q("ch-evictions", "evictions.bind", "TXT", qclass="CH", route=None),
    Q("ch-servers", "servers.bind", "TXT", qclass="CH", route=None),
    Q("ch-noedns", "cachesize.bind", "TXT", "+noedns", qclass="CH", route=None),
    Q("ch-a", "hits.bind", "A", qclass="CH", route=None),
    Q("ch-other-name", "name.fake.test", "TXT", qclass="CH", route=None),
    Q("edns-version-1", "www.example.test", "A", "+edns=1", "+noednsnegotiation"),
    Q("opcode-status", "www.example.test", "A", "+opcode=status", route=None, rounds=1,
      timeout=3),
    Q("fake-silent", "silent.fake.test", "A", route="fake", rounds=1, timeout=8),
]


# Hosts file of the option groups (HOSTS in their arguments).
HOSTS_FILE = """# the option groups' --addn-hosts file
192.0.2.77   h1.example.test h1alias
2001:db8::77 h1.example.test
10.1.2.3     plainhost
10.9.9.9     v4only.example.test
"""


def G(gid, args, queries, exact_ttl=False, ours_only=()):
    """A group: its options (NSD, HOSTS and USER replaced), queries, and options given to
    frontend-cache only (servers.Dnsmasq already passes them: dnsmasq refuses a repeat)."""
    return {"id": gid, "args": args, "queries": queries, "exact_ttl": exact_ttl,
            "ours_only": list(ours_only)}


# One pair of servers per group, with the base configuration (--server=<nsd>, --no-hosts)
# and the group's options; NSD's names only, so that nothing reaches NSD outside its zones
# (it would answer REFUSED, which we never relay: see upstream-refused).
OPTION_GROUPS = [
    G("address", ["--address=/addr.example.test/192.0.2.1",
                  "--address=/addr.example.test/192.0.2.2",
                  "--address=/null.example.test/#", "--address=/nx.test/",
                  "--address=/v6.example.test/2001:db8::1",
                  "--server=/sub.addr.example.test/NSD"], [
        Q("address-a", "www.addr.example.test", "A", rounds=1),
        Q("address-apex", "addr.example.test", "A", rounds=1),
        Q("address-mixed-case", "WwW.AdDr.ExAmPlE.TeSt", "A", rounds=1),
        Q("address-tcp", "addr.example.test", "A", "+tcp", rounds=1),
        Q("address-other-family", "addr.example.test", "AAAA", rounds=1),
        Q("address-other-type", "addr.example.test", "MX", rounds=1),
        Q("address-null-a", "null.example.test", "A", rounds=1),
        Q("address-null-aaaa", "x.null.example.test", "AAAA", rounds=1),
        Q("address-v6", "v6.example.test", "AAAA", rounds=1),
        Q("address-v6-no-a", "v6.example.test", "A", rounds=1),
        Q("address-server-wins", "www.sub.addr.example.test", "A", rounds=1),
        Q("local-only-address", "www.nx.test", "A", route=None, rounds=1),
        Q("local-only-address-mx", "nx.test", "MX", route=None, rounds=1),
    ], exact_ttl=True),
    G("local", ["--local=/loc.test/", "--local=/other.example.test/NSD"], [
        Q("local-only-local", "a.loc.test", "A", route=None, rounds=1),
        Q("local-with-server", "www.example.test", "A", rounds=1),
    ]),
    G("hosts", ["--addn-hosts=HOSTS", "--local-ttl=7"], [
        Q("hosts-a", "h1.example.test", "A", rounds=1),
        Q("hosts-aaaa", "h1.example.test", "AAAA", rounds=1),
        Q("hosts-any", "h1.example.test", "ANY", rounds=1),
        Q("hosts-mixed-case", "H1.Example.TEST", "A", rounds=1),
        Q("hosts-alias", "h1alias", "A", route=None, rounds=1),
        Q("hosts-ptr", "77.2.0.192.in-addr.arpa", "PTR", rounds=1),
        Q("hosts-ptr-v6",
          "7.7.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa", "PTR",
          route=None, rounds=1),
        Q("hosts-ptr-zone", "10.2.0.192.in-addr.arpa", "PTR", rounds=1),
        Q("hosts-other-type", "h1.example.test", "MX", rounds=1),
        Q("hosts-other-family", "v4only.example.test", "AAAA", rounds=1),
        Q("hosts-below-name", "sub.h1.example.test", "A", rounds=1),
    ], exact_ttl=True),
    G("domain-needed-bogus-priv", ["--domain-needed", "--bogus-priv", "--addn-hosts=HOSTS"], [
        Q("domain-needed-a", "nothere", "A", route=None, rounds=1),
        Q("domain-needed-aaaa", "nothere", "AAAA", route=None, rounds=1),
        Q("domain-needed-hosts", "plainhost", "A", route=None, rounds=1),
        Q("domain-needed-hosts-nodata", "plainhost", "AAAA", route=None, rounds=1),
        Q("bogus-priv-ptr", "1.1.168.192.in-addr.arpa", "PTR", route=None, rounds=1),
        Q("bogus-priv-any", "1.1.168.192.in-addr.arpa", "ANY", route=None, rounds=1),
        Q("bogus-priv-partial", "1.168.192.in-addr.arpa", "PTR", route=None, rounds=1),
        Q("bogus-priv-10", "4.3.2.10.in-addr.arpa", "PTR", route=None, rounds=1),
        Q("bogus-priv-test-net", "10.2.0.192.in-addr.arpa", "PTR", route=None, rounds=1),
        Q("bogus-priv-ula",
          "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa", "PTR",
          route=None, rounds=1),
        Q("bogus-priv-hosts-first", "3.2.1.10.in-addr.arpa", "PTR", route=None, rounds=1),
    ], exact_ttl=True),
    G("bogus-priv-server", ["--bogus-priv", "--server=/2.0.192.in-addr.arpa/NSD"], [
        Q("bogus-priv-server-wins", "10.2.0.192.in-addr.arpa", "PTR", rounds=1),
    ]),
    G("filter-aaaa", ["--filter-AAAA", "--addn-hosts=HOSTS"], [
        Q("filter-aaaa", "www.example.test", "AAAA", rounds=1),
        Q("filter-aaaa-a", "www.example.test", "A", rounds=1),
        Q("filter-aaaa-nodata", "mail.example.test", "AAAA", rounds=1),
        Q("filter-aaaa-cname", "alias.example.test", "AAAA", rounds=1),
        Q("filter-aaaa-hosts", "h1.example.test", "AAAA", rounds=1),
        Q("filter-any", "www.example.test", "ANY", rounds=1),
    ]),
    G("cache-ttl", ["--min-cache-ttl=600", "--max-cache-ttl=1200"], [
        Q("cache-ttl-max", "www.example.test", "A"),
        Q("cache-ttl-min", "short.example.test", "A"),
    ]),
    G("accepted", ["--strict-order", "--all-servers", "--log-queries", "--no-daemon",
                   "--no-poll", "--interface=lo"], [
        Q("accepted-a", "www.example.test", "A", rounds=1),
        Q("accepted-nxdomain", "nope.example.test", "A", rounds=1),
        Q("accepted-mx", "example.test", "MX", rounds=1),
    ], ours_only=["--bind-interfaces", "--user=USER"]),
]


# -- declared differences -----------------------------------------------------------------
# Each: id, reason, and match(ctx) -> True when the difference ctx describes is this one.
# ctx: {"q": query, "field": ..., "ours": Answer, "theirs": Answer, "round": 1|2}

def _stat_value(answer):
    """The decimal string of a dnsmasq statistics answer, or None if it is not one."""
    if answer.status != "NOERROR" or len(answer.answer) != 1:
        return None
    r = answer.answer[0]
    m = re.fullmatch(r'"(\d+)"', r.rdata)
    return m.group(1) if m and r.cls == "CH" and r.type == "TXT" and r.ttl == 0 else None


def _servers(answer):
    """servers.bind strings as (address, sent, failed), or None if malformed."""
    if answer.status != "NOERROR" or len(answer.answer) != 1:
        return None
    out = []
    for s in re.findall(r'"([^"]*)"', answer.answer[0].rdata):
        m = re.fullmatch(r"(\S+#\d+) (\d+) (\d+)", s)
        if not m:
            return None
        out.append(m.groups())
    return out


def _only_glue(records):
    return all(r.type in ("NS", "A", "AAAA") for r in records)


DECLARED = [
    {"id": "aa-forwarded",
     "reason": "AA: a forwarding cache is not the authority (RFC 1035 4.1.1), so we clear AA "
               "on every forwarded or cached answer; dnsmasq copies the upstream's AA into a "
               "forwarded reply and clears it on a cache hit, so AA flips between two "
               "identical queries.",
     "match": lambda c: c["field"] == "flag:aa" and c["q"]["route"] is not None
     and not c["ours_v"] and c["theirs_v"]},
    {"id": "aa-local-only",
     "reason": "AA on the NXDOMAIN for a local-only --server=/domain/: we are the only "
               "source of truth for that domain and say so; dnsmasq leaves AA clear.",
     "match": lambda c: c["field"] == "flag:aa" and c["q"]["id"].startswith("local-only")
     and c["ours_v"] and not c["theirs_v"]},
    {"id": "cache-hit-sections",
     "reason": "A positive answer from the cache: we replay the upstream's whole reply "
               "(authority NS and glue included, TTLs decremented); dnsmasq rebuilds it from "
               "its RR cache with the answer section only.",
     "match": lambda c: c["field"] in ("authority", "additional")
     and c["theirs"].status == "NOERROR" and c["theirs"].answer and not c["theirs_v"]
     and _only_glue(c["ours"].sections[c["field"].upper()])},
    {"id": "tc-empty",
     "reason": "A truncated UDP answer (TC): we send the header and question only, clients "
               "must retry over TCP (RFC 2181 9, RFC 7766); dnsmasq fills the packet with the "
               "records that fit (30 of 40), a partial RRset a careless client may use.",
     "match": lambda c: c["field"] in ("answer", "authority", "additional")
     and "tc" in c["ours"].flags and "tc" in c["theirs"].flags and not c["ours_v"]},
    {"id": "big-reply-to-non-edns-client",
     "reason": "An upstream reply larger than 512 bytes to a client without EDNS: we set TC "
               "(RFC 1035 4.2.1: 512 bytes is the UDP limit without EDNS, RFC 6891 7); "
               "dnsmasq relays the whole 1 kB reply it got for its own EDNS query (a dnsmasq "
               "bug: such replies are dropped by middleboxes and old stubs).",
     "match": lambda c: c["q"]["id"] == "fake-big-noedns" and "+noedns" in c["q"]["opts"]
     and "tc" in c["ours"].flags and "tc" not in c["theirs"].flags
     and (c["field"] == "flag:tc" or (c["field"] == "answer" and not c["ours_v"]))},
    {"id": "version-bind",
     "reason": "version.bind names the software: \"kdns-<version>\", not \"dnsmasq-2.90\".",
     "match": lambda c: c["q"]["id"] == "ch-version" and c["field"] == "answer"
     and c["ours"].answer and c["ours"].answer[0].rdata.startswith('"kdns-')},
    {"id": "cache-counters",
     "reason": "hits/misses/insertions/evictions.bind count different events: ours count "
               "cache lookups per (name, type, class, DO) as the sidecar's metrics document; "
               "dnsmasq counts RRs, re-forwards the types it does not cache (TXT, MX, NS, "
               "...) and counts CHAOS and local answers as hits. The format is the same "
               "(one TXT string of digits, class CH, TTL 0): that is compared exactly.",
     "match": lambda c: c["field"] == "answer" and c["q"]["name"] + "." in STAT_NAMES
     and _stat_value(c["ours"]) is not None and _stat_value(c["theirs"]) is not None},
    {"id": "servers-bind-counters",
     "reason": "servers.bind \"sent failed\" counts: ours count every try (SERVFAIL and "
               "REFUSED retried once on the same server, TCP retries, cache misses only); "
               "dnsmasq counts one per forward and re-forwards what it does not cache. The "
               "format and the set of servers are compared exactly.",
     "match": lambda c: c["field"] == "servers.bind:counts"},
    {"id": "chaos-never-forwarded",
     "reason": "A class CH query for any other name: NOTIMP, never forwarded (DESIGN.md: "
               "CHAOS is answered locally); dnsmasq forwards it to the IN upstreams, and "
               "relays whatever comes back (here a malformed class-mismatched answer).",
     "match": lambda c: c["q"]["id"] == "ch-other-name" and c["ours"].status == "NOTIMP"},
    {"id": "edns-badvers",
     "reason": "EDNS version 1: we answer BADVERS (RFC 6891 6.1.3); dnsmasq ignores the "
               "version and answers as if it were 0.",
     "match": lambda c: c["q"]["id"] == "edns-version-1" and c["ours"].status == "BADVERS"},
    {"id": "opcode-notimp",
     "reason": "An opcode other than QUERY: we answer NOTIMP (RFC 1035 4.1.1); dnsmasq "
               "drops it and the client times out.",
     "match": lambda c: c["q"]["id"] == "opcode-status" and c["ours"].status == "NOTIMP"
     and c["theirs"].status is None},
    {"id": "upstream-refused",
     "reason": "An upstream's REFUSED is a failure of that upstream (we try the next one, "
               "as for SERVFAIL) and the client gets SERVFAIL when all fail; dnsmasq relays "
               "REFUSED, which a stub resolver reads as \"this server refuses me\".",
     "match": lambda c: c["q"]["id"] == "fake-refused" and c["ours"].status == "SERVFAIL"
     and c["theirs"].status == "REFUSED"},
    {"id": "silent-upstream",
     "reason": "Every upstream silent: we answer SERVFAIL when the time budget ends; dnsmasq "
               "never answers and the client times out.",
     "match": lambda c: c["q"]["id"] == "fake-silent" and c["ours"].status == "SERVFAIL"
     and c["theirs"].status is None},
    {"id": "filter-aaaa-local",
     "reason": "--filter-AAAA: we answer every AAAA query NODATA ourselves (no upstream round "
               "trip, nothing cached; AA clear, no records); dnsmasq forwards it and strips "
               "the AAAA records from the reply, so it relays the upstream's AA, authority "
               "section and CNAMEs.",
     "match": lambda c: c["q"]["id"].startswith("filter-aaaa") and c["q"]["type"] == "AAAA"
     and c["ours"].status == "NOERROR" and not c["ours"].answer
     and c["field"] in ("flag:aa", "authority", "additional", "answer")},
    {"id": "cache-ttl-first-answer",
     "reason": "--min-cache-ttl and --max-cache-ttl on the answer that fills the cache: we "
               "give the client the TTL we cache it for (600 for a 300, 1200 for a 3600); "
               "dnsmasq relays the upstream's TTL and applies its bounds from the first cache "
               "hit on. Later answers are compared exactly.",
     "match": lambda c: c["q"]["id"].startswith("cache-ttl") and c["field"] == "ttl"
     and c["round"] == 1},
    {"id": "cname-target-negative",
     "reason": "After outside.example.test CNAME www.other.test (an answer from NSD, which "
               "has no data for other.test), dnsmasq caches www.other.test A as NODATA and "
               "serves that, although other.test is routed to another server (a dnsmasq "
               "bug: out-of-bailiwick negative caching); we cache only the question's RRset "
               "and ask unbound.",
     "match": lambda c: c["q"]["id"] == "second-upstream-a" and c["field"] in (
         "answer", "flag:aa") and c["ours"].answer and not c["theirs"].answer},
]


# -- comparison ---------------------------------------------------------------------------

def ask(port, q):
    return harness.dig_async(port, q["name"], q["type"], q["class"], *q["opts"],
                             timeout=q["timeout"], client=q["client"])


def rrset(records):
    return sorted((r.name, r.cls, r.type, r.rdata) for r in records)


def reference_ttls(env, q):
    """Original TTLs, asked of the upstream directly: (name, type) -> TTL; None: unknown."""
    if q["route"] in ("nsd", "unbound") and q["class"] is None:
        port = env[q["route"]].port
        opts = [o for o in q["opts"] if o not in ("+ignore",)] + ["+norec"]
        got = harness.dig(port, q["name"], q["type"], None, *opts)
        out = {}
        for r in got.answer + got.authority + got.additional:
            key = (r.name.lower(), r.type)
            out[key] = max(out.get(key, 0), r.ttl)
        return out
    return None


def compare(q, ours, theirs, ref, exact_ttl=False, ttl_limit=None):
    """Differences as (field, ours value, theirs value), and TTL problems (always fatal).
    With `exact_ttl` the answers' TTLs must be equal (local data: no countdown); with
    `ttl_limit` (--max-cache-ttl) the answers' TTLs are compared with each other, and ours
    checked against it, instead of the originals (--min-cache-ttl raises them)."""
    diffs, ttl_problems = [], []
    if exact_ttl or ttl_limit:
        ttls = sorted(r.ttl for r in ours.answer), sorted(r.ttl for r in theirs.answer)
        # A cache hit may be a second older in one server than in the other.
        if exact_ttl and ttls[0] != ttls[1] or ttl_limit and any(
                abs(a - b) > 1 for a, b in zip(*ttls)):
            diffs.append(("ttl", ttls[0], ttls[1]))
    if ours.status != theirs.status:
        diffs.append(("rcode", ours.status, theirs.status))
    for flag in FLAGS:
        if (flag in ours.flags) != (flag in theirs.flags):
            diffs.append(("flag:" + flag, flag in ours.flags, flag in theirs.flags))
    if ours.edns != theirs.edns:
        diffs.append(("edns", ours.edns, theirs.edns))
    elif ours.edns:
        if ("do" in ours.edns_flags) != ("do" in theirs.edns_flags):
            diffs.append(("edns:do", ours.edns_flags, theirs.edns_flags))
        if ours.edns_udp != theirs.edns_udp:
            diffs.append(("edns:udp", ours.edns_udp, theirs.edns_udp))
    sections = ("ANSWER", "AUTHORITY", "ADDITIONAL")
    ours_servers, theirs_servers = _servers(ours), _servers(theirs)
    if q["id"] == "ch-servers" and ours_servers and theirs_servers:
        # One TXT record, one string per upstream: compared string by string.
        sections = ("AUTHORITY", "ADDITIONAL")
        order = [s[0] for s in ours_servers], [s[0] for s in theirs_servers]
        if sorted(order[0]) != sorted(order[1]) or len(set(order[0])) != len(order[0]):
            diffs.append(("servers.bind:set", ours_servers, theirs_servers))
        elif order[0] != order[1]:
            diffs.append(("servers.bind:order", order[0], order[1]))
        if sorted(ours_servers) != sorted(theirs_servers):
            diffs.append(("servers.bind:counts", ours_servers, theirs_servers))
        r1, r2 = ours.answer[0], theirs.answer[0]
        if (r1.name, r1.cls, r1.type, r1.ttl) != (r2.name, r2.cls, r2.type, r2.ttl):
            diffs.append(("servers.bind:record", r1, r2))
    for section in sections:
        a, b = rrset(ours.sections[section]), rrset(theirs.sections[section])
        if a != b:
            diffs.append((section.lower(), a, b))
    for who, answer in (("ours", ours), ("dnsmasq", theirs)):
        if ttl_limit and who == "dnsmasq":
            break  # it relays the upstream's TTL once (see cache-ttl-first-answer)
        for r in answer.answer + answer.authority + answer.additional:
            if r.cls == "CH":
                if r.ttl != 0:
                    ttl_problems.append("%s: CHAOS TTL %d, want 0" % (who, r.ttl))
                continue
            if ttl_limit:
                limit = ttl_limit
            elif ref is None:
                limit = 3600  # every TTL the fake upstream sends is at most 3600
            else:
                limit = ref.get((r.name.lower(), r.type), max(ref.values() or [3600]))
            if r.ttl > limit:
                ttl_problems.append("%s: %s TTL above the original %d" % (who, r, limit))
    return diffs, ttl_problems


def run_queries(queries, ours, theirs, env, seen, exact_ttl=False, ttl_limit=None):
    """Asks both servers each query (twice where it says so) and compares; (passed, failed)."""
    passed = failed = 0
    for round_ in (1, 2):
        for q in queries:
            if round_ > q["rounds"]:
                continue
            ref = reference_ttls(env, q)
            procs = [ask(ours.port, q), ask(theirs.port, q)]
            outs = [p.communicate(timeout=q["timeout"] * 3 + 30)[0] for p in procs]
            a, b = harness.Answer(outs[0], procs[0].returncode), harness.Answer(
                outs[1], procs[1].returncode)
            diffs, ttl_problems = compare(q, a, b, ref, exact_ttl, ttl_limit)
            undeclared, declared = [], []
            for field, ov, tv in diffs:
                ctx = {"q": q, "field": field, "ours": a, "theirs": b, "round": round_,
                       "ours_v": ov, "theirs_v": tv}
                match = next((d for d in DECLARED if d["match"](ctx)), None)
                if match is None:
                    undeclared.append("%s: ours %s, dnsmasq %s" % (field, ov, tv))
                else:
                    declared.append(match["id"])
                    seen.setdefault(match["id"], []).append("%s/%d" % (q["id"], round_))
            label = "%s %s%s %s (round %d)" % (q["name"], q["class"] + " " if q["class"]
                                               else "", q["type"], " ".join(q["opts"]),
                                               round_)
            if undeclared or ttl_problems:
                failed += 1
                print("FAIL %-16s %s" % (q["id"], label))
                for problem in undeclared + ttl_problems:
                    print("    " + problem)
                print("    ours:    %s\n    dnsmasq: %s" % (a, b))
            else:
                passed += 1
                print("ok   %-16s %s%s" % (q["id"], label, "  [declared: %s]" % ", ".join(
                    sorted(set(declared))) if declared else ""))
            sys.stdout.flush()
    return passed, failed


def diff_servers(env, checks):
    """Both servers on the same upstreams, then each option group on a pair of its own."""
    workdir, owned = env["workdir"], env["owned"]
    seen = {}
    nsd = servers.Nsd(workdir)
    owned.append(nsd)
    unbound = servers.Unbound(workdir)
    owned.append(unbound)
    fake = fu.FakeUpstream(name="diff")
    owned.append(fake)
    # A domain's server before the default one: servers.bind must list them in this
    # order, as dnsmasq does.
    common = ["--cache-size=1000", "--server=/other.test/" + unbound.address,
              "--server=" + nsd.address,
              "--server=/fake.test/" + fake.address, "--server=/local.test/"]
    ours = servers.FrontendCache(workdir, "frontend-cache", *common, metrics=False)
    owned.append(ours)
    theirs = servers.Dnsmasq(workdir, "dnsmasq", *common)
    owned.append(theirs)
    upstreams = {"nsd": nsd, "unbound": unbound}
    print("frontend-cache on %d, dnsmasq on %d; nsd %s, unbound %s, fake %s" % (
        ours.port, theirs.port, nsd.address, unbound.address, fake.address))
    p, f = run_queries(QUERIES, ours, theirs, upstreams, seen)
    checks.add(p, f)
    if not ours.process.alive() or not theirs.process.alive():
        checks.failed += 1
        print("FAIL a server exited")
    hosts = os.path.join(workdir, "hosts")
    with open(hosts, "w") as f:
        f.write(HOSTS_FILE)
    user = pwd.getpwuid(os.getuid()).pw_name
    for group in OPTION_GROUPS:
        args = ["--no-hosts", "--server=" + nsd.address] + [
            a.replace("NSD", nsd.address).replace("HOSTS", hosts).replace("USER", user)
            for a in group["args"]]
        print("\n-- options: %s" % " ".join(group["args"]))
        ours_only = [a.replace("USER", user) for a in group["ours_only"]]
        try:
            pair = [servers.FrontendCache(workdir, "frontend-cache-" + group["id"],
                                          *(args + ours_only), metrics=False),
                    servers.Dnsmasq(workdir, "dnsmasq-" + group["id"], *args)]
        except RuntimeError as e:
            checks.failed += 1
            print("FAIL %s: a server did not start: %s" % (group["id"], e))
            continue
        owned.extend(pair)
        p, f = run_queries(group["queries"], pair[0], pair[1], upstreams, seen,
                           exact_ttl=group["exact_ttl"],
                           ttl_limit=1200 if group["id"] == "cache-ttl" else None)
        checks.add(p, f)
        for server in pair:
            if not server.process.alive():
                checks.failed += 1
                print("FAIL %s: a server exited" % group["id"])
            server.stop()
    print("\ndeclared differences (deliberate, or dnsmasq's bug):")
    for d in DECLARED:
        print("  %-30s %s" % (d["id"], "seen in " + ", ".join(seen[d["id"]][:6]) + (
            " ..." if len(seen[d["id"]]) > 6 else "") if d["id"] in seen else "NOT SEEN"))
        print("      " + d["reason"])


def main():
    return harness.main(
        "kdns-dnsmasq-diff-", diff_servers,
        tools=(os.path.join(harness.BIN, "frontend-cache"), servers.NSD, servers.UNBOUND,
               servers.DNSMASQ, "/usr/bin/dig", "/usr/bin/kdig"))


if __name__ == "__main__":
    sys.exit(main())
