#!/usr/bin/python3
"""Attacks on frontend-cache's cache (DESIGN §7, issue 15), end to end: the real binary
($KDNS_BIN, default build/bin) on loopback, fake upstreams (fake_upstream.py), Debian's
dnsmasq as the reference. The attacker sends from 127.0.0.2, the victim from 127.0.0.1;
each test asserts what the victim sees.

- a working set of exactly --cache-size names (1,000 and 10,000, served by NSD) is
  answered from the cache on every pass after the first: nothing forwarded, no eviction
  (dnsmasq alongside, same --cache-size, same names, counted the same way: the CHAOS
  misses.bind and evictions.bind; both miss ratios printed);
- a new working set settles (issue 30): with --cache-size=1000 full of 1,000 names asked by
  the victim, another client cycling 1,000 (or 900) other names evicts exactly that many in
  its first pass and nothing after, and is answered from the cache from its second pass on
  (dnsmasq alongside; its figures printed);
- an answer fetched with CD=1 (the upstream answers differently when CD is set) never
  reaches a CD=0 client;
- a client asking many names with large answers does not grow RSS past --cache-bytes plus
  a stated margin, and the victim is still answered.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs of every process) after a failure.
Against a build without the cache limits (KDNS_BIN=/work/before-build/bin), the limit
flags are left out and the tests fail with the figures of the attack.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402
from dns_wire import build_query, parse_message, records_of  # noqa: E402

VICTIM = "127.0.0.1"
ATTACKER = "127.0.0.2"
CD_IP = "198.51.100.66"  # what the upstream answers when CD is set
PASSES = 4


def ask_many(port, names, source=VICTIM, cd=False, payload=1232, window=100, tries=4):
    """Asks every name (A) over UDP from `source`, `window` at a time, asking again what
    got no reply; returns {name: parsed reply} for the names answered."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    sock.bind((source, 0))
    replies = {}
    try:
        for start in range(0, len(names), window):
            chunk = names[start:start + window]
            for _ in range(tries):
                pending = {(start + i) & 0xFFFF: n for i, n in enumerate(chunk)
                           if n not in replies}
                if not pending:
                    break
                for ident, name in pending.items():
                    sock.sendto(build_query(name, ident=ident, cd=cd, payload=payload),
                                ("127.0.0.1", port))
                deadline = time.monotonic() + 2.0
                while pending and time.monotonic() < deadline:
                    sock.settimeout(max(0.01, deadline - time.monotonic()))
                    try:
                        msg = parse_message(sock.recv(65535))
                    except OSError:
                        break
                    name = pending.get(msg["id"])
                    if (name is not None and
                            msg.get("qname", "").lower().rstrip(".") == name.lower()):
                        replies[name] = msg
                        del pending[msg["id"]]
    finally:
        sock.close()
    return replies


def start_frontend(env, name, upstream, *args, limit_flags=()):
    """frontend-cache with `args`, and `limit_flags` when the build knows them."""
    fe = servers.FrontendCache(env["workdir"], name, "--server=" + upstream.address,
                               *(list(args) + list(limit_flags)), wait=False)
    ok = harness.wait_until(
        lambda: not fe.process.alive() or "serving DNS on" in fe.process.log(), 20)
    if ok and fe.process.alive():
        env["owned"].append(fe)
        return fe, True
    fe.stop()
    if not limit_flags:
        raise RuntimeError("%s did not start: %s" % (name, fe.process.log()[-1500:]))
    print("    (%s: this build does not take %s; started without them)" %
          (name, " ".join(limit_flags)))
    fe, _ = start_frontend(env, name + "-nolimits", upstream, *args)
    return fe, False


WS_NAMES = 10000


