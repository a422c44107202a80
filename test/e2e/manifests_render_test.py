#!/usr/bin/python3
"""The manifests render and name what this tree builds.

manifests/, and manifests/ with its configmaps component, are rendered (checked against `kubectl kustomize`
or `kustomize build` when either is installed, SKIP otherwise); every file parses, is listed in kustomization.yaml,
and every object sits in kube-system, once; every image has an entry in the
kustomization's images, a tag, and, for kdns images, a target of images/Dockerfile (which
release the tag is: manifests_release_test.py). Closes with `N passed, M failed`.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from kustomize import all_containers, load_docs, pod_spec, render, split_image  # noqa: E402
import manifests  # noqa: E402
from manifests import (  # noqa: E402
    CLUSTER_SCOPED,
    MANIFESTS,
    NAMESPACE,
    CONFIGMAPS_COMPONENT)


def test_every_file_is_listed_and_parses(r):
    p = []
    listed = set(r.kustomization.get("resources", []))
    present = {f for f in os.listdir(MANIFESTS)
               if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml"}
    for f in sorted(present - listed):
        p.append("%s is not in kustomization.yaml's resources" % f)
    for f in sorted(listed - present):
        p.append("kustomization.yaml lists %s, which does not exist" % f)
    # The same in every kustomization or component below manifests/ (components/*,
    # monitoring/): a file not listed is a file no one applies.
    for directory, _, files in sorted(os.walk(MANIFESTS)):
        if directory == MANIFESTS or "kustomization.yaml" not in files:
            continue
        with open(os.path.join(directory, "kustomization.yaml")) as f:
            sub = yaml.safe_load(f)
        sub_listed = set(sub.get("resources", []))
        for generator in sub.get("configMapGenerator", []):
            sub_listed |= set(generator.get("files", []))
        where = os.path.relpath(directory, MANIFESTS)
        for name in sorted(set(files) - sub_listed - {"kustomization.yaml"}):
            if name.endswith((".yaml", ".yml", ".json")):
                p.append("%s/%s is not listed in %s/kustomization.yaml" % (where, name, where))
    for f in sorted(present):
        try:
            docs = load_docs(os.path.join(MANIFESTS, f))
        except yaml.YAMLError as e:
            p.append("%s: %s" % (f, e))
            continue
        if not docs:
            p.append("%s holds no object" % f)
    for doc in r.docs:
        what = "%s %s" % (doc.get("kind"), doc.get("metadata", {}).get("name"))
        for key in ("apiVersion", "kind", "metadata"):
            if key not in doc:
                p.append("%s: no %s" % (what, key))
        namespace = doc.get("metadata", {}).get("namespace")
        if doc.get("kind") in CLUSTER_SCOPED:
            if namespace is not None:
                p.append("%s is cluster-scoped but has namespace %s" % (what, namespace))
        elif namespace != NAMESPACE:
            p.append("%s: namespace %r, not %s" % (what, namespace, NAMESPACE))
    names = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
             for d in r.docs]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        p.append("defined twice: %s %s/%s" % dup)
    return p


def test_kustomize_renders_the_same(r):
    """manifests/, and an overlay of it with the configmaps component."""
    kubectl = shutil.which("kubectl")
    kustomize = shutil.which("kustomize")
    p = []
    overlay = manifests.write_overlay(tempfile.mkdtemp(prefix="kdns-overlay-"),
                                      [CONFIGMAPS_COMPONENT])
    for directory, docs in ((MANIFESTS, r.docs), (overlay, render(overlay)[1])):
        if kustomize:
            command = [kustomize, "build", directory]
        elif kubectl:
            command = [kubectl, "kustomize", directory]
        else:
            raise harness.Skip("neither kustomize nor kubectl is installed", provided=True)
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            p.append("`%s` failed: %s" % (" ".join(command), result.stderr.strip()))
            continue
        theirs = [d for d in yaml.safe_load_all(result.stdout) if d is not None]
        key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
        ours = sorted(map(key, docs))
        theirs = sorted(map(key, theirs))
        if ours == theirs:
            continue
        only_ours = set(ours) - set(theirs)
        only_theirs = set(theirs) - set(ours)
        p.append("%s: kustomize renders differently; only here: %s; only in kustomize's: %s"
                 % (directory, [json.loads(x)["metadata"]["name"] for x in only_ours],
                    [json.loads(x)["metadata"]["name"] for x in only_theirs]))
    shutil.rmtree(overlay, ignore_errors=True)
    return p


def test_images_are_retargetable_and_built_here(r):
    p = []
    names = {entry["name"] for entry in r.kustomization.get("images", [])}
    entrypoints = r.entrypoints()
    for doc in r.docs:
        spec = pod_spec(doc)
        for container in all_containers(spec) if spec else []:
            name, tag, digest = split_image(container["image"])
            if name not in names:
                p.append("container %s: image %s has no entry in kustomization.yaml's images"
                         % (container["name"], name))
            if not tag and not digest:
                p.append("container %s: image %s has no tag" % (container["name"], name))
            if name.startswith("kdns/"):
                target = name[len("kdns/"):]
                if target not in entrypoints:
                    p.append("container %s: image %s is not a target of images/Dockerfile"
                             % (container["name"], name))
    for entry in r.kustomization.get("images", []):
        if not any(split_image(c["image"])[0] == entry.get("newName", entry["name"])
                   for d in r.docs if pod_spec(d) for c in all_containers(pod_spec(d))):
            p.append("kustomization.yaml images: %s is used by no container" % entry["name"])
    return p


TESTS = [test_every_file_is_listed_and_parses,
         test_kustomize_renders_the_same,
         test_images_are_retargetable_and_built_here]


if __name__ == "__main__":
    sys.exit(manifests.main(TESTS))
