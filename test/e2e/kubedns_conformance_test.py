#!/usr/bin/python3
"""Runs every case of test/conformance/cases.json against the real kubedns binary.

kubedns serves test/conformance/objects.json from the objects-file source on a free
loopback port; each case is asked with real dig (BIND) and real kdig (Knot), over UDP and,
where the case says so, over TCP, and the answer is checked as test/conformance/README.md
describes (exact answer sets, types, SOA fields, flags, the question echoed, no
duplicates). Every case is asked twice: of kubedns as it is by default, and of kubedns with
--autopath, whose upstream (unbound) has no name at all, so that each walk asks it and
ends in NXDOMAIN: the conformance answers must not change. Prints one line per failure and
closes with `N passed, M failed`.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402
from harness import fold  # noqa: E402

ROOT = harness.ROOT
BIN = harness.BIN


def sections_of(answer):
    """Status, flags, EDNS and sections (folded record lines) of a harness.Answer."""
    return {"status": answer.status, "flags": answer.flags, "edns": answer.edns,
            "sections": {name: [r.text for r in records]
                         for name, records in answer.sections.items()}}


def ask(client, port, case):
    """(what `check` reads, the raw output) of `case` asked with dig or kdig."""
    options = ["+ignore", "+tcp" if case.get("tcp") else "+notcp"]
    if "edns" in case:
        options += ["+edns=%d" % case["edns"], "+bufsize=%d" % case.get("payload", 4096)]
    else:
        options.append("+noedns")
    answer = harness.dig(port, case["q"], case["t"], None, *options, timeout=5, client=client)
    got = sections_of(answer)
    got["question_lowered"] = client == "kdig" and case["q"] != case["q"].lower()
    return got, answer.raw


def rr_type(record):
    return record.split(" ")[3]


def check(case, got, zone_ttl):
    """A list of what is wrong with `got` for `case`."""
    problems = []
    answer = got["sections"].get("ANSWER", [])
    authority = got["sections"].get("AUTHORITY", [])
    additional = got["sections"].get("ADDITIONAL", [])
    if got["status"] != case["rcode"]:
        problems.append("rcode %s, want %s" % (got["status"], case["rcode"]))
    if "aa" not in got["flags"]:
        problems.append("AA not set")
    if "ra" not in got["flags"]:
        problems.append("RA not set")
    if ("tc" in got["flags"]) != bool(case.get("tc")):
        problems.append("TC is %s" % ("tc" in got["flags"]))
    if got["edns"] != ("edns" in case):
        problems.append("OPT present: %s" % got["edns"])
    if len(set(answer)) != len(answer):
        problems.append("duplicate records in the answer")
    if "answer" in case:
        want = [fold(r) for r in case["answer"]]
        if got["question_lowered"]:
            # kdig lower-cases the names it sends, so only dig can show the case echoed.
            want = [w.split(" ", 1)[0].lower() + " " + w.split(" ", 1)[1] for w in want]
        if case.get("ordered"):
            if answer != want:
                problems.append("answer %s, want %s" % (answer, want))
        elif sorted(answer) != sorted(want):
            problems.append("answer %s, want %s" % (sorted(answer), sorted(want)))
    else:
        for record in answer:
            if rr_type(record) != "SOA" and record.split(" ")[1] != str(zone_ttl):
                problems.append("TTL of %s is not %d" % (record, zone_ttl))
    if "answer_count" in case and len(answer) != case["answer_count"]:
        problems.append("%d answers, want %d" % (len(answer), case["answer_count"]))
    if "answer_types" in case and {rr_type(r) for r in answer} != set(case["answer_types"]):
        problems.append("answer types %s" % {rr_type(r) for r in answer})
    if "authority_types" in case and {rr_type(r) for r in authority} != set(
            case["authority_types"]):
        problems.append("authority types %s" % {rr_type(r) for r in authority})
    soa = [r for r in answer + authority if rr_type(r) == "SOA"]
    for field, index in (("soa_mname", 4), ("soa_rname", 5), ("soa_minimum", 10)):
        if field in case:
            if not soa or soa[0].split(" ")[index] != str(case[field]):
                problems.append("%s of %s, want %s" % (field, soa, case[field]))
    for record in case.get("additional_contains", []):
        if fold(record) not in additional:
            problems.append("additional lacks %s" % record)
    for record in case.get("additional_lacks", []):
        if fold(record) in additional:
            problems.append("additional holds %s" % record)
    return problems


# An upstream where no name exists (but the probe unbound waits for).
NO_NAMES = """  local-zone: "." static
  local-data: "probe.test. 60 IN A 192.0.2.1"
"""


def run_cases(spec, checks, label, *flags):
    """Asks every case of kubedns started with `flags`; False when it did not start."""
    try:
        server = servers.Kubedns(
            os.path.join(BIN, ".."), "kubedns-conformance",
            "--objects-file=" + os.path.join(ROOT, "test", "conformance", spec["objects_file"]),
            "--domain=" + spec["zone"], *flags)
    except RuntimeError as e:
        print(e)
        return False
    try:
        for case in spec["cases"]:
            for client in ("dig", "kdig"):
                got, raw = ask(client, server.port, case)
                problems = check(case, got, spec["ttl"])
                if not checks.check("%s%s (%s)" % (label, case["id"], client), not problems,
                                    "; ".join(problems)):
                    print("    " + raw.replace("\n", "\n    "))
        if "--autopath" in flags:
            # The walks did run (and asked the upstream), so the answers above went through them.
            attempts = server.metric("kdns_kubedns_autopath_attempts_total")
            asked = server.metric("kdns_kubedns_forward_queries_total")
            checks.check(label + "walks ran", attempts > 0 and asked > 0,
                         "%s attempts, %s upstream queries" % (attempts, asked))
    finally:
        server.stop()
    return True


def conform(env, checks):
    """Every case against kubedns, then again with autopath on (its walks ask `world`)."""
    with open(os.path.join(ROOT, "test", "conformance", "cases.json")) as f:
        spec = json.load(f)
    if not run_cases(spec, checks, ""):
        checks.failed += 1
        return
    world = servers.Unbound(env["workdir"], local=NO_NAMES, probe="probe.test")
    env["owned"].append(world)
    if not run_cases(spec, checks, "autopath: ", "--autopath", "--autopath-search=node.test",
                     "--nameservers=127.0.0.1:%d" % world.port):
        checks.check("autopath: kubedns starts", False, "see above")


def main():
    return harness.main("kdns-conformance-", conform)


if __name__ == "__main__":
    sys.exit(main())