def ws_nsd(env):
    """NSD serving ws.test: n0..n9999, one A record each (TTL one hour)."""
    if "ws_nsd" not in env:
        zone = ["$ORIGIN ws.test.", "$TTL 3600",
                "@ IN SOA ns hostmaster 1 7200 3600 1209600 3600", "@ IN NS ns",
                "ns IN A 127.0.0.1"]
        zone += ["n%d IN A 10.%d.%d.%d" % (i, i >> 16, (i >> 8) & 255, i & 255)
                 for i in range(WS_NAMES)]
        env["ws_nsd"] = servers.Nsd(env["workdir"], [("ws.test", "\n".join(zone) + "\n")],
                                    name="nsd-ws")
        env["owned"].append(env["ws_nsd"])
    return env["ws_nsd"]


def chaos_count(port, name):
    """A CHAOS statistics counter (misses.bind, evictions.bind), as dnsmasq answers them."""
    answer = harness.dig(port, name, "TXT", "CH")
    values = answer.rdatas("TXT")
    return int(values[0].strip('"')) if answer.status == "NOERROR" and values else None


def working_set(env, size):
    p = []
    nsd = ws_nsd(env)
    names = ["n%d.ws.test" % i for i in range(size)]
    fe, _ = start_frontend(env, "fe-ws-%d" % size, nsd, "--cache-size=%d" % size)
    dm = servers.Dnsmasq(env["workdir"], "dnsmasq-ws-%d" % size, "--cache-size=%d" % size,
                         "--server=" + nsd.address)
    env["owned"].append(dm)
    figures = {}
    for label, port in (("frontend-cache", fe.port), ("dnsmasq", dm.port)):
        misses = []
        for _ in range(PASSES):
            before = chaos_count(port, "misses.bind")
            answered = ask_many(port, names)
            misses.append(chaos_count(port, "misses.bind") - before)
            if len(answered) != size:
                p.append("%s: %d of %d names unanswered in a pass" %
                         (label, size - len(answered), size))
        evictions = chaos_count(port, "evictions.bind")
        figures[label] = misses
        print("    --cache-size=%d, %d names, %s: forwarded per pass %s, miss ratio %.1f%% over "
              "%d passes, %s evictions" % (size, size, label, misses,
                                           100.0 * sum(misses) / (size * PASSES), PASSES,
                                           evictions))
        if label == "frontend-cache" and evictions:
            p.append("frontend-cache evicted %d entries of a working set of --cache-size" %
                     evictions)
    ours, theirs = figures["frontend-cache"], figures["dnsmasq"]
    if sum(ours[1:]) != 0:
        p.append("frontend-cache forwarded %d queries after the first pass (dnsmasq: %d): the "
                 "working set was evicted" % (sum(ours[1:]), sum(theirs[1:])))
    if sum(ours[1:]) > sum(theirs[1:]):
        p.append("frontend-cache missed more than dnsmasq after warm-up: %s vs %s" %
                 (ours, theirs))
    fe.stop()
    dm.stop()
    return p


def test_working_set_of_1000_names_stays_cached(env):
    return working_set(env, 1000)


def test_working_set_of_10000_names_stays_cached(env):
    return working_set(env, 10000)


