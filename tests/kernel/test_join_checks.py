"""Who may join a reserve, with real processes (root; skipped otherwise with
the reason kernel_helpers prints): never the manager or its guardian, never a pid that
is a thread or a task that has exited, and never a thread whose process is
a member of another reserve as a whole.  Billing needs members (by pid: a
member process), and an automatic reserve passes to a member process, or to
no one."""
import os
import resource
import subprocess
import sys

from kernel_helpers import (
    assert_no_test_cgroup_left, nice_of, policy_of, pytestmark, running_helper, thread_owner,
    wait_for)

assert pytestmark


def children_of(pid):
    out = []
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, task)) as f:
            out += [int(c) for c in f.read().split()]
    return out


def err(helper, text):
    reply = helper.cmd(text)
    assert reply.startswith("err "), (text, reply)
    return reply


def test_manager_and_its_guardian_cannot_join(helper, procs):
    """Frozen, the manager would answer nobody again (it once hung here until
    its group was thawed by hand); its guardian, frozen, could thaw nobody
    after a crash."""
    helper.ok("reserve held policy=pause")
    helper.ok("reserve low policy=idle")
    me = helper.proc.pid
    guardians = children_of(me)
    assert guardians, "the helper runs with a guardian"
    assert "QoS manager" in err(helper, "join low %d" % me)
    assert "QoS manager" in err(helper, "join low %d %d" % (me, me))
    assert "guardian" in err(helper, "join held %d" % guardians[0])
    assert "members=0" in helper.ok("info held")
    assert "members=0" in helper.ok("info low")


def test_thread_of_a_member_process_cannot_join_another_reserve(helper, procs):
    """A thread is in one reserve: while its process is a member of A as a
    whole, A's passes give each of its threads A's class, so a join of one
    of them to B is refused (otherwise both reserves would set it in turn,
    and it would be sent home with the process leaving A while B still
    listed it).  A thread id given as a process id is refused too."""
    owner, (tid,) = thread_owner(procs)
    helper.ok("reserve A policy=other nice=3")
    helper.ok("reserve B policy=other nice=7")
    helper.ok("join A %d" % owner.pid)
    reply = err(helper, "join B %d %d" % (owner.pid, tid))
    assert "'A'" in reply, reply
    assert "members=0" in helper.ok("info B")
    # the same reserve: it is in it already
    helper.ok("join A %d %d" % (owner.pid, tid))
    assert "members=1" in helper.ok("info A")
    assert nice_of(tid) == 3
    assert "is a thread" in err(helper, "join B %d" % tid)
    assert "is a thread" in err(helper, "join B %d %d" % (tid, tid))
    helper.ok("leave %d" % owner.pid)
    assert "members=0" in helper.ok("info A")
    # on its own, the thread may join B now
    helper.ok("join B %d %d" % (owner.pid, tid))
    assert nice_of(tid) == 7


def test_exited_process_cannot_join(helper, procs):
    """A zombie (exited, not yet reaped by its parent) is refused, not
    granted a share it can never use."""
    parent = procs([sys.executable, "-c",
                    "import os, time\n"
                    "pid = os.fork()\n"
                    "if pid == 0:\n"
                    "    os._exit(0)\n"
                    "print(pid, flush=True)\n"
                    "time.sleep(30)\n"], stdout=subprocess.PIPE, text=True)
    z = int(parent.stdout.readline())

    def state():
        with open("/proc/%d/stat" % z) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    wait_for(helper, lambda: state() == "Z", 5, "the child never became a zombie")
    helper.ok("reserve q policy=qos period=10ms slice=5ms fallback=pause")
    assert "has exited" in err(helper, "join q %d" % z)
    assert "granted=0" in helper.ok("info q")


def test_bill_needs_members(helper, procs):
    """With no member no period runs: a bill is refused, not shown and then
    dropped at the first join; a reserve its last member left is not shown
    in its fallback."""
    helper.ok("reserve e policy=other period=1s slice=100ms fallback=idle")
    err(helper, "bill e 400000")
    p = procs(["sleep", "30"])
    helper.ok("join e %d" % p.pid)
    helper.ok("bill e 400000")
    info = helper.ok("info e")
    assert "billed=400000" in info or "fallback=1" in info, info
    helper.ok("bill e 900000")
    assert "fallback=1" in helper.ok("info e")
    # no member, no period: not shown in a fallback it is not in
    helper.ok("leave %d" % p.pid)
    assert "members=0" in helper.ok("info e") and "fallback=0" in helper.ok("info e")


