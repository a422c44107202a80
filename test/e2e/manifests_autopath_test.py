#!/usr/bin/python3
"""The autopath component of the manifests (manifests/components/autopath), rendered by
manifests.render() (the real kustomize where installed) from a kustomization of the
operator's kind, outside manifests/, next to the base rendered alone: the only difference is `--autopath` at the
end of kubedns's arguments, and that command line passes kubedns's own flag check
(`--check-flags`, from $KDNS_BIN). Closes with `N passed, M failed`. Other components that
only add kubedns flags (manifests_zonal_test.py) use its checks with their own.
"""
import json
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kustomize  # noqa: E402
import manifests  # noqa: E402

COMPONENT = os.path.join(manifests.MANIFESTS, "components", "autopath")


def kubedns_container(docs):
    for doc in docs:
        if doc.get("kind") == "Deployment" and doc["metadata"]["name"] == "kube-dns":
            for container in kustomize.pod_spec(doc)["containers"]:
                if container["name"] == "kubedns":
                    return container
    raise AssertionError("no kubedns container in the kube-dns Deployment")


def adds_to_kubedns_only(env, component, flag):
    """Problems unless `component` renders as the base with `flag` at the end of kubedns's
    arguments."""
    base = manifests.render().docs
    docs = manifests.render(components=[component]).docs
    p = []
    args = kubedns_container(docs).get("args", [])
    base_args = kubedns_container(base).get("args", [])
    if args != base_args + [flag]:
        p.append("kubedns's args %s, want the base's %s and %s" % (args, base_args, flag))
    # Everything else as the base renders it.
    kubedns_container(docs)["args"] = base_args
    key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    if sorted(map(key, docs)) != sorted(map(key, base)):
        p.append("the component changes more than kubedns's arguments")
    kubedns_container(docs)["args"] = args
    return p


def kubedns_accepts(env, component, flag):
    """Problems unless kubedns's command line rendered with `component` has `flag` and
    passes kubedns's --check-flags."""
    rendered = manifests.render(components=[component])
    container = kubedns_container(rendered.docs)
    argv = rendered.argv(container)
    if flag not in argv:
        return ["%s is not on kubedns's command line: %s" % (flag, argv)]
    problem = manifests.check_command(container, argv, rendered.program_of(container),
                                      rendered.image_env(container))
    return [problem] if problem else []


def test_the_component_adds_autopath_to_kubedns_only(env):
    return adds_to_kubedns_only(env, COMPONENT, "--autopath")


def test_kubedns_accepts_the_command_line(env):
    return kubedns_accepts(env, COMPONENT, "--autopath")


def main():
    return harness.main("kdns-manifests-autopath-",
                        [test_the_component_adds_autopath_to_kubedns_only,
                         test_kubedns_accepts_the_command_line])


if __name__ == "__main__":
    sys.exit(main())
