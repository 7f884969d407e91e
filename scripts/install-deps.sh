#!/usr/bin/env bash
# Installs everything qosway needs to build, run and test on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(
	build-essential meson ninja-build pkg-config
	libwlroots-dev libwayland-dev wayland-protocols libpixman-1-dev
	libinput-dev libxkbcommon-dev libcairo2-dev libpango1.0-dev libglib2.0-dev libjson-c-dev
	xwayland libxcb1-dev libxcb-res0-dev
	fonts-dejavu-core
	# the format check (.clang-format)
	clang-format
	# real clients and tools used by the demo, tests and benchmarks
	foot weston grim sway swaybg util-linux procps python3 python3-pip valgrind
	# a real GTK 3 headerbar app for the client-side decoration test
	gtk-3-examples
	# man pages; setcap for the installed binary's file capability
	scdoc libcap2-bin man-db
	# the virtual machine stage (tests/vm): Debian's kernel under QEMU,
	# booted by virtme-ng (pip), and seatd for the DRM session there
	qemu-system-x86 linux-image-amd64 busybox-static seatd
	# wlr-output-management client for the output tests
	wlr-randr
	# the fuzzers (tests/fuzz, scripts/fuzz.sh): libFuzzer with ASan and UBSan
	clang-14 libclang-rt-14-dev
	# desktop programs the integration tests drive: a screen locker, clipboard
	# tools, a virtual-keyboard typist, a launcher, GTK 4 demos, an input
	# method (fcitx5 under dbus-run-session), wayland-info, and GTK 3 for
	# Python (the drag and drop test's windows)
	swaylock wl-clipboard wtype fuzzel gtk-4-examples fcitx5 dbus wayland-utils
	python3-gi python3-gi-cairo gir1.2-gtk-3.0
	# the benchmarks' real programs (tests/bench/real_programs.py)
	mpv ffmpeg
)

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${apt_packages[@]}"

# Test and benchmark helpers (pywayland for our own Wayland test clients).
pip_args=(-q --disable-pip-version-check)
if python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages; then
	pip_args+=(--break-system-packages)
fi
python3 -m pip install "${pip_args[@]}" -r tests/requirements.txt
