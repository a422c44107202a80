#!/usr/bin/python3
"""Query logging and the debug data switched at run time, without a rollout (issue 35,
item 5): the kube-dns ConfigMap's keys kdns.logQueries and kdns.debugData
(common/config/runtime_switches.h), written as the kubelet writes a ConfigMap volume
(harness.ConfigMapDir), turn them on and off in running processes, the same PIDs throughout:

  - kubedns (--config-dir): its query log, and its debug address (/cache, the record dump;
    /debug/top-clients) bound and closed;
  - frontend-cache under the nanny (-configDir, in-place mode: the switches reach
    frontend-cache in its servers file with a SIGHUP): the same two;
  - the flags stay in charge of an absent key (--debug-address serves the debug data at
    start until a key says otherwise), and an invalid value rejects the version, the
    running switches kept.

Both processes start with --debug-address on a free loopback port and the ConfigMap saying
kdns.debugData "false": nothing listens there until the switch says "true". A query's line
is waited for; a query asked while logging is off is checked absent once a later query's
line (logging on again) has been written. Closes with `N passed, M failed`.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nanny_env  # noqa: E402
import servers  # noqa: E402

SWITCH_BOUND_S = 20.0  # inotify applies a switch in milliseconds; this only catches "never"
CLUSTER_NAME = "kubernetes.default.svc.cluster.local"


def query_line(log, name):
    return "query client=" in log and (" name=%s. " % name) in log


def logged(log_of, name):
    return harness.wait_until(lambda: query_line(log_of(), name), SWITCH_BOUND_S, 0.1)


def served(port):
    """200 when the debug address serves /debug/top-clients; 0 when nothing listens."""
    return harness.http_status(port, "/debug/top-clients")


def switch_problems(what, volume, dig, log_of, debug_port, pid_of, dump_path):
    """Flips both switches on, off and on again through `volume`, checking each step."""
    p = []
    pid = pid_of()
    # At start the ConfigMap says "false" for the debug data, despite --debug-address.
    if served(debug_port) != 0:
        p.append("%s: debug data served while kdns.debugData is false" % what)
    dig("before.default.svc.cluster.local")
    # On.
    volume.publish({"kdns.logQueries": "true", "kdns.debugData": "true"})
    if not harness.wait_until(lambda: served(debug_port) == 200, SWITCH_BOUND_S, 0.1):
        p.append("%s: debug data not served after kdns.debugData: true" % what)
    elif harness.http_status(debug_port, dump_path) != 200:
        p.append("%s: %s not served with the debug data" % (what, dump_path))
    dig(CLUSTER_NAME)
    if not logged(log_of, CLUSTER_NAME):
        p.append("%s: no query line after kdns.logQueries: true" % what)
    if query_line(log_of(), "before.default.svc.cluster.local"):
        p.append("%s: a query was logged before logging was switched on" % what)
    # Off: the debug port closes; a query asked now is not logged.
    volume.publish({"kdns.logQueries": "false", "kdns.debugData": "false"})
    if not harness.wait_until(lambda: served(debug_port) == 0, SWITCH_BOUND_S, 0.1):
        p.append("%s: debug data still served after kdns.debugData: false" % what)
    if not harness.wait_until(lambda: "query log: false" in log_of(), SWITCH_BOUND_S, 0.1):
        p.append("%s: the query log was not switched off" % what)
    dig("quiet.default.svc.cluster.local")
    # On again (extra): a later query's line comes, the quiet one's never did.
    volume.publish({"kdns.logQueries": "extra"})
    dig_until_logged = harness.wait_until(
        lambda: dig("loud.default.svc.cluster.local") is None and query_line(
            log_of(), "loud.default.svc.cluster.local"), SWITCH_BOUND_S, 0.2)
    if not dig_until_logged:
        p.append("%s: no query line after kdns.logQueries: extra" % what)
    elif " transport=" not in log_of():
        p.append("%s: kdns.logQueries: extra wrote no extra fields" % what)
    if query_line(log_of(), "quiet.default.svc.cluster.local"):
        p.append("%s: a query was logged while kdns.logQueries was false" % what)
    # The key gone: --debug-address is in charge again.
    if not harness.wait_until(lambda: served(debug_port) == 200, SWITCH_BOUND_S, 0.1):
        p.append("%s: kdns.debugData removed, yet --debug-address does not serve" % what)
    # An invalid value: the version is rejected, the running switches kept.
    volume.publish({"kdns.logQueries": "extra", "kdns.debugData": "sometimes"})
    if not harness.wait_until(lambda: "\"sometimes\" is not true or false" in log_of(),
                              SWITCH_BOUND_S, 0.1):
        p.append("%s: the invalid kdns.debugData was not reported" % what)
    if served(debug_port) != 200:
        p.append("%s: an invalid kdns.debugData changed the debug data" % what)
    if pid_of() != pid:
        p.append("%s: the process changed: pid %s, then %s" % (what, pid, pid_of()))
    return p


def write_objects(workdir):
    path = os.path.join(workdir, "objects.json")
    with open(path, "w") as f:
        json.dump(nanny_env.objects("10.0.0.53"), f)
    return path


def test_kubedns_switches_query_log_and_record_dump(env):
    volume = harness.ConfigMapDir(os.path.join(env["workdir"], "kubedns-config"))
    volume.publish({"kdns.debugData": "false"})
    kubedns = servers.Kubedns(env["workdir"], "kubedns-switches",
                              "--objects-file=" + write_objects(env["workdir"]),
                              "--config-dir=" + volume.path, debug=True)
    env["owned"].append(kubedns)

    def dig(name):
        harness.dig(kubedns.port, name)

    return switch_problems("kubedns", volume, dig, kubedns.log, kubedns.debug_port,
                           lambda: kubedns.process.pid, "/cache")


def test_frontend_cache_switches_through_the_nanny(env):
    kubedns = servers.Kubedns(env["workdir"], "kubedns-behind-cache",
                              "--objects-file=" + write_objects(env["workdir"]))
    env["owned"].append(kubedns)
    volume = harness.ConfigMapDir(os.path.join(env["workdir"], "nanny-config"))
    volume.publish({"kdns.debugData": "false"})
    nanny = nanny_env.Nanny(env["workdir"], "nanny-switches", volume.path, kubedns=kubedns,
                            debug=True)
    env["owned"].append(nanny)

    def dig(name):
        harness.dig(nanny.port, name)

    return switch_problems("frontend-cache", volume, dig, nanny.log, nanny.debug_port,
                           nanny.child, "/debug/top-clients")


def main():
    return harness.main("kdns-runtime-switches-",
                        [test_kubedns_switches_query_log_and_record_dump,
                         test_frontend_cache_switches_through_the_nanny],
                        reset_each=True)


if __name__ == "__main__":
    sys.exit(main())
