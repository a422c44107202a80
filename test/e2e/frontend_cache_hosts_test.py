#!/usr/bin/python3
"""Hosts files (--addn-hosts) follow their changes without a restart (issue 35, item 5), as
CoreDNS's `hosts` plugin does: frontend-cache ($KDNS_BIN) answers from a hosts file, the
file changes, and real dig sees the new answer from the same process (same PID):

  - the file edited in place, and replaced by a rename (as editors and `mv` do);
  - a ConfigMap volume's update: a new timestamped directory behind the `..data` symlink,
    swapped by a rename (harness.ConfigMapDir writes it as the kubelet does);
  - a bad line, and then the file removed: the old answers stay, each counted in
    kdns_frontend_hosts_reload_rejected_total; fixed, the new answers come;
  - under --hosts-reload=0 the file is re-read on SIGHUP only, as dnsmasq does.

Names not in the file go to a fake upstream (which answers 192.0.2.1), so an answer from
the file is told apart from a forwarded one. The waits are conditions (the answer seen),
bounded only to catch "never". Closes with `N passed, M failed`.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402

UPSTREAM_IP = "192.0.2.1"  # fake_upstream's answer: the name was forwarded
CHANGE_BOUND_S = 15.0      # inotify answers in milliseconds; this only catches "never"


def start(env, name, hosts_path, *args):
    fe = servers.FrontendCache(env["workdir"], name, "--no-hosts",
                               "--addn-hosts=" + hosts_path, "--server=" + env["fake"].address,
                               *args)
    env["owned"].append(fe)
    return fe


def addresses(fe, name):
    answer = fe.dig(name)
    return answer.rdatas("A") if answer.status == "NOERROR" else [answer.status]


def answers_become(fe, name, want):
    """Problems (empty when `name` comes to be answered `want` within the bound)."""
    if harness.wait_until(lambda: addresses(fe, name) == want, CHANGE_BOUND_S, 0.1):
        return []
    return ["%s: answered %s, want %s" % (name, addresses(fe, name), want)]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def test_an_edited_hosts_file_is_answered_without_a_restart(env):
    path = os.path.join(env["workdir"], "extra-hosts")
    write(path, "10.1.0.1 web.hosts.test\n")
    fe = start(env, "fe-edited", path)
    pid = fe.process.pid
    p = answers_become(fe, "web.hosts.test", ["10.1.0.1"])
    # Edited in place.
    write(path, "10.1.0.2 web.hosts.test\n10.1.0.3 api.hosts.test\n")
    p += answers_become(fe, "web.hosts.test", ["10.1.0.2"])
    p += answers_become(fe, "api.hosts.test", ["10.1.0.3"])
    # Replaced by a rename; a name dropped from the file is forwarded again.
    write(path + ".tmp", "10.1.0.4 web.hosts.test\n")
    os.rename(path + ".tmp", path)
    p += answers_become(fe, "web.hosts.test", ["10.1.0.4"])
    p += answers_become(fe, "api.hosts.test", [UPSTREAM_IP])
    if fe.process.pid != pid or not fe.process.alive():
        p.append("frontend-cache restarted: pid %d, then %d" % (pid, fe.process.pid))
    if fe.metric("kdns_frontend_hosts_reloads_total") < 2:
        p.append("kdns_frontend_hosts_reloads_total %s, want 2 or more"
                 % fe.metric("kdns_frontend_hosts_reloads_total"))
    return p


def test_a_configmap_volume_update_is_answered(env):
    volume = harness.ConfigMapDir(os.path.join(env["workdir"], "hosts-configmap"))
    volume.publish({"hosts": "10.2.0.1 cm.hosts.test\n"})
    fe = start(env, "fe-configmap", os.path.join(volume.path, "hosts"))
    pid = fe.process.pid
    p = answers_become(fe, "cm.hosts.test", ["10.2.0.1"])
    volume.publish({"hosts": "10.2.0.2 cm.hosts.test\n"})
    p += answers_become(fe, "cm.hosts.test", ["10.2.0.2"])
    volume.publish({"hosts": "10.2.0.3 cm.hosts.test\n10.2.0.4 cm2.hosts.test\n"})
    p += answers_become(fe, "cm2.hosts.test", ["10.2.0.4"])
    p += answers_become(fe, "cm.hosts.test", ["10.2.0.3"])
    if fe.process.pid != pid or not fe.process.alive():
        p.append("frontend-cache restarted")
    return p


def test_a_broken_or_removed_hosts_file_keeps_the_old_answers(env):
    path = os.path.join(env["workdir"], "broken-hosts")
    write(path, "10.3.0.1 keep.hosts.test\n")
    fe = start(env, "fe-broken", path)
    p = answers_become(fe, "keep.hosts.test", ["10.3.0.1"])

    def rejected():
        return fe.metric("kdns_frontend_hosts_reload_rejected_total")

    # Half-written: a good line and a bad one. The whole new version is rejected.
    write(path, "10.3.0.9 keep.hosts.test\n10.3.0.300 half.hosts.test\n")
    if not harness.wait_until(lambda: rejected() >= 1, CHANGE_BOUND_S, 0.1):
        p.append("a hosts file with a bad line was not counted as rejected")
    if addresses(fe, "keep.hosts.test") != ["10.3.0.1"]:
        p.append("bad line: keep.hosts.test answered %s, want the old 10.3.0.1"
                 % addresses(fe, "keep.hosts.test"))
    # Removed: the old answers stay.
    os.remove(path)
    if not harness.wait_until(lambda: rejected() >= 2, CHANGE_BOUND_S, 0.1):
        p.append("a removed hosts file was not counted as rejected")
    if addresses(fe, "keep.hosts.test") != ["10.3.0.1"]:
        p.append("removed: keep.hosts.test answered %s, want the old 10.3.0.1"
                 % addresses(fe, "keep.hosts.test"))
    # Fixed: the new version applies.
    write(path, "10.3.0.2 keep.hosts.test\n")
    p += answers_become(fe, "keep.hosts.test", ["10.3.0.2"])
    if "previous 1 entries kept" not in fe.process.log():
        p.append("the rejected versions were not logged")
    return p


def test_hosts_reload_0_rereads_on_sighup_only(env):
    path = os.path.join(env["workdir"], "sighup-hosts")
    write(path, "10.4.0.1 hup.hosts.test\n")
    fe = start(env, "fe-sighup", path, "--hosts-reload=0")
    p = answers_become(fe, "hup.hosts.test", ["10.4.0.1"])
    write(path, "10.4.0.2 hup.hosts.test\n")
    # Nothing watches the file: the old answer, until SIGHUP.
    if addresses(fe, "hup.hosts.test") != ["10.4.0.1"]:
        p.append("--hosts-reload=0: the change was applied before SIGHUP")
    fe.process.signal(signal.SIGHUP)
    p += answers_become(fe, "hup.hosts.test", ["10.4.0.2"])
    return p


def setup(workdir, owned):
    fake = fu.FakeUpstream(name="hosts", answer_ip=UPSTREAM_IP)
    owned.append(fake)
    return {"fake": fake}


def main():
    return harness.main("kdns-frontend-cache-hosts-",
                        [test_an_edited_hosts_file_is_answered_without_a_restart,
                         test_a_configmap_volume_update_is_answered,
                         test_a_broken_or_removed_hosts_file_keeps_the_old_answers,
                         test_hosts_reload_0_rereads_on_sighup_only],
                        setup=setup)


if __name__ == "__main__":
    sys.exit(main())
