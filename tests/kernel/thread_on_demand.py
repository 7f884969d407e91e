"""Test workload: prints "ready", then starts one sleeping thread for every
line read from stdin and prints that thread's tid (shared by the qos kernel
tests and the integration tests, which both watch a new thread's policy).
The lines "spin" and "rest" instead start and stop a busy thread, so that
the process overruns a small reserve; each is answered "ok".  "forker"
starts a thread that prints its tid and then, for each "fork", starts
`sleep 60` itself (so the child is born in that thread's cgroups) and
prints the child's pid."""
import subprocess
import sys
import threading
import time


def main():
    spinning = threading.Event()
    fork_asked = threading.Event()

    def forker():
        print(threading.get_native_id(), flush=True)
        while True:
            fork_asked.wait()
            fork_asked.clear()
            print(subprocess.Popen(["sleep", "60"]).pid, flush=True)

    def spin():
        while True:
            spinning.wait()
            while spinning.is_set():
                pass
    threading.Thread(target=spin, daemon=True).start()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() in ("spin", "rest"):
            (spinning.set if line.strip() == "spin" else spinning.clear)()
            print("ok", flush=True)
            continue
        if line.strip() in ("forker", "fork"):
            if line.strip() == "fork":
                fork_asked.set()
            else:
                threading.Thread(target=forker, daemon=True).start()
            continue
        got, ready = [], threading.Event()

        def run():
            got.append(threading.get_native_id())
            ready.set()
            time.sleep(60)
        threading.Thread(target=run, daemon=True).start()
        ready.wait()
        print(got[0], flush=True)


if __name__ == "__main__":
    main()
