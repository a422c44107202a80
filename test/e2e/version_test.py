#!/usr/bin/python3
"""Every build says which commit it is: the version comes from `git describe`.

- Each built program (kubedns, frontend-cache, nanny, sidecar) answers `--version` with
  what `git describe --tags --always --dirty --match 'v[0-9]*'` says of this tree (the tag's
  "v" dropped; 0.0.0-dev-g<hash> with no release tag in reach) and `git rev-parse HEAD`,
  names that version in its start-up line (frontend-cache also in its version.bind CHAOS
  answer, "kdns-<version>"), and exports it in
  kdns_build_info{program,version,revision} (every metrics port: monitoring_test.py).
- mk/version.sh, which the Makefile stamps into the build, in throw-away repositories: an
  untagged commit, a tagged one, a commit after the tag, uncommitted changes, a shallow
  clone without tags, and a tree without .git (KDNS_VERSION, a VERSION file, or a failure:
  never a made-up version); the generated header is rewritten only when the version changes.
- The Makefile in a tree without .git and without a version refuses to build.
- images/build.sh (with a stand-in container engine, as no engine runs here) tags every
  image with that version and passes it and the commit as build args (the context has no
  .git), its context holds every file images/Dockerfile copies, and it refuses a tree with
  uncommitted changes unless told (then the tag ends in -dirty).
Closes with `N passed, M failed`.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pod  # noqa: E402

ROOT = harness.ROOT
VERSION_SH = os.path.join(ROOT, "mk", "version.sh")
PROGRAMS = ("kubedns", "frontend-cache", "nanny", "sidecar")


def git(cwd, *args, check=True):
    return subprocess.run(["git", "-C", cwd] + list(args), capture_output=True, text=True,
                          check=check).stdout.strip()


def expected_version(described):
    """The version a build of `git describe`'s output `described` must report: the release
    tag without its "v", or 0.0.0-dev-g<hash> when no release tag is in reach."""
    if re.match(r"v[0-9]", described):
        return described[1:]
    return "0.0.0-dev-g" + described


def version_sh(cwd, *args, env=None):
    """(exit code, stdout, stderr) of mk/version.sh copied into `cwd` (as in the tree)."""
    script = os.path.join(cwd, "mk", "version.sh")
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("KDNS_")}
    run_env.update(env or {})
    r = subprocess.run([script] + list(args), capture_output=True, text=True, env=run_env)
    return r.returncode, r.stdout.strip(), r.stderr.strip()


def new_tree(workdir, name, with_git=True):
    """A throw-away source tree holding mk/version.sh, with one commit when `with_git`."""
    tree = os.path.join(workdir, name)
    os.makedirs(os.path.join(tree, "mk"))
    shutil.copy(VERSION_SH, os.path.join(tree, "mk", "version.sh"))
    with open(os.path.join(tree, "README"), "w") as f:
        f.write("one\n")
    if with_git:
        git(tree, "init", "-q")
        git(tree, "add", ".")
        commit(tree, "first")
    return tree


def commit(tree, message):
    git(tree, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q",
        "--allow-empty", "-am", message)
    return git(tree, "rev-parse", "HEAD")


def test_every_program_reports_git_describe(env):
    if subprocess.run(["git", "-C", ROOT, "rev-parse"], capture_output=True).returncode != 0:
        raise harness.Skip("not a git checkout: nothing to compare the version with")
    described = git(ROOT, "describe", "--tags", "--always", "--dirty", "--match", "v[0-9]*")
    want = (expected_version(described), git(ROOT, "rev-parse", "HEAD"))
    p = []
    for program in PROGRAMS:
        got = harness.program_version(program)
        if got != want:
            p.append("%s --version says %s (revision %s); git describe says %s, HEAD is %s "
                     "(built before the last commit or edit? make)" % ((program,) + got + want))
    return p


def test_start_up_lines_and_version_bind_name_the_version(env):
    version, _ = harness.program_version("kubedns")
    the_pod = pod.Pod(env["workdir"], ["--objects-file=" + os.path.join(
        ROOT, "kubedns", "demo-cluster.json")])
    env["owned"].append(the_pod)
    logs = {"kubedns": the_pod.kubedns.log(), "nanny": the_pod.nanny.log(),
            "frontend-cache": the_pod.nanny.log(), "sidecar": the_pod.sidecar.log()}
    p = []
    for program, log in logs.items():
        if not re.search(r"\] %s %s[ :]" % (re.escape(program), re.escape(version)), log):
            p.append("%s's start-up line does not name version %s:\n%s"
                     % (program, version, log[-1500:]))
    answer = harness.dig(the_pod.nanny.port, "version.bind", "TXT", "CH")
    if [r.rdata for r in answer.answer] != ['"kdns-%s"' % version]:
        p.append("version.bind CH TXT from the cache: %s; want \"kdns-%s\"" % (answer, version))
    return p


def test_untagged_tagged_after_tag_and_dirty(env):
    tree = new_tree(env["workdir"], "describe")
    p = []

    def expect(what, want_version, want_revision):
        code, out, err = version_sh(tree)
        _, revision, _ = version_sh(tree, "--revision")
        if (code, out, revision) != (0, want_version, want_revision):
            p.append("%s: mk/version.sh says %r (revision %r, exit %d, %s); want %r (%r)"
                     % (what, out, revision, code, err, want_version, want_revision))

    first = git(tree, "rev-parse", "HEAD")
    expect("no tag", "0.0.0-dev-g" + git(tree, "rev-parse", "--short", "HEAD"), first)
    git(tree, "tag", "v0.2.0")
    git(tree, "tag", "not-a-release")  # only v<digit> tags are releases
    expect("tagged v0.2.0", "0.2.0", first)
    second = commit(tree, "second")
    short = git(tree, "rev-parse", "--short", "HEAD")
    expect("one commit after v0.2.0", "0.2.0-1-g" + short, second)
    with open(os.path.join(tree, "README"), "a") as f:
        f.write("edited\n")
    expect("an uncommitted edit", "0.2.0-1-g%s-dirty" % short, second)
    git(tree, "checkout", "-q", "README")
    git(tree, "tag", "-a", "-m", "release", "v0.3.0-rc.1")
    expect("annotated tag v0.3.0-rc.1", "0.3.0-rc.1", second)

    # A clone without the tags (CI's shallow clone): no release in reach.
    clone = os.path.join(env["workdir"], "shallow")
    subprocess.run(["git", "clone", "-q", "--depth=1", "--no-tags", "file://" + tree, clone],
                   check=True, capture_output=True)
    code, out, err = version_sh(clone)
    if (code, out) != (0, "0.0.0-dev-g" + short):
        p.append("shallow clone without tags: %r (exit %d, %s); want 0.0.0-dev-g%s"
                 % (out, code, err, short))
    return p


def test_a_checkout_of_another_owner_still_has_its_version(env):
    # A CI container's checkout is often owned by another uid than the build's; git then
    # refuses the repository ("dubious ownership") unless mk/version.sh says it is safe.
    if os.geteuid() != 0:
        raise harness.Skip("needs root to give the checkout another owner")
    tree = new_tree(env["workdir"], "owned")
    short = git(tree, "rev-parse", "--short", "HEAD")
    subprocess.run(["chown", "-R", "4242:4242", tree], check=True)
    code, out, err = version_sh(tree)
    if (code, out) != (0, "0.0.0-dev-g" + short):
        return ["a checkout owned by uid 4242: %r (exit %d, %s)" % (out, code, err)]
    return []


def test_a_tree_without_git_needs_a_version_given(env):
    tree = new_tree(env["workdir"], "export", with_git=False)
    p = []
    code, out, err = version_sh(tree)
    if code == 0 or "cannot tell this build's version" not in err:
        p.append("no .git, nothing given: exit %d, %r, %r; want a failure saying why"
                 % (code, out, err))
    code, out, _ = version_sh(tree, env={"KDNS_VERSION": "1.2.3", "KDNS_REVISION": "abc123"})
    _, revision, _ = version_sh(tree, "--revision",
                                env={"KDNS_VERSION": "1.2.3", "KDNS_REVISION": "abc123"})
    if (code, out, revision) != (0, "1.2.3", "abc123"):
        p.append("KDNS_VERSION=1.2.3: %r %r (exit %d)" % (out, revision, code))
    with open(os.path.join(tree, "VERSION"), "w") as f:
        f.write("1.2.4 def456\n")
    code, out, _ = version_sh(tree)
    if (code, out) != (0, "1.2.4"):
        p.append("VERSION file 1.2.4: %r (exit %d)" % (out, code))
    code, out, err = version_sh(tree, env={"KDNS_VERSION": '1.2.3"; evil'})
    if code == 0:
        p.append("a version that is no image tag was taken: %r" % out)
    return p


def test_the_header_changes_only_with_the_version(env):
    tree = new_tree(env["workdir"], "header")
    header = os.path.join(tree, "gen", "kdns_version.h")
    p = []
    version_sh(tree, "--header", header)
    before = os.stat(header)
    version_sh(tree, "--header", header)
    if os.stat(header).st_mtime_ns != before.st_mtime_ns:
        p.append("the header was rewritten with nothing changed: every binary would relink")
    commit(tree, "another")
    version_sh(tree, "--header", header)
    with open(header) as f:
        text = f.read()
    if '#define KDNS_REVISION_STRING "%s"' % git(tree, "rev-parse", "HEAD") not in text:
        p.append("after a commit the header still says:\n" + text)
    return p


def test_the_makefile_refuses_a_build_of_unknown_version(env):
    # The Makefile and mk/ alone, as a source tree without .git would have them.
    tree = os.path.join(env["workdir"], "make")
    os.makedirs(os.path.join(tree, "mk"))
    shutil.copy(os.path.join(ROOT, "Makefile"), tree)
    shutil.copy(VERSION_SH, os.path.join(tree, "mk"))
    header = "build/obj/gen/kdns_version.h"
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith("KDNS_")}
    r = subprocess.run(["make", "-C", tree, header], capture_output=True, text=True,
                       env=clean_env)
    p = []
    if r.returncode == 0 or "cannot tell this build's version" not in r.stderr:
        p.append("make without a version: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    r = subprocess.run(["make", "-C", tree, header, "KDNS_VERSION=4.5.6",
                        "KDNS_REVISION=0123abc"], capture_output=True, text=True, env=clean_env)
    path = os.path.join(tree, header)
    text = open(path).read() if os.path.exists(path) else ""
    if r.returncode != 0 or '"4.5.6"' not in text or '"0123abc"' not in text:
        p.append("make KDNS_VERSION=4.5.6: exit %d, header %r\n%s" % (r.returncode, text,
                                                                     r.stderr))
    return p


FAKE_ENGINE = """#!/bin/sh
# Stands in for docker: 'info' works; 'build' records its arguments and its context's files.
case "$1" in
  info) exit 0 ;;
  build) for a; do last=$a; done
         echo "$*" >> "$FAKE_ENGINE_LOG"
         (cd "$last" && find . -type f | sort) > "$FAKE_ENGINE_LOG.context" ;;
  *) exit 2 ;;
