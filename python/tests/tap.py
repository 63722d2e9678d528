# SPDX-License-Identifier: MIT
"""A pytest plugin printing one TAP line per test, so that the project's
test runner (tools/run-checks) counts pytest's results like every other
test's: `python3 -m pytest -p tap ...` with this directory on sys.path.

A test's line is "ok N - node id", "ok N - node id # SKIP reason" or
"not ok N - node id"; a failure's report follows as "#" comments.
"""
import sys

_count = 0


def _emit(line):
    # straight to the real stdout: pytest's capture is for the tests
    sys.__stdout__.write(line + "\n")
    sys.__stdout__.flush()


def pytest_runtest_logreport(report):
    global _count
    if report.when == "call" or (report.when == "setup" and
                                 not report.passed):
        _count += 1
        name = report.nodeid
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) \
                else str(report.longrepr)
            _emit("ok %d - %s # SKIP %s" % (_count, name, reason))
        elif report.passed:
            _emit("ok %d - %s" % (_count, name))
        else:
            _emit("not ok %d - %s" % (_count, name))
            for line in str(report.longrepr).splitlines()[-30:]:
                _emit("# " + line)
    elif report.when == "teardown" and report.failed:
        _count += 1
        _emit("not ok %d - %s (teardown)" % (_count, report.nodeid))


def pytest_collectreport(report):
    global _count
    if report.failed:
        _count += 1
        _emit("not ok %d - collecting %s" % (_count, report.nodeid))
        for line in str(report.longrepr).splitlines()[-30:]:
            _emit("# " + line)


def pytest_sessionfinish(session, exitstatus):
    _emit("\n1..%d" % _count)


def pytest_report_teststatus(report, config):
    """No progress letters: a TAP line must start its line."""
    if hasattr(report, "wasxfail") or report.when != "call" and \
            not report.skipped:
        return None
    if report.passed:
        return "passed", "", "PASSED"
    if report.failed:
        return "failed", "", "FAILED"
    return "skipped", "", "SKIPPED"
