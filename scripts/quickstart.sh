#!/usr/bin/env bash
# Sets up and runs qosway. On a machine with a display or a DRM device it
# starts the session; with neither (a server, a container, CI) it runs
# headless with demo clients and writes a screenshot whose path it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-deps.sh
if [ -d build/meson-private ]; then
	meson setup --reconfigure build >/dev/null
else
	meson setup build >/dev/null
fi
meson compile -C build >/dev/null
echo "built: build/compositor/qosway, build/clients/qosctl"

has_display=false
if [ -n "${WAYLAND_DISPLAY:-}${DISPLAY:-}" ] || compgen -G "/dev/dri/card*" >/dev/null; then
	has_display=true
fi
if $has_display && [ -z "${QOSWAY_DEMO:-}" ]; then
	exec build/compositor/qosway "$@"
fi

echo "no display found: running a headless demo"
rt=$(mktemp -d)
chmod 700 "$rt"
log="$root/build/quickstart.log"
cleanup() {
	[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$rt"
}
trap cleanup EXIT
XDG_RUNTIME_DIR=$rt WLR_BACKENDS=headless WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1 \
	build/compositor/qosway -c config/config >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	compgen -G "$rt/qosway-*.sock" >/dev/null && compgen -G "$rt/wayland-*" >/dev/null && break
	sleep 0.1
done
sock=$(compgen -G "$rt/qosway-*.sock")
display=$(basename "$(compgen -G "$rt/wayland-[0-9]" | head -n1)")
ctl() { XDG_RUNTIME_DIR=$rt build/clients/qosctl -s "$sock" "$@"; }
ctl exec -- weston-simple-shm >/dev/null
ctl exec -- foot -e sh -c "echo qosway: QoS-aware Wayland compositor; $root/build/clients/qosctl windows; sleep 60" >/dev/null
if [ -x build/clients/qos-player ]; then
	ctl exec -- build/clients/qos-player -n 0 -t "qos-player demo" >/dev/null
fi
for _ in $(seq 50); do
	[ "$(ctl --json windows | grep -c '"id"')" -ge 2 ] && break
	sleep 0.1
done
sleep 1.5
shot="$root/build/quickstart.png"
XDG_RUNTIME_DIR=$rt WAYLAND_DISPLAY=$display grim "$shot"
ctl windows
echo "screenshot: $shot"
ctl exit >/dev/null || true
wait "$pid" 2>/dev/null || true
pid=
