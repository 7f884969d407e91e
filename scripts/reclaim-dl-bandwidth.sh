#!/usr/bin/env bash
# Gives back SCHED_DEADLINE bandwidth that the kernel lost track of.
#
# Linux 6.18 keeps the bandwidth of a deadline thread that sleeps past its
# 0-lag time and is then switched to another class counted in the root
# domain's total for good (docs/qos-kernel-mapping.md).  On a machine that
# has run many test suites, that leak can eat the deadline capacity the
# tests need.  Rebuilding the scheduling domains recomputes the total from
# the deadline tasks that exist; toggling the root cpuset's load balancing
# (cgroup v1 cpuset) does that.  Root only; does nothing elsewhere.
set -u
lb=/sys/fs/cgroup/cpuset/cpuset.sched_load_balance
dbg=/sys/kernel/debug/sched/debug
[ "$(id -u)" = 0 ] && [ -w "$lb" ] || exit 0
before=$(grep -m1 'dl_bw->total_bw' "$dbg" 2>/dev/null | awk '{print $NF}')
echo 0 >"$lb" && echo 1 >"$lb"
after=$(grep -m1 'dl_bw->total_bw' "$dbg" 2>/dev/null | awk '{print $NF}')
echo "deadline bandwidth in use (root domain, 1/1048576 CPU): ${before:-?} -> ${after:-?}"
