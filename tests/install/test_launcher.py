"""qosway-session's choice of cgroup on pure cgroup v2, as an ordinary user
(nobody) runs it: a session whose cgroup is not delegated asks the user's
systemd manager for a delegated scope (systemd-run --user --scope -p
Delegate=yes) and runs itself again inside it; when the manager refuses,
the session starts without one and says why; a session already in a
delegated group, or with no user manager, never calls systemd-run.

There is no systemd user manager here: systemctl and systemd-run are test
doubles first on PATH. The fake systemd-run records its arguments and runs
the command after "--" (or fails as a refusing manager does). The
launcher's pure-v2 tree is the host's cgroup2 mount (QOSWAY_CGROUP_MOUNT);
the compositor is the real one, which runs its startup command (writing its
environment) and ends."""
import os
import pathlib
import pwd
import shutil
import subprocess
import tempfile

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("QOSWAY_BUILD_DIR", SRC / "build"))
if not BUILD.is_absolute():
    BUILD = SRC / BUILD

FAKE_SYSTEMD_RUN = """#!/bin/sh
{ printf '%s\\n' "$@"; echo ---; } >> "$FAKE_LOG"
if [ -n "${FAKE_REFUSE:-}" ]; then
    echo "Failed to start transient scope unit: Access denied" >&2
    exit 1
fi
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
"""

FAKE_SYSTEMCTL = """#!/bin/sh
[ "$*" = "--user show-environment" ] && [ -z "${FAKE_NO_MANAGER:-}" ]
"""


def cgroup2_mount():
    for path in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(path + "/cgroup.controllers"):
            return path
    return None


@pytest.fixture
def session():
    """run(**env) -> (result, calls, child_env): qosway-session run as
    nobody with the fakes first on PATH; calls is systemd-run's argument
    lists, child_env what the compositor's startup command saw."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("running the launcher as an ordinary user needs root and setpriv")
    mount = cgroup2_mount()
    if not mount:
        pytest.skip("no cgroup2 mount here")
    for built in ("config/qosway-session", "compositor/qosway"):
        assert (BUILD / built).exists(), "build %s first (meson compile -C %s)" % (built, BUILD)
    nobody = pwd.getpwnam("nobody")
    # pytest's own temporary directories are private to root, and the build
    # directory may be too (a clone in a 0700 home): nobody runs copies kept
    # in a directory of its own that it can reach.
    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="qw-launcher-", dir="/tmp"))
    tmp_path.chmod(0o755)
    fakes = tmp_path / "bin"
    fakes.mkdir()
    qosway = tmp_path / "qosway"
    shutil.copy2(BUILD / "compositor/qosway", qosway)
    qosway.chmod(0o755)
    for name, text in (("systemd-run", FAKE_SYSTEMD_RUN), ("systemctl", FAKE_SYSTEMCTL),
                       ("qosway-session", (BUILD / "config/qosway-session").read_text())):
        (fakes / name).write_text(text)
        (fakes / name).chmod(0o755)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    log, out = tmp_path / "calls", tmp_path / "env"
    for path in (runtime, tmp_path):
        os.chown(path, nobody.pw_uid, nobody.pw_gid)

    def run(prefix=(), **extra):
        env = {"PATH": "%s:/usr/bin:/bin" % fakes, "HOME": str(tmp_path),
               "XDG_RUNTIME_DIR": str(runtime), "WLR_BACKENDS": "headless",
               "WLR_RENDERER": "pixman", "WLR_LIBINPUT_NO_DEVICES": "1",
               "QOSWAY_BIN": str(qosway),
               "QOSWAY_CGROUP_MOUNT": mount, "FAKE_LOG": str(log)}
        env.update(extra)
        argv = list(prefix) + [
            "setpriv", "--reuid=%d" % nobody.pw_uid, "--regid=%d" % nobody.pw_gid,
            "--clear-groups", "--inh-caps=-all",
            str(fakes / "qosway-session"), "-s", "env > %s; kill -TERM $PPID" % out]
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        calls = log.read_text().split("---\n")[:-1] if log.exists() else []
        child = dict(line.split("=", 1) for line in out.read_text().splitlines()
                     if "=" in line) if out.exists() else {}
        for f in (log, out):
            f.unlink(missing_ok=True)
        return r, [c.splitlines() for c in calls], child

    yield run, mount, nobody
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_undelegated_session_asks_for_a_delegated_scope(session):
    run, _, _ = session
    r, calls, child = run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(calls) == 2, calls
    probe, scope = calls
    for call in calls:
        assert call[:4] == ["--user", "--scope", "--quiet", "--collect"], call
        assert call[call.index("-p") + 1] == "Delegate=yes", call
    assert probe[probe.index("--"):] == ["--", "true"], probe
    unit = [a for a in scope if a.startswith("--unit=")]
    assert unit and unit[0].startswith("--unit=qosway-") and unit[0].endswith(".scope"), scope
    rest = scope[scope.index("--") + 1:]
    assert rest[0].endswith("/qosway-session") and rest[1] == "-s", rest
    # the launcher ran again inside the scope and started the compositor
    assert child["QOSWAY_SESSION_SCOPE"] == unit[0][len("--unit="):], child
    # the fake moved it nowhere: the second run says the scope is no help
    assert "but not delegated to user" in r.stderr, r.stderr


def test_refused_scope_falls_back_with_the_reason(session):
    run, _, _ = session
    r, calls, child = run(FAKE_REFUSE="1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(calls) == 1 and calls[0][-2:] == ["--", "true"], calls
    assert "systemd-run could not make a delegated scope: Failed to start transient " \
        "scope unit: Access denied" in r.stderr, r.stderr
    assert "pausing are unavailable" in r.stderr, r.stderr
    assert child.get("WAYLAND_DISPLAY") and "QOSWAY_SESSION_SCOPE" not in child, child


def test_no_user_manager_no_systemd_run(session):
    run, _, _ = session
    r, calls, child = run(FAKE_NO_MANAGER="1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert calls == [], calls
    assert "no systemd user manager answers to make one" in r.stderr, r.stderr
    assert child.get("WAYLAND_DISPLAY"), child


def test_delegated_session_needs_no_scope(session):
    """A session already in a group delegated to its user (as root gives
    it here) stays there: systemd-run is never called."""
    run, mount, nobody = session
    group = os.path.join(mount, "launcher-test-%d" % os.getpid())
    os.mkdir(group)
    try:
        for f in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
            os.chown(os.path.join(group, f), nobody.pw_uid, nobody.pw_gid)
        enter = ["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$@"' % group, "sh"]
        r, calls, child = run(prefix=enter)
        assert r.returncode == 0, r.stderr[-3000:]
        assert calls == [], calls
        assert "no delegated cgroup" not in r.stderr, r.stderr
        cpu = "cpu" in open(os.path.join(group, "cgroup.controllers")).read().split()
        # a delegated group without the cpu controller is told so
        assert ("has no cpu controller" in r.stderr) == (not cpu), r.stderr
        assert child.get("WAYLAND_DISPLAY") and "QOSWAY_SESSION_SCOPE" not in child, child
    finally:
        os.rmdir(group)