def new_working_set(env, new_size, size=1000):
    """The victim fills a --cache-size=`size` cache with its names; another client then
    cycles `new_size` other names PASSES times: the evictions and forwarded queries of each
    pass, frontend-cache beside dnsmasq."""
    p = []
    nsd = ws_nsd(env)
    old = ["n%d.ws.test" % i for i in range(size)]
    new = ["n%d.ws.test" % i for i in range(size, size + new_size)]
    fe, _ = start_frontend(env, "fe-change-%d" % new_size, nsd, "--cache-size=%d" % size)
    dm = servers.Dnsmasq(env["workdir"], "dnsmasq-change-%d" % new_size,
                         "--cache-size=%d" % size, "--server=" + nsd.address)
    env["owned"].append(dm)
    figures = {}
    for label, port in (("frontend-cache", fe.port), ("dnsmasq", dm.port)):
        if len(ask_many(port, old)) != size:
            p.append("%s: the victim's names were not all answered (the test's premise)" % label)
        evictions, misses = [], []
        for _ in range(PASSES):
            evicted_before = chaos_count(port, "evictions.bind")
            missed_before = chaos_count(port, "misses.bind")
            answered = ask_many(port, new, source=ATTACKER)
            evictions.append(chaos_count(port, "evictions.bind") - evicted_before)
            misses.append(chaos_count(port, "misses.bind") - missed_before)
            if len(answered) != new_size:
                p.append("%s: %d of %d new names unanswered in a pass" %
                         (label, new_size - len(answered), new_size))
        figures[label] = (evictions, misses)
        print("    --cache-size=%d full of %d names, then %d others: %s evicted per pass %s, "
              "forwarded per pass %s" % (size, size, new_size, label, evictions, misses))
    evictions, misses = figures["frontend-cache"]
    # The change landed: the metric saw the old set go (and only the old set).
    evicted_metric = fe.metric("kdns_frontend_cache_evictions_total")
    if evicted_metric != new_size:
        p.append("kdns_frontend_cache_evictions_total is %s, not %d" % (evicted_metric, new_size))
    if evictions != [new_size] + [0] * (PASSES - 1):
        p.append("frontend-cache evicted %s per pass, not %d and then nothing (dnsmasq: %s)" %
                 (evictions, new_size, figures["dnsmasq"][0]))
    if misses != [new_size] + [0] * (PASSES - 1):
        p.append("frontend-cache forwarded %s per pass, not %d and then nothing (dnsmasq: %s)"
                 % (misses, new_size, figures["dnsmasq"][1]))
    if fe.metric("kdns_frontend_cache_entries") != size:
        p.append("the cache holds %s entries, not %d" %
                 (fe.metric("kdns_frontend_cache_entries"), size))
    fe.stop()
    dm.stop()
    return p


def test_new_working_set_of_1000_names_settles_in_one_pass(env):
    return new_working_set(env, 1000)


def test_new_working_set_of_900_names_settles_in_one_pass(env):
    return new_working_set(env, 900)


class CheckingUpstream(fu.FakeUpstream):
    """Answers CD_IP to a query with CD set (as a validating resolver may answer a bogus
    name when validation is disabled), its answer_ip otherwise."""

    def _answer(self, query, msg, rule):
        if len(query) > 3 and query[3] & 0x10:
            rule = dict(rule, ips=[CD_IP])
        return super()._answer(query, msg, rule)


def test_cd_answer_never_reaches_a_cd0_client(env):
    p = []
    up = CheckingUpstream(name="checking")
    env["owned"].append(up)
    fe, _ = start_frontend(env, "fe-cd", up, "--cache-size=1000")
    names = ["cd%d.cd.test" % i for i in range(50)]
    # The attacker fetches every name with CD=1 first; then the victim asks without CD.
    attacker = ask_many(fe.port, names, source=ATTACKER, cd=True)
    if [n for n in names if records_of(attacker.get(n, {"answers": []})) != [CD_IP]]:
        p.append("the CD=1 client did not get the upstream's CD=1 answer (the test's premise)")
    leaked = 0
    for _ in range(2):  # the second time from the cache
        victim = ask_many(fe.port, names, source=VICTIM, cd=False)
        leaked += sum(1 for n in names if CD_IP in records_of(victim.get(n, {"answers": []})))
        unanswered = [n for n in names if records_of(victim.get(n, {"answers": []})) !=
                      ["192.0.2.1"]]
        if len(unanswered) > leaked:
            p.append("CD=0 answers missing or wrong: %s" % unanswered[:5])
    # And the other way round: the CD=1 client still gets its own answer once both are cached.
    again = ask_many(fe.port, names, source=ATTACKER, cd=True)
    wrong = [n for n in names if records_of(again.get(n, {"answers": []})) != [CD_IP]]
    print("    CD=0 answers that carried the CD=1 answer: %d of %d" % (leaked, 2 * len(names)))
    if leaked:
        p.append("%d of %d CD=0 answers were the answer fetched with CD=1" %
                 (leaked, 2 * len(names)))
    if wrong:
        p.append("the CD=1 client got the CD=0 answer for %s" % wrong[:5])
    fe.stop()
    return p


