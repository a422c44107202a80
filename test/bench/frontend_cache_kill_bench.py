#!/usr/bin/python3
"""kill -9 of frontend-cache under load, on sockets a parent keeps (as the nanny does):
how many queries die with it. Moved here from the e2e suite because the count depends on
the machine's load; the suite keeps a deterministic kill test (frontend_cache_process_test).

SERIES times: frontend-cache (forwarding to NSD) on kept sockets, killed -9 KILLS times
under RATE q/s from dnsperf, each time started again at once, killed in its stride (once
it answers, 0.2-0.3 s later). Prints per series the queries sent, lost, and the response
codes. What to expect: a receiver thread asleep in recvmmsg, woken by the SIGKILL, first
takes the datagrams that arrived meanwhile and dies with them (measured: 6-12 queries per
20 kills on a quiet machine, 35-179 on a loaded one); a loop in epoll_wait, or a receiver
in poll, takes nothing and loses only a batch it was answering at that instant (0-2).
Figures only: exits non-zero only when something is broken (a server does not start,
dnsperf prints no figures, answers other than NOERROR).

Usage: test/bench/frontend_cache_kill_bench.py   (KDNS_BIN: the binaries, default build/bin)
Environment: KILLS (default 20), RATE (default 8000), SERIES (default 2).
"""
import os
import random
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import frontend_cache  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402
from kubedns_api_bench_lib import bench_workdir  # noqa: E402


def kill_series(workdir, nsd, kills, rate):
    """(queries sent, lost, response codes) of one series of `kills` kills -9 under
    `rate` q/s; raises when something is broken."""
    sockets = frontend_cache.KeptSockets(workdir, nsd.address)
    names = os.path.join(workdir, "kill-names.txt")
    with open(names, "w") as f:
        f.write("www.example.test A\nmail.example.test A\nexample.test MX\n")
    perf = None
    try:
        if not harness.wait_until(sockets.answers, 20):
            raise RuntimeError("frontend-cache did not answer: " + sockets.log_tail())
        seconds = int(kills * 0.4 + 4)
        perf = subprocess.Popen(["/usr/bin/dnsperf", "-s", "127.0.0.1", "-p",
                                 str(sockets.port), "-d", names, "-l", str(seconds),
                                 "-Q", str(rate), "-q", "2000", "-c", "8", "-t", "5"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1)  # the load runs before the first kill
        for _ in range(kills):
            # Killed in its stride, not while it starts: answering, its cache warm.
            if not harness.wait_until(sockets.answers, 20):
                raise RuntimeError("a restarted frontend-cache did not answer")
            time.sleep(0.2 + random.random() * 0.1)
            sockets.kill()
            sockets.spawn()
        out, _ = perf.communicate(timeout=seconds + 30)
    finally:
        if perf is not None and perf.poll() is None:
            perf.kill()
        sockets.stop()
    result = harness.parse_dnsperf(out)
    if result["sent"] is None or result["lost"] is None or not result["codes"]:
        raise RuntimeError("dnsperf printed no figures: " + out[-800:])
    if result["sent"] < rate * (seconds - 1):
        print("  note: dnsperf sent only %d queries in %d s" % (result["sent"], seconds))
    return int(result["sent"]), int(result["lost"]), result["codes"]


def main():
    kills = int(os.environ.get("KILLS", "20"))
    rate = int(os.environ.get("RATE", "8000"))
    series = int(os.environ.get("SERIES", "2"))
    for tool in ("/usr/bin/dnsperf", servers.NSD, os.path.join(harness.BIN, "frontend-cache")):
        if not os.access(tool, os.X_OK):
            print("frontend_cache_kill_bench: skipped: %s is missing" % tool)
            return 0
    with bench_workdir("kdns-kill-bench-") as workdir:
        nsd = None
        try:
            nsd = servers.Nsd(workdir)
            print("kill -9 of frontend-cache on kept sockets, %d kills under %d q/s" %
                  (kills, rate))
            for i in range(series):
                sent, lost, codes = kill_series(workdir, nsd, kills, rate)
                print("  series %d: %d queries, %d lost (%.3f%%), response codes %s"
                      % (i + 1, sent, lost, 100.0 * lost / max(sent, 1), codes))
                if set(codes) != {"NOERROR"}:
                    print("  broken: answers other than NOERROR")
                    return 1
        finally:
            if nsd is not None:
                nsd.stop()
        return 0


if __name__ == "__main__":
    sys.exit(main())
