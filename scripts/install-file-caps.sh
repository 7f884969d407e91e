#!/bin/sh
# meson install script: gives the installed qosway CAP_SYS_NICE as a file
# capability, so an ordinary user's session may grant real-time classes and
# boost the compositor (children never inherit it: qosway clears it before
# every exec). Arguments: SETCAP BINDIR_RELATIVE_PATH required|optional.
setcap=$1
target=${MESON_INSTALL_DESTDIR_PREFIX:?run by meson install}/$2
need=$3

fail() {
	echo "qosway: $1" >&2
	echo "qosway: real-time classes will need root; as root, run:" >&2
	echo "    setcap cap_sys_nice=ep ${MESON_INSTALL_PREFIX:-}/$2" >&2
	[ "$need" = required ] && exit 1
	exit 0
}

if [ "$(id -u)" -ne 0 ]; then
	fail "not installing as root: $target gets no CAP_SYS_NICE"
fi
if ! "$setcap" cap_sys_nice=ep "$target"; then
	fail "setcap failed on $target (a file system without extended attributes?)"
fi
echo "qosway: $target has CAP_SYS_NICE (cap_sys_nice=ep)"
