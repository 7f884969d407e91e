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
# The shipped config, with new windows cascading one window height apart so
# that the demo's windows do not cover each other.
{
	cat config/config
	echo "cascade-step 290"
} >"$rt/config"
XDG_RUNTIME_DIR=$rt WLR_BACKENDS=headless WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1 \
	build/compositor/qosway -c "$rt/config" >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	compgen -G "$rt/qosway-*.sock" >/dev/null && compgen -G "$rt/wayland-*" >/dev/null && break
	sleep 0.1
done
sock=$(compgen -G "$rt/qosway-*.sock")
display=$(basename "$(compgen -G "$rt/wayland-[0-9]" | head -n1)")
ctl() { XDG_RUNTIME_DIR=$rt build/clients/qosctl -s "$sock" "$@"; }
# Prints the id of the window titled $1 once it is mapped.
window_id() {
	local id
	for _ in $(seq 100); do
		id=$(ctl --json windows | python3 -c '
import json, sys
windows = json.load(sys.stdin).get("windows", [])
print(next((w["id"] for w in windows if w["title"] == sys.argv[1]), ""))
' "$1")
		[ -n "$id" ] && echo "$id" && return
		sleep 0.1
	done
	echo "no window titled '$1' appeared" >&2
	return 1
}

# A wallpaper: swaybg (a layer-shell client), when installed, fills the
# background with a gradient.
if command -v swaybg >/dev/null; then
	python3 - "$rt/wallpaper.png" <<'PY'
import struct, sys, zlib
w, h = 320, 180
rows = b"".join(b"\0" + bytes(v for x in range(w) for v in (
    int(24 + 16 * y / h), int(40 + 40 * x / w), int(62 + 48 * y / h))) for y in range(h))
def chunk(kind, data):
    crc = zlib.crc32(kind + data)
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)
with open(sys.argv[1], "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
PY
	ctl exec -- swaybg -i "$rt/wallpaper.png" -m fill >/dev/null
fi

# Three windows: a busy client to pause, a player spending 4 ms of CPU on
# each frame to make real-time, and qosway-monitor showing the reserves.
ctl exec -- weston-simple-shm >/dev/null
busy=$(window_id simple-shm)
ctl exec -- build/clients/qos-player -n 0 -u 4000 -W 480 -H 260 -t qos-player >/dev/null
player=$(window_id qos-player)
ctl exec -- build/clients/qosway-monitor >/dev/null
window_id "QoS monitor" >/dev/null
# What the titlebar buttons do, through qosctl: the player gets the reserve
# its qosrc rule names, the busy client is frozen and dimmed.
ctl set "$player" realtime || echo "(real-time needs root or CAP_SYS_NICE: see qosway(1))"
ctl set "$busy" paused || echo "(pausing needs a delegated cgroup: see qosway(1))"
# Let the monitor draw a few seconds of history.
sleep 8
shot="$root/build/quickstart.png"
XDG_RUNTIME_DIR=$rt WAYLAND_DISPLAY=$display grim "$shot"
ctl windows
ctl reserves
echo "screenshot: $shot"
ctl exit >/dev/null || true
wait "$pid" 2>/dev/null || true
pid=
