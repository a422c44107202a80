#!/usr/bin/python3
"""The manifests render and name what this tree builds.

manifests/ is rendered (manifests.render(): the real kustomize where installed, else the
homemade fallback, saying so); the homemade renderer agrees with the real one on every
kustomization (manifests/, each component alone over it, monitoring; SKIP without a real
one); every file parses, is listed in kustomization.yaml, and every object sits in
kube-system, once; every image has an entry in the kustomization's images, a tag, and, for
kdns images, a target of images/Dockerfile (which release the tag is:
manifests_release_test.py). Closes with `N passed, M failed, K skipped`.
"""
import json
import os
import shutil
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kustomize  # noqa: E402
from kustomize import all_containers, load_docs, pod_spec, split_image  # noqa: E402
import manifests  # noqa: E402
from manifests import (  # noqa: E402
    CLUSTER_SCOPED,
    MANIFESTS,
    NAMESPACE)


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


# Annotations kustomize may add to what it renders (with buildMetadata, or internally),
# which the homemade renderer does not: not part of the objects the manifests define.
KUSTOMIZE_ANNOTATIONS = ("config.kubernetes.io/", "internal.config.kubernetes.io/",
                         "kustomize.config.k8s.io/")


# What a component needs from the operator's overlay to render at all (its header says so):
# external-names reads the zone from a local-config ConfigMap the operator writes.
OPERATOR_INPUTS = {
    "external-names": [("external-zone.yaml", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kdns-external-names", "namespace": "kube-system",
                     "annotations": {"config.kubernetes.io/local-config": "true"}},
        "data": {"zone": "example.org"}})],
}


def every_kustomization(workdir):
    """(what, directory) of every kustomization the manifests offer: manifests/, each
    component applied alone over it (as an operator's overlay lists it), and monitoring."""
    out = [("manifests/", MANIFESTS)]
    components = os.path.join(MANIFESTS, "components")
    for name in sorted(os.listdir(components)):
        overlay = manifests.write_overlay(os.path.join(workdir, name),
                                          [os.path.join(components, name)])
        for resource, doc in OPERATOR_INPUTS.get(name, []):
            with open(os.path.join(overlay, resource), "w") as f:
                yaml.safe_dump(doc, f)
            with open(os.path.join(overlay, "kustomization.yaml")) as f:
                kustomization = yaml.safe_load(f)
            kustomization["resources"].append(resource)
            with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
                yaml.safe_dump(kustomization, f)
        out.append(("manifests/ with components/" + name, overlay))
    out.append(("manifests/monitoring", os.path.join(MANIFESTS, "monitoring")))
    return out


def normalised(docs):
    """The objects keyed by (kind, namespace, name), without the annotations kustomize adds;
    kustomize sorts the objects (by kind), so their order is not compared."""
    out = {}
    for doc in docs:
        doc = json.loads(json.dumps(doc))
        annotations = doc.get("metadata", {}).get("annotations")
        if annotations is not None:
            for key in [k for k in annotations if k.startswith(KUSTOMIZE_ANNOTATIONS)]:
                del annotations[key]
            if not annotations:
                del doc["metadata"]["annotations"]
        meta = doc.get("metadata", {})
        out[(doc.get("kind"), meta.get("namespace"), meta.get("name"))] = doc
    return out


def first_difference(a, b, path=""):
    """The JSON path where a and b first differ, and the two values there."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key, "<absent>") != b.get(key, "<absent>"):
                return first_difference(a.get(key, "<absent>"), b.get(key, "<absent>"),
                                        path + "/" + str(key))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, path + "/" + str(i))
    return "%s: %s here, %s in kustomize's" % (path or "/", json.dumps(a)[:200],
                                              json.dumps(b)[:200])


def test_the_homemade_renderer_agrees_with_kustomize(r):
    """The fallback (kustomize.py) renders every kustomization as the real kustomize does:
    the same objects with the same fields; SKIP where no real one is installed."""
    p = []
    workdir = tempfile.mkdtemp(prefix="kdns-agree-")
    try:
        for what, directory in every_kustomization(workdir):
            theirs = normalised(manifests.kustomize_build(directory))
            try:
                ours = normalised(kustomize.render(directory)[1])
            except (ValueError, KeyError, IndexError) as e:
                p.append("%s: the homemade renderer fails: %s" % (what, e))
                continue
            for name in sorted(set(ours) - set(theirs)):
                p.append("%s: %s %s/%s only in the homemade rendering" % ((what,) + name))
            for name in sorted(set(theirs) - set(ours)):
                p.append("%s: %s %s/%s only in kustomize's rendering" % ((what,) + name))
            for name in sorted(set(ours) & set(theirs)):
                if ours[name] != theirs[name]:
                    p.append("%s: %s %s/%s differs at %s" % (
                        (what,) + name + (first_difference(ours[name], theirs[name]),)))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
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
         test_the_homemade_renderer_agrees_with_kustomize,
         test_images_are_retargetable_and_built_here]


if __name__ == "__main__":
    sys.exit(manifests.main(TESTS))
