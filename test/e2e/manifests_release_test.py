#!/usr/bin/python3
"""The manifests ship a release, never a tag that two different builds have carried.

Every kdns image the manifests name (manifests/**.yaml: the containers and the
kustomization's images: newTag) and every `kdns/<image>:<tag>` the docs show carries one
version V, and:
- V is a release version (1.2.3, or a pre-release 1.2.3-rc.1), never `latest`, a build's
  version (0.1.0-3-gabc1234, -dirty, 0.0.0-dev-g...) or another moving tag;
- CHANGELOG.md has a released section `## [V] - YYYY-MM-DD`;
- where the release tags are in this clone (a shallow CI clone has none: those checks
  are skipped, saying so): if git tag vV exists, it is in HEAD's history and its own
  manifests carry V; if it does not exist yet (the release commit, before tagging), V is
  newer than every release tag in HEAD's history; either way no release tag in HEAD's
  history is newer than V (the manifests were not left behind).
images/build.sh tags images only with the version of the commit they are built from
(version_test.py), so a released V names exactly the build of the commit tagged vV.
The checks are also run on broken inputs, so each is shown to fail. Closes with
`N passed, M failed`.
"""
import glob
import os
import re
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = harness.ROOT
RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-(alpha|beta|rc)\.?(\d+))?$")
IMAGE_REF = re.compile(r"\bkdns/([a-z][a-z-]*):([^\s`'\"),]+)")
DOCS = ["README.md", "docs/*.md", "*/README.md"]
# What the docs write for a version to fill in: <version>, X.Y.Z, OLD.
PLACEHOLDER = re.compile(r"^(<[a-z-]+>|[A-Z][A-Z.]*)$")


def release_key(version):
    """A sortable key of a release version (a pre-release sorts before its release), or
    None when `version` is not one."""
    m = RELEASE.match(version)
    if not m:
        return None
    major, minor, patch, stage, number = m.groups()
    pre = (0, ("alpha", "beta", "rc").index(stage), int(number)) if stage else (1, 0, 0)
    return (int(major), int(minor), int(patch)) + pre


def kustomization_tags(text):
    """{image name: newTag} of a kustomization's kdns images."""
    doc = yaml.safe_load(text) or {}
    return {e["name"]: str(e.get("newTag")) for e in doc.get("images", [])
            if e["name"].startswith("kdns/")}


def shipped_tags(root):
    """[(where, image, tag)] for every kdns image the manifests and the docs name."""
    found = []
    for path in sorted(glob.glob(os.path.join(root, "manifests", "**", "*.yaml"),
                                 recursive=True)):
        rel = os.path.relpath(path, root)
        with open(path) as f:
            text = f.read()
        if os.path.basename(path) == "kustomization.yaml":
            found += [(rel + " images", name, tag)
                      for name, tag in kustomization_tags(text).items()]
        for line in text.splitlines():
            m = re.match(r"\s*(?:-\s*)?image:\s*(kdns/[a-z-]+)(?::(\S+))?", line)
            if m:
                found.append((rel, m.group(1), m.group(2) or "(none)"))
    for pattern in DOCS:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            rel = os.path.relpath(path, root)
            with open(path) as f:
                for name, tag in IMAGE_REF.findall(f.read()):
                    if not PLACEHOLDER.match(tag):
                        found.append((rel, "kdns/" + name, tag))
    return found


def changelog_releases(text):
    """The versions CHANGELOG.md has a released section for (`## [V] - YYYY-MM-DD`)."""
    return set(re.findall(r"^## \[([^\]]+)\] - \d{4}-\d{2}-\d{2}\s*$", text, re.M))


def version_problems(found, releases):
    """What is wrong with the tags `found` (shipped_tags) given CHANGELOG's `releases`;
    returns (problems, the one version or None)."""
    p = []
    versions = sorted({tag for _, _, tag in found})
    if not found:
        return ["no kdns image found in the manifests"], None
    if len(versions) != 1:
        p += ["%s: %s:%s" % (where, image, tag) for where, image, tag in found
              if tag != versions[0]]
        p.insert(0, "the manifests and docs name %d versions %s, not one" % (len(versions),
                                                                               versions))
        return p, None
    version = versions[0]
    if release_key(version) is None:
        p.append("the manifests ship %r: not a release version (1.2.3 or 1.2.3-rc.1); a "
                 "moving or build tag names different builds over time" % version)
    if version not in releases:
        p.append("the manifests ship %s, which CHANGELOG.md has no released section for "
                 "(## [%s] - YYYY-MM-DD)" % (version, version))
    return p, version


