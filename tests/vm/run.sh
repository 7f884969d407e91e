#!/usr/bin/env bash
# Boots Debian's own kernel in QEMU (virtme-ng, the host's root file system
# shared read-only) with a pure cgroup-v2 tree and a virtio-gpu DRM device,
# and runs tests/vm/guest.py there: what this machine (hybrid cgroups, no
# /dev/dri) cannot show. One boot; functional checks only (the guest runs
# under TCG).
#
#   tests/vm/run.sh [RESULTS_DIR]
#
# Needs a built tree (QOSWAY_BUILD_DIR, default build) and what
# scripts/install-deps.sh installs (qemu-system-x86, linux-image-amd64,
# busybox-static, seatd, virtme-ng); it installs nothing itself. Writes
# RESULTS_DIR/vm.xml (JUnit, one case per check) and RESULTS_DIR/vm/ (logs,
# the screenshot), and ends with "vm: N passed, N failed, N skipped". Exit
# status: 0 all passed or the stage was skipped (QEMU cannot start here),
# 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
src=$(pwd)
results=$(realpath -m "${1:-build/test-results}")
build=$(realpath -m "${QOSWAY_BUILD_DIR:-build}")
out=$results/vm
rm -rf "$out"
mkdir -p "$out"
start=$(date +%s)

python=$(python3 -c 'import sys; print(sys.executable)')
junit() { # status name message
	"$python" tests/vm/junit.py "$out/results.txt" "$results/vm.xml" "$@"
}
finish() { # exit status
	local code=$1
	echo "vm: wall time $(($(date +%s) - start)) s"
	"$python" tests/vm/junit.py --summary "$results/vm.xml"
	exit "$code"
}

missing=()
command -v vng >/dev/null || missing+=("vng (pip virtme-ng)")
command -v qemu-system-x86_64 >/dev/null || missing+=("qemu-system-x86_64 (qemu-system-x86)")
command -v seatd >/dev/null || missing+=("seatd")
kernel=$(ls /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$kernel" ] || missing+=("/boot/vmlinuz-*-amd64 (linux-image-amd64)")
[ -x "$build/compositor/qosway" ] || missing+=("$build/compositor/qosway (build first)")
if [ ${#missing[@]} -gt 0 ]; then
	echo "vm: missing ${missing[*]}; run scripts/install-deps.sh" >&2
	junit error setup "missing ${missing[*]}; run scripts/install-deps.sh"
	finish 1
fi
kver=${kernel#/boot/vmlinuz-}
if [ ! -d "/lib/modules/$kver" ]; then
	junit error setup "no modules for $kver in /lib/modules"
	finish 1
fi

# QEMU itself must start here; where it cannot (no TCG, no memory), the
# stage is skipped with the reason.
if ! qemu_err=$(timeout 60 qemu-system-x86_64 -machine q35,accel=tcg -display none \
	-nodefaults -S -no-reboot -m 64 -monitor none -serial none \
	-daemonize -pidfile "$out/qemu-probe.pid" 2>&1); then
	echo "vm: QEMU cannot start here: $qemu_err" >&2
	junit skipped qemu-start "QEMU cannot start here: $qemu_err"
	finish 0
fi
kill "$(cat "$out/qemu-probe.pid")" 2>/dev/null

# The staged install the guest copies to /usr/local, and the Wayland
# bindings the virtual pointer uses (the guest's tree is read-only).
if ! meson install -C "$build" --no-rebuild --destdir "$out/stage" >"$out/install.log" 2>&1; then
	junit error install "meson install failed: $(tail -n 5 "$out/install.log")"
	finish 1
fi
(cd tests/integration && "$python" -c 'import protogen; protogen.ensure_bindings()') \
	>"$out/protogen.log" 2>&1 || {
	junit error protogen "pywayland bindings: $(tail -n 3 "$out/protogen.log")"
	finish 1
}

# KVM here is a paravirtual hypervisor that cannot run Debian's kernel, so
# the guest runs under TCG unless QOSWAY_VM_KVM=1.
accel=(--disable-kvm)
[ "${QOSWAY_VM_KVM:-0}" = 1 ] && accel=()
guest_cmd="$python $src/tests/vm/guest.py --out $out --build $build --stage $out/stage --src $src"
echo "vm: booting $kernel (TCG) for the guest checks"
timeout "${QOSWAY_VM_TIMEOUT:-1200}" vng --run "$kernel" "${accel[@]}" --disable-microvm \
	--cpus 2 --memory 2G --append "cgroup_no_v1=all" \
	--qemu-opts="-device virtio-gpu-pci" --rwdir="$out" \
	--exec "$guest_cmd" </dev/null >"$out/console.log" 2>&1
rc=$?
grep -E '^VMCHECK|took' "$out/console.log" | sed 's/^/  /'
if ! grep -q '^VMDONE' "$out/results.txt" 2>/dev/null; then
	if [ ! -s "$out/results.txt" ] && ! grep -q 'guest kernel' "$out/console.log"; then
		# The guest never ran a line: QEMU or the kernel did not come up.
		junit error boot "the guest did not boot (vng exit $rc): $(tail -n 5 "$out/console.log")"
	else
		junit error guest "the guest stopped before the end (vng exit $rc; see $out/console.log)"
	fi
	finish 1
fi
junit
status=$("$python" tests/vm/junit.py --failed "$results/vm.xml")
finish "$status"
