#!/usr/bin/python3
"""Skips are counted and named, never passed (issue 37): harness.run_tests and main count a
Skip as skipped with its reason, or, under CI=true, fail one for what the install step
provides; test/run_suites.sh's count() reads `K skipped` from a suite's closing line and
the `SKIP ` lines of a Catch2 log (test/support/skip.h), which Catch2 counts as passed.

Closes with `N passed, M failed, K skipped`."""
import contextlib
import io
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def passing(env):
    return []


def skips_for_a_tool(env):
    raise harness.Skip("frobnicate is not installed", provided=True)


def skips_for_no_root(env):
    raise harness.Skip("needs root")


def run_quietly(tests, ci):
    old = os.environ.pop("CI", None)
    if ci:
        os.environ["CI"] = "true"
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            counts = harness.run_tests(tests, {})
    finally:
        os.environ.pop("CI", None)
        if old is not None:
            os.environ["CI"] = old
    return counts, out.getvalue()


def test_a_skip_is_counted_and_says_why(env):
    p = []
    counts, out = run_quietly([passing, skips_for_a_tool, skips_for_no_root], ci=False)
    if counts != (1, 0, 2):
        p.append("counts %s, want 1 passed, 0 failed, 2 skipped" % (counts,))
    for line in ("SKIP skips_for_a_tool: frobnicate is not installed",
                 "SKIP skips_for_no_root: needs root"):
        if line not in out:
            p.append("no line %r in %r" % (line, out))
    return p


def test_under_ci_a_skip_for_what_the_install_provides_fails(env):
    p = []
    counts, out = run_quietly([passing, skips_for_a_tool, skips_for_no_root], ci=True)
    if counts != (1, 1, 1):
        p.append("counts %s, want 1 passed, 1 failed, 1 skipped" % (counts,))
    if "FAIL skips_for_a_tool: skipped under CI=true" not in out:
        p.append("no FAIL line for the provided tool: %r" % out)
    return p


def test_a_suite_that_cannot_run_is_one_skipped(env):
    p = []
    for ci, want in ((False, "0 passed, 0 failed, 1 skipped"), (True, "0 passed, 1 failed, 0 skipped")):
        run_env = dict(os.environ, CI="true" if ci else "false")
        code = ("import sys; sys.path.insert(0, %r); import harness; "
                "sys.exit(harness.main('kdns-skip-', [], tools=['/nonexistent/tool'], "
                "skip_unmet=True))" % os.path.dirname(os.path.abspath(__file__)))
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env=run_env, timeout=60)
        last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
        if last != want or (result.returncode != 0) != ci:
            p.append("CI=%s: exit %d, closing line %r, want %r" % (ci, result.returncode, last,
                                                                 want))
    return p


def count_with_run_suites(log_text):
    """run_suites.sh's count() on a log: its printed line, and its totals."""
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(log_text)
    script = ("set -uo pipefail; total_passed=0; total_failed=0; total_skipped=0; broken=(); "
              "skips=(); eval \"$(sed -n '/^count() {/,/^}/p' test/run_suites.sh)\"; "
              "count suite %s 0; echo \"$total_passed $total_failed $total_skipped "
              "${#skips[@]}\"" % f.name)
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=ROOT,
                            timeout=60)
    os.unlink(f.name)
    return result.stdout.strip().splitlines()


def test_run_suites_counts_skips(env):
    p = []
    catch = ("SKIP DnsServer serves IPv6: no IPv6 loopback here\n"
             "All tests passed (12 assertions in 5 test cases)\n")
    python = "SKIP test_x: needs root\n3 passed, 1 failed, 2 skipped\n"
    old = "3 passed, 1 failed\n"
    for text, want in ((catch, "4 0 1 1"), (python, "3 1 2 1"), (old, "3 1 0 0")):
        lines = count_with_run_suites(text)
        if not lines or lines[-1] != want:
            p.append("%r: count() gave %r, want totals %r" % (text, lines, want))
    return p


TESTS = [test_a_skip_is_counted_and_says_why,
         test_under_ci_a_skip_for_what_the_install_provides_fails,
         test_a_suite_that_cannot_run_is_one_skipped,
         test_run_suites_counts_skips]


if __name__ == "__main__":
    sys.exit(harness.main("kdns-harness-skips-", TESTS))