def git_problems(version, tags, tag_in_history, tagged_manifests_tags):
    """What is wrong with shipping `version` given the release tags: `tags` (all v<...>
    tags of the clone), tag_in_history(tag) (whether HEAD descends from it) and
    tagged_manifests_tags(tag) (kustomization_tags of that tag's commit)."""
    p = []
    tag = "v" + version
    in_history = [t for t in tags if release_key(t[1:]) and tag_in_history(t)]
    newer = [t for t in in_history if release_key(t[1:]) > release_key(version)]
    if newer:
        p.append("release %s is in this tree's history, but the manifests still ship %s"
                 % (max(newer, key=lambda t: release_key(t[1:])), version))
    if tag in tags:
        if not tag_in_history(tag):
            p.append("the manifests ship %s, but tag %s is not in this tree's history: "
                     "that build is of another line" % (version, tag))
        else:
            theirs = tagged_manifests_tags(tag)
            if set(theirs.values()) != {version}:
                p.append("tag %s's own manifests ship %s, not %s" % (tag, theirs, version))
    return p


def git(*args):
    return subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True, text=True)


def test_one_released_version_everywhere(env):
    with open(os.path.join(ROOT, "CHANGELOG.md")) as f:
        releases = changelog_releases(f.read())
    problems, version = version_problems(shipped_tags(ROOT), releases)
    print("     the manifests ship %s" % version)
    return problems


def test_the_version_matches_the_release_tags(env):
    _, version = version_problems(shipped_tags(ROOT), set())
    if version is None or release_key(version) is None:
        raise harness.Skip("no one release version (test_one_released_version_everywhere)")
    if git("rev-parse").returncode != 0:
        raise harness.Skip("not a git checkout")
    tags = [t for t in git("tag", "--list", "v[0-9]*").stdout.split() if t]
    if not tags:
        raise harness.Skip("no release tags in this clone (a shallow clone, or before the "
                           "first tag): the manifests' version is checked against "
                           "CHANGELOG.md only")

    def in_history(tag):
        return git("merge-base", "--is-ancestor", tag, "HEAD").returncode == 0

    def manifests_of(tag):
        return kustomization_tags(git("show", tag + ":manifests/kustomization.yaml").stdout)

    return git_problems(version, tags, in_history, manifests_of)


def test_the_checks_catch_what_they_guard(env):
    """Each check, fed what it must refuse."""
    ok = [("m", "kdns/kubedns", "0.2.0"), ("m", "kdns/cache", "0.2.0")]
    cases = {
        "latest": ([("m", "kdns/kubedns", "latest")], {"latest"}),
        "a build's version": ([("m", "kdns/kubedns", "0.2.0-3-gabc1234")],
                              {"0.2.0-3-gabc1234"}),
        "a dirty build": ([("m", "kdns/kubedns", "0.2.0-dirty")], {"0.2.0-dirty"}),
        "no CHANGELOG section": (ok, {"0.1.0"}),
        "two versions": (ok + [("docs", "kdns/sidecar", "0.1.0")], {"0.1.0", "0.2.0"}),
        "nothing found": ([], {"0.2.0"}),
        "a moving tag": ([("m", "kdns/kubedns", "stable")], {"stable"}),
    }
    p = []
    if any(PLACEHOLDER.match(tag) for tag in ("latest", "stable", "0.2.0", "v1")):
        p.append("a real tag is taken for a placeholder")
    for what, (found, releases) in cases.items():
        if not version_problems(found, releases)[0]:
            p.append("version_problems passes %s" % what)
    if version_problems(ok, {"0.2.0"})[0]:
        p.append("version_problems refuses a good release: %s"
                 % version_problems(ok, {"0.2.0"})[0])
    with open(os.path.join(ROOT, "CHANGELOG.md")) as f:
        if "Unreleased" in changelog_releases(f.read()):
            p.append("changelog_releases counts the Unreleased section as a release")

    history = {"v0.1.0", "v0.2.0"}
    ours = {"kdns/kubedns": "0.2.0"}
    git_cases = {
        "a newer release in history": ("0.1.0", ["v0.1.0", "v0.2.0"], {"kdns/kubedns": "0.1.0"}),
        "a tag not in history": ("0.3.0", ["v0.1.0", "v0.2.0", "v0.3.0"], ours),
        "a tag whose manifests ship another version": ("0.2.0", ["v0.1.0", "v0.2.0"],
                                                        {"kdns/kubedns": "0.1.0"}),
    }
    for what, (version, tags, theirs) in git_cases.items():
        if not git_problems(version, tags, lambda t: t in history, lambda t: theirs):
            p.append("git_problems passes %s" % what)
    for version, tags in (("0.2.0", ["v0.1.0", "v0.2.0"]), ("0.3.0", ["v0.1.0", "v0.2.0"])):
        found = git_problems(version, tags, lambda t: t in history,
                             lambda t: {"kdns/kubedns": version})
        if found:
            p.append("git_problems refuses shipping %s with tags %s: %s" % (version, tags, found))
    return p


TESTS = [test_one_released_version_everywhere,
         test_the_version_matches_the_release_tags,
         test_the_checks_catch_what_they_guard]


if __name__ == "__main__":
    sys.exit(harness.main("kdns-manifests-release-", TESTS))
