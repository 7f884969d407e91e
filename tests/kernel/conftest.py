"""The kernel tests' fixtures (kernel_helpers.py), for every test file here:
procs (processes stopped after the test), helper (a manager, cleaned up),
rt_bandwidth (skip when the kernel has no real-time runtime to give) and
origin (a cgroup outside the manager's root)."""
from kernel_helpers import helper, origin, procs, rt_bandwidth  # noqa: F401
