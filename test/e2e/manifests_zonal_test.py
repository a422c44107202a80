#!/usr/bin/python3
"""The zonal component of the manifests (manifests/components/zonal), rendered by
manifests.render() (the real kustomize where installed) from a kustomization of the
operator's kind, outside manifests/, next to the base rendered alone: the only difference is `--zonal` at the end of kubedns's
arguments, and that command line passes kubedns's own flag check (`--check-flags`, from
$KDNS_BIN). The checks are manifests_autopath_test.py's. Closes with `N passed, M failed`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import manifests  # noqa: E402
import manifests_autopath_test as component_checks  # noqa: E402

COMPONENT = os.path.join(manifests.MANIFESTS, "components", "zonal")


def test_the_component_adds_zonal_to_kubedns_only(env):
    return component_checks.adds_to_kubedns_only(env, COMPONENT, "--zonal")


def test_kubedns_accepts_the_command_line(env):
    return component_checks.kubedns_accepts(env, COMPONENT, "--zonal")


def main():
    return harness.main("kdns-manifests-zonal-",
                        [test_the_component_adds_zonal_to_kubedns_only,
                         test_kubedns_accepts_the_command_line])


if __name__ == "__main__":
    sys.exit(main())