esac
"""


def dockerfile_copies():
    """The sources images/Dockerfile COPYs from the build context (not --from a stage)."""
    sources = []
    with open(os.path.join(ROOT, "images", "Dockerfile")) as f:
        for line in f:
            words = line.split()
            if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
                sources += words[1:-1]
    return sources


def test_images_are_tagged_with_the_version(env):
    tree = os.path.join(env["workdir"], "images-tree")
    for d in ("images", "mk", "tools"):
        shutil.copytree(os.path.join(ROOT, d), os.path.join(tree, d))
    shutil.copy(os.path.join(ROOT, "Makefile"), tree)
    for d in ("common", "frontend-cache", "kubedns", "nanny", "sidecar"):
        os.makedirs(os.path.join(tree, d))
        with open(os.path.join(tree, d, "main.cc"), "w") as f:
            f.write("\n")
    engine = os.path.join(env["workdir"], "engine")
    with open(engine, "w") as f:
        f.write(FAKE_ENGINE)
    os.chmod(engine, 0o755)
    git(tree, "init", "-q")
    git(tree, "add", ".")
    revision = commit(tree, "release")
    git(tree, "tag", "v7.8.9")
    log = os.path.join(env["workdir"], "engine.log")

    def build(extra_env=None):
        if os.path.exists(log):
            os.remove(log)
        run_env = {k: v for k, v in os.environ.items() if not k.startswith("KDNS_")}
        run_env.update({"KDNS_CONTAINER_ENGINE": engine, "FAKE_ENGINE_LOG": log,
                        "KDNS_IMAGES": "kubedns cache"}, **(extra_env or {}))
        r = subprocess.run([os.path.join(tree, "images", "build.sh")], capture_output=True,
                           text=True, env=run_env)
        calls = open(log).read().splitlines() if os.path.exists(log) else []
        return r, calls

    p = []
    r, calls = build()
    for image in ("kubedns", "cache"):
        want = ("--target %s --build-arg KDNS_VERSION=7.8.9 --build-arg KDNS_REVISION=%s "
                "-t kdns/%s:7.8.9 " % (image, revision, image))
        if not any(want in call for call in calls):
            p.append("tagged v7.8.9: no build call with %r: exit %d %s %s"
                     % (want, r.returncode, calls, r.stderr))
    context = open(log + ".context").read().split() if os.path.exists(log + ".context") else []
    for source in dockerfile_copies():
        if not any(f == "./" + source or f.startswith("./" + source.rstrip("/") + "/")
                   for f in context):
            p.append("images/Dockerfile copies %s, which build.sh leaves out of the context"
                     % source)

    with open(os.path.join(tree, "Makefile"), "a") as f:
        f.write("# edited\n")
    r, calls = build()
    if r.returncode == 0 or calls or "uncommitted" not in r.stderr:
        p.append("uncommitted changes: exit %d, built %s; want a refusal\n%s"
                 % (r.returncode, calls, r.stderr))
    r, calls = build({"KDNS_ALLOW_DIRTY": "1"})
    if (r.returncode != 0 or not calls or not all("-t kdns/" in c and ":7.8.9-dirty " in c
                                                   for c in calls)
            or "WARNING" not in r.stderr):
        p.append("KDNS_ALLOW_DIRTY=1: exit %d, %s, %r; want images tagged 7.8.9-dirty, warned"
                 % (r.returncode, calls, r.stderr))
    return p


TESTS = [test_every_program_reports_git_describe,
         test_start_up_lines_and_version_bind_name_the_version,
         test_untagged_tagged_after_tag_and_dirty,
         test_a_checkout_of_another_owner_still_has_its_version,
         test_a_tree_without_git_needs_a_version_given,
         test_the_header_changes_only_with_the_version,
         test_the_makefile_refuses_a_build_of_unknown_version,
         test_images_are_tagged_with_the_version]


if __name__ == "__main__":
    sys.exit(harness.main("kdns-version-", TESTS, reset_each=True))
