"""pytest fixtures for qosway's integration tests.

Run from the repository root:

    python3 -m pytest tests/integration

The compositor comes from $QOSWAY_BUILD_DIR (default ``build``), e.g.
``QOSWAY_BUILD_DIR=build-asan python3 -m pytest tests/integration`` runs the
suite against a sanitizer build.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import protogen  # noqa: E402

# Bindings must exist before any test module imports them.
protogen.ensure_bindings()

import harness  # noqa: E402


# request.node.rep_call, which _finish reads, comes from tests/conftest.py.


def _finish(comp, request, expect_clean_exit=True):
    """Stop a compositor after a test and check it went down cleanly."""
    problems = []
    try:
        if comp.alive():
            rc = comp.terminate()
            if expect_clean_exit and rc != 0:
                problems.append("qosway exited %d on SIGTERM at teardown" % rc)
        reports = comp.sanitizer_reports()
        if reports:
            problems.append("sanitizer reports in qosway's log: %s" % ", ".join(reports))
    finally:
        failed = getattr(request.node, "rep_call", None)
        if problems or (failed is not None and failed.failed):
            print("---- qosway log (%s) ----" % comp.log_path)
            print(comp.log_tail(12000))
            for c in comp.clients:
                print("---- %s stdout ----" % c.name)
                print("\n".join(c.lines[-30:]))
                print("---- %s stderr ----" % c.name)
                print(c.stderr_tail(2000))
        comp.cleanup()
    return problems


@pytest.fixture
def logdir(tmp_path):
    """Where logs and screenshots of one test go (kept by pytest's tmp_path
    retention for post-mortem)."""
    return str(tmp_path)


@pytest.fixture
def start_qosway(request, logdir):
    """Factory: start_qosway(config=..., args=..., wait=True) -> Compositor.

    Every compositor started is SIGTERMed at teardown; a non-zero exit or a
    sanitizer report then fails the test."""
    started = []

    keyboard = request.node.get_closest_marker("keyboard") is not None

    def start(config=None, args=(), wait=True, env_extra=None, name=None, prefix=()):
        sub = os.path.join(logdir, name or "qosway-%d" % len(started))
        os.makedirs(sub, exist_ok=True)
        comp = harness.Compositor(sub, config=config, args=args, env_extra=env_extra,
                                  prefix=prefix)
        started.append(comp)
        if wait:
            comp.wait_ready()
            if keyboard:
                # The seat offers a keyboard only while one exists.
                r = comp.ipc({"command": "input-add", "type": "keyboard"})
                assert r.get("success"), r
        return comp

    yield start
    problems = []
    for comp in started:
        problems += _finish(comp, request)
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


@pytest.fixture
def qosway(start_qosway):
    """A running headless qosway with the test theme (harness.test_config())."""
    return start_qosway(config=harness.test_config())