BYTES_BUDGET_MIB = 8
RSS_MARGIN_MIB = 16  # allocator slack, the 64 KiB receive buffers, per-thread arenas
BIG_NAMES = 6000
BIG_RECORDS = 480  # about 7.7 KiB per answer: 46 MiB for all the names


def test_large_answers_stay_within_the_byte_budget(env):
    p = []
    up = fu.FakeUpstream(name="big")
    env["owned"].append(up)
    fe, limited = start_frontend(
        env, "fe-big", up, "--cache-size=100000",
        limit_flags=["--cache-bytes=%d" % (BYTES_BUDGET_MIB << 20)])
    victim_names = ["v%d.victim.test" % i for i in range(20)]
    if len(ask_many(fe.port, victim_names)) != len(victim_names):
        p.append("the victim was not answered before the attack")
    names = ["big%d.big.test" % i for i in range(BIG_NAMES)]
    for name in names:
        up.set(name, "big", count=BIG_RECORDS)
    rss_start = harness.rss_kib(fe.process.pid)
    peak = rss_start
    for start in range(0, len(names), 500):
        ask_many(fe.port, names[start:start + 500], source=ATTACKER, payload=65535, tries=2)
        peak = max(peak, harness.rss_kib(fe.process.pid))
    growth_mib = (peak - rss_start) / 1024.0
    inserted = fe.metric("kdns_frontend_cache_insertions_total")
    print("    %d names with %d-record answers (about %.0f MiB in all), --cache-bytes=%s: "
          "RSS %.1f MiB at start, grew by %.1f MiB at most; %s entries inserted, %s held, "
          "%s bytes counted" %
          (BIG_NAMES, BIG_RECORDS, BIG_NAMES * (BIG_RECORDS * 16 + 40) / 1048576.0,
           "%d MiB" % BYTES_BUDGET_MIB if limited else "(unknown to this build)",
           rss_start / 1024.0, growth_mib, inserted,
           fe.metric("kdns_frontend_cache_entries"),
           fe.metric("kdns_frontend_cache_bytes") if limited else "n/a"))
    if not inserted or inserted < BIG_NAMES / 2:
        p.append("only %s of %d large answers were cached: the attack did not load the "
                 "cache (the test's premise)" % (inserted, BIG_NAMES))
    if growth_mib > BYTES_BUDGET_MIB + RSS_MARGIN_MIB and not harness.SANITIZED:
        p.append("RSS grew by %.1f MiB, over the %d MiB budget plus a %d MiB margin" %
                 (growth_mib, BYTES_BUDGET_MIB, RSS_MARGIN_MIB))
    if not fe.process.alive():
        p.append("frontend-cache died: " + fe.process.log()[-800:])
    elif len(ask_many(fe.port, victim_names)) != len(victim_names):
        p.append("the victim was not answered after the attack")
    fe.stop()
    return p


def attacker_address_missing():
    """Why the suite cannot run here: the attacker's address cannot be bound (or None)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.bind((ATTACKER, 0))
        return None
    except OSError:
        return "cannot bind %s (the attacker's address)" % ATTACKER
    finally:
        probe.close()


def main():
    return harness.main(
        "kdns-abuse-cache-",
        [test_working_set_of_1000_names_stays_cached,
         test_working_set_of_10000_names_stays_cached,
         test_new_working_set_of_1000_names_settles_in_one_pass,
         test_new_working_set_of_900_names_settles_in_one_pass,
         test_cd_answer_never_reaches_a_cd0_client,
         test_large_answers_stay_within_the_byte_budget],
        tools=(os.path.join(harness.BIN, "frontend-cache"), servers.DNSMASQ, servers.NSD,
               "/usr/bin/dig"),
        needs=attacker_address_missing)


if __name__ == "__main__":
    sys.exit(main())
