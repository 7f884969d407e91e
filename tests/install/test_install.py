"""meson install into a staging directory, from a fresh build of this
source tree, yields what a distribution package or a display manager needs:
the binaries, the launcher, the session file, the default config and qosrc
and the man pages; and the staged pieces work together (the session file
starts the launcher, which starts qosway with the session's variables)."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2]
PREFIX = "/usr"


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("install")
    build, stage = tmp / "build", tmp / "stage"
    for cmd in (["meson", "setup", str(build), str(SRC), "--prefix", PREFIX,
                 "-Dwerror=true", "-Dman-pages=enabled", "-Dfile-caps=disabled"],
                ["meson", "install", "-C", str(build), "--destdir", str(stage)]):
        r = subprocess.run(["nice"] + cmd, capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0, "%s failed:\n%s\n%s" % (
            " ".join(cmd), r.stdout[-3000:], r.stderr[-3000:])
    yield stage
    shutil.rmtree(tmp, ignore_errors=True)


def under(stage, path):
    return stage / path.lstrip("/")


@pytest.mark.parametrize("path", [
    "/usr/bin/qosway", "/usr/bin/qosctl", "/usr/bin/qos-player", "/usr/bin/qosway-monitor",
    "/usr/bin/qos-loadgen", "/usr/bin/qosway-session"])
def test_programs_installed_executable(staged, path):
    f = under(staged, path)
    assert f.is_file(), path
    assert os.access(f, os.X_OK), path + " is not executable"


def test_config_and_qosrc_in_the_datadir_qosway_reads(staged):
    for name in ("config", "qosrc"):
        f = under(staged, "/usr/share/qosway/" + name)
        assert f.read_bytes() == (SRC / "config" / name).read_bytes()
    # The binary looks there (and in /etc first) when no -c is given.
    usage = subprocess.run([under(staged, "/usr/bin/qosway"), "-h"],
                           capture_output=True, text=True, timeout=30).stdout
    assert "/etc/qosway/config" in usage and "/usr/share/qosway/config" in usage, usage


def test_session_file_starts_the_launcher(staged):
    text = under(staged, "/usr/share/wayland-sessions/qosway.desktop").read_text()
    assert text.startswith("[Desktop Entry]\n")
    fields = dict(line.split("=", 1) for line in text.splitlines()[1:] if "=" in line)
    assert fields["Type"] == "Application"
    assert fields["Name"]
    assert fields["Exec"] == "/usr/bin/qosway-session"
    launcher = under(staged, "/usr/bin/qosway-session").read_text()
    assert 'qosway=${QOSWAY_BIN:-/usr/bin/qosway}' in launcher
    r = subprocess.run(["sh", "-n", under(staged, "/usr/bin/qosway-session")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("page", ["man1/qosway.1", "man5/qosway.5", "man5/qosrc.5",
                                  "man1/qosctl.1"])
def test_man_pages(staged, page):
    f = under(staged, "/usr/share/man/" + page)
    text = f.read_text()
    name, section = page.split("/")[1].split(".")
    assert re.search(r'^\.TH "%s" "%s"' % (name, section), text, re.M), text[:400]
    assert ".SH NAME" in text or '.SH "NAME"' in text
    if shutil.which("man"):
        r = subprocess.run(["man", "-l", "-Tutf8", str(f)], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, MANWIDTH="80"))
        assert r.returncode == 0, r.stderr
        plain = re.sub(".\x08", "", r.stdout)  # overstrike bold and underline
        assert "SEE ALSO" in plain, plain[:400]
        assert "warning" not in r.stderr.lower(), r.stderr


def test_launcher_runs_the_staged_qosway(staged, tmp_path):
    """The Exec line, as a display manager runs it, with the staged binary:
    the compositor comes up with the session's variables and gives the
    variables glibc's secure mode would drop back to what it starts."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    out = tmp_path / "env"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WAYLAND_", "XDG_"))}
    env.update(XDG_RUNTIME_DIR=str(runtime), WLR_BACKENDS="headless",
               WLR_RENDERER="pixman", WLR_LIBINPUT_NO_DEVICES="1", TZDIR="/tz/test",
               QOSWAY_BIN=str(under(staged, "/usr/bin/qosway")))
    cmd = "env > %s; kill -TERM $PPID" % out
    r = subprocess.run([under(staged, "/usr/bin/qosway-session"), "-s", cmd], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-3000:]
    child = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert child["XDG_SESSION_TYPE"] == "wayland"
    assert child["XDG_CURRENT_DESKTOP"] == "qosway"
    assert child["WAYLAND_DISPLAY"] and child["QOSWAY_SOCK"]
    assert child["TZDIR"] == "/tz/test"
    assert not any(k.startswith("QOSWAY_ENV_") for k in child), child