def test_bill_pid_bills_whole_processes_only(helper, procs):
    """The compositor bills by the client's process.  A process only a thread
    of which is a member is billed nothing that way (false: the work may have
    been for its other threads, and would push that thread into its
    fallback); by name the thread's reserve is billed, and the process as a
    whole by its pid."""
    owner, (tid,) = thread_owner(procs)
    helper.ok("reserve t policy=other nice=2")
    helper.ok("join t %d %d" % (owner.pid, tid))
    err(helper, "bill-pid %d 1000" % owner.pid)
    helper.ok("bill t 1000")
    helper.ok("join t %d" % owner.pid)
    helper.ok("bill-pid %d 2000" % owner.pid)
    assert "billed=3000" in helper.ok("info t")
    other = procs(["sleep", "30"])
    err(helper, "bill-pid %d 1000" % other.pid)


def test_automatic_reserve_passes_to_a_process_member(helper, procs):
    """When the owner of an automatic reserve exits, a member process takes
    it over, not the process of a thread member (whose own class lookup,
    auto-PID, would then find a reserve its process is not in)."""
    p1, q = procs(["sleep", "30"]), procs(["sleep", "30"])
    owner, (tid,) = thread_owner(procs)
    helper.ok("class %d policy=other nice=4" % p1.pid)
    helper.ok("join auto-%d %d %d" % (p1.pid, owner.pid, tid))
    helper.ok("join auto-%d %d" % (p1.pid, q.pid))
    p1.kill()
    p1.wait()
    wait_for(helper, lambda: helper.cmd("info auto-%d" % q.pid).startswith("ok"), 5,
              "auto-%d never became auto-%d: %r" % (p1.pid, q.pid, helper.events[-4:]))
    info = helper.ok("info auto-%d" % q.pid)
    assert "members=2" in info and "owner=%d" % q.pid in info, info
    assert not helper.cmd("info auto-%d" % owner.pid).startswith("ok")
    assert nice_of(tid) == 4 and nice_of(q.pid) == 4


def test_automatic_reserve_whose_members_own_reserves_becomes_an_orphan(helper, procs):
    """When every remaining member's own name (auto-PID) is taken, the
    reserve of an exited owner is renamed auto-OWNER-orphan: no later
    process given the dead owner's pid finds it as its own, and no member's
    own reserve is taken over.  It keeps its member and is gone with it.
    Here the one member left is a thread whose process owns auto-PID
    through another of its threads (passed on from an exited owner)."""
    q, a = procs(["sleep", "30"]), procs(["sleep", "30"])
    p, (t1, t2) = thread_owner(procs, 2)

    def owner_exits(proc, becomes):
        proc.kill()
        proc.wait()
        wait_for(helper, lambda: helper.cmd("info " + becomes).startswith("ok"), 5,
                  "auto-%d never became %s: %r" % (proc.pid, becomes, helper.events[-4:]))
        assert not helper.cmd("info auto-%d" % proc.pid).startswith("ok")

    helper.ok("class %d policy=other nice=2" % q.pid)
    helper.ok("join auto-%d %d %d" % (q.pid, p.pid, t1))
    owner_exits(q, "auto-%d" % p.pid)
    helper.ok("class %d policy=other nice=4" % a.pid)
    helper.ok("join auto-%d %d %d" % (a.pid, p.pid, t2))
    orphan = "auto-%d-orphan" % a.pid
    owner_exits(a, orphan)
    info = helper.ok("info " + orphan)
    assert "members=1" in info and "owner=0 auto=1" in info, info
    assert "members=1" in helper.ok("info auto-%d" % p.pid)
    assert nice_of(t2) == 4 and nice_of(t1) == 2
    helper.ok("leave %d %d" % (p.pid, t2))
    assert not helper.cmd("info " + orphan).startswith("ok")
    assert nice_of(t2) == 0


