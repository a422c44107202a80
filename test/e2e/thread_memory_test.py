#!/usr/bin/python3
"""Memory per thread (issue 32): an idle DNS thread costs at most 0.15 MiB of RSS.

frontend-cache and kubedns (on the demo objects file) are each started with 1 and with 64
DNS threads (--threads, --dns-threads; a receiver thread each, as by default) on whatever
cores this machine has, and left idle; (RSS at 64 - RSS at 1) / 63 must stay within the
bound, which is what docs/operators.md's memory budget counts per thread. An idle
process's RSS is deterministic, so this is a test, not a benchmark; the figures at 1, 2,
16 and 64 threads, split by mapping, are test/bench/thread_memory_bench.sh's.
Not checked in sanitizer builds, whose shadow memory grows with every thread. Closes with
`N passed, M failed`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import thread_memory  # noqa: E402

BOUND_MIB = 0.15
LOW, HIGH = 1, 64


def check_program(env, program):
    if harness.SANITIZED:
        raise harness.Skip("a sanitizer build's memory grows with every thread")
    rss = {n: thread_memory.measure(env["workdir"], program, n)[0] for n in (LOW, HIGH)}
    per_thread = thread_memory.per_thread_mib(rss, LOW, HIGH)
    env["figures"].append(("%s: RSS at %d and %d threads %.1f and %.1f MiB; MiB per thread"
                           % (program, LOW, HIGH, rss[LOW] / 1024.0, rss[HIGH] / 1024.0),
                           "%.3f" % per_thread))
    if per_thread > BOUND_MIB:
        return ["%s: %.3f MiB per idle DNS thread (RSS %d KiB at %d threads, %d KiB at %d), "
                "over %.2f MiB" % (program, per_thread, rss[LOW], LOW, rss[HIGH], HIGH,
                                   BOUND_MIB)]
    return []


def test_frontend_cache_idle_thread_costs_at_most_the_bound(env):
    return check_program(env, "frontend-cache")


def test_kubedns_idle_thread_costs_at_most_the_bound(env):
    return check_program(env, "kubedns")


TESTS = [test_frontend_cache_idle_thread_costs_at_most_the_bound,
         test_kubedns_idle_thread_costs_at_most_the_bound]


def main():
    tools = [os.path.join(harness.BIN, program) for program in thread_memory.PROGRAMS]
    return harness.main("kdns-thread-memory-", TESTS, tools=tools,
                        setup=lambda workdir, owned: {"figures": []},
                        report=lambda env, failed: harness.print_figures(
                            "idle memory per DNS thread", env.get("figures")))


if __name__ == "__main__":
    sys.exit(main())
