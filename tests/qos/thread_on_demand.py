"""Test workload: prints "ready", then starts one sleeping thread for every
line read from stdin and prints that thread's tid (shared by the qos kernel
tests and the integration tests, which both watch a new thread's policy)."""
import sys
import threading
import time


def main():
    print("ready", flush=True)
    for _ in sys.stdin:
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