def test_owner_joining_as_a_whole_keeps_its_automatic_reserve(helper, procs):
    """A thread member's process that was passed an automatic reserve
    (auto-PID) and then asks for its class as a whole joins it as a
    process, its thread member folded in: it stays the owner (folding the
    owner's thread made the reserve auto-PID-orphan, and the next class
    request a second auto-PID)."""
    a = procs(["sleep", "30"])
    p, (tid,) = thread_owner(procs)
    helper.ok("class %d policy=other nice=4" % a.pid)
    helper.ok("join auto-%d %d %d" % (a.pid, p.pid, tid))
    helper.ok("leave %d" % a.pid)
    assert "owner=%d" % p.pid in helper.ok("info auto-%d" % p.pid)
    helper.ok("class %d policy=other nice=6" % p.pid)
    info = helper.ok("info auto-%d" % p.pid)
    assert "members=1" in info and "owner=%d auto=1" % p.pid in info, info
    assert not helper.cmd("info auto-%d-orphan" % p.pid).startswith("ok")
    assert nice_of(p.pid) == nice_of(tid) == 6


def test_no_fifo_or_rr_for_a_process_whose_rttime_cannot_be_bounded(rt_bandwidth, helper,
                                                                    procs):
    """fifo and rr come only with an RLIMIT_RTTIME bound.  Lowering another
    user's limit takes CAP_SYS_RESOURCE (this machine's root lacks it, as
    does a desktop compositor): a process of user nobody became fifo with no
    bound and no word.  Now the join, or a change of its reserve to rr, is
    refused naming the limit, and the process keeps its class; where the
    manager may bound it, it gets the bound."""
    p = procs(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "30"])
    wait_for(helper, lambda: os.readlink("/proc/%d/exe" % p.pid).endswith("sleep"), 5,
              "setpriv never ran sleep")
    try:
        resource.prlimit(p.pid, resource.RLIMIT_RTTIME)
        may_bound = True
    except PermissionError:
        may_bound = False
    helper.ok("reserve f policy=fifo priority=10 period=100ms cpu=20% fallback=other")
    helper.ok("reserve o policy=other nice=2")
    if may_bound:
        helper.ok("join f %d" % p.pid)
        assert resource.prlimit(p.pid, resource.RLIMIT_RTTIME)[1] <= 5000000
        return
    reply = err(helper, "join f %d" % p.pid)
    assert "RLIMIT_RTTIME" in reply and "[forbidden]" in reply, reply
    assert policy_of(p.pid) == os.SCHED_OTHER
    helper.ok("join o %d" % p.pid)
    reply = err(helper, "reserve o policy=rr priority=5 period=100ms cpu=20% fallback=other")
    assert "RLIMIT_RTTIME" in reply, reply
    assert policy_of(p.pid) == os.SCHED_OTHER and "policy=other" in helper.ok("info o")


def test_real_time_group_that_does_not_fit_says_who_holds_the_share(rt_bandwidth, helper,
                                                                    procs):
    """fifo and rr are not admission-controlled, but on the hybrid layout
    each reserve's group takes its limit of our root's real-time share
    (90%), and the kernel refuses what does not fit (EINVAL): a second
    reserve at the default safety limit (90%) is refused, saying which
    reserves hold the share, not only "Invalid argument"."""
    a, b = procs(["sleep", "30"]), procs(["sleep", "30"])
    helper.ok("class %d policy=fifo priority=10" % a.pid)
    if "rt_group=1" not in helper.ready:
        return  # no group bandwidth (cgroup v2): nothing to share out
    reply = err(helper, "class %d policy=fifo priority=10" % b.pid)
    assert "held by 'auto-%d' (90%%)" % a.pid in reply and "[capacity]" in reply, reply
    assert policy_of(b.pid) == os.SCHED_OTHER


def test_qos_parameters_the_deadline_class_cannot_take(procs):
    """A qos period past the kernel's deadline bound is refused when the
    reserve is defined, naming the bound; a slice over the period split over
    too few threads is refused at the join with the reason, not a bare
    "Invalid argument"."""
    with open("/proc/sys/kernel/sched_deadline_period_max_us") as f:
        top = int(f.read())
    with running_helper(extra=["--ncpus", "4"]) as h:
        reply = h.cmd("reserve long policy=qos period=%dus slice=1ms" % (top + 1000))
        assert reply.startswith("err") and "sched_deadline_period_max_us" in reply, reply
        h.ok("reserve wide policy=qos period=10ms slice=15ms fallback=pause")
        p = procs(["sleep", "30"])
        reply = h.cmd("join wide %d" % p.pid)
        assert reply.startswith("err") and "too few" in reply, reply
        assert policy_of(p.pid) == os.SCHED_OTHER
        assert "members=0 granted=0" in h.ok("info wide")


def test_zz_no_test_cgroup_left():
    assert_no_test_cgroup_left()
