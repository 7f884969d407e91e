#!/usr/bin/env python3
"""One process, two qosway-reserve-v1 connections: what the per-application
CPU limit (max-cpu) must count over both.

    reserve_pair_client.py BIG_PPM TINY_COUNT ASK_PPM

On the first connection it defines reserve "big" (qos, BIG_PPM of a 20 ms
period), then TINY_COUNT reserves "tN" of 1 us a second, split over both
connections (each may hold 64 objects), the newest last; then it asks on
the second connection for reserve "ask" at ASK_PPM.  Each answer is one
``<event> <json>`` line on stdout; the last is ``ask`` with the answer to
the final request.  The rate limit (10 set_params a second per
connection) is kept by waiting, so the run takes about TINY_COUNT / 20 s.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from wlcommon import connect, emit, exit_now  # noqa: E402
from _proto.qosway_reserve_v1 import QoswayReserveManagerV1, QoswayReserveV1  # noqa: E402

QOS = QoswayReserveV1.policy.qos.value
OTHER = QoswayReserveV1.policy.other.value
REFUSALS = {e.value: e.name for e in QoswayReserveV1.refusal}
PER_OBJECT_LIMIT = 64


class Connection:
    def __init__(self):
        self.display, _globals, bind = connect()
        self.manager = bind(QoswayReserveManagerV1, 1)
        self.objects = []
        self.sent = []   # set_params times, for the rate limit

    def define(self, name, period_us, slice_us):
        """get_reserve + set_params; returns ("granted"|"refused", message)."""
        obj = self.manager.get_reserve(name)
        self.objects.append(obj)
        answer = []
        obj.dispatcher["granted"] = lambda o: answer.append(("granted", ""))
        obj.dispatcher["refused"] = lambda o, reason, msg: answer.append(
            (REFUSALS.get(reason, str(reason)), msg))
        # At most 10 set_params in any second on this connection.
        now = time.monotonic()
        self.sent = [t for t in self.sent if now - t < 1.05]
        if len(self.sent) >= 9:
            time.sleep(1.05 - (now - self.sent[0]))
        self.sent.append(time.monotonic())
        obj.set_params(QOS, OTHER, period_us, slice_us, 0, 0)
        self.display.roundtrip()
        if not answer:
            return ("none", "")
        return answer[0]


def main():
    big_ppm, tiny, ask_ppm = (int(a) for a in sys.argv[1:4])
    first, second = Connection(), Connection()
    emit("ready", pid=os.getpid())
    ans = first.define("big", 20000, 20000 * big_ppm // 1000000)
    emit("big", answer=ans[0], message=ans[1])
    for i in range(tiny):
        conn = first if len(first.objects) < PER_OBJECT_LIMIT else second
        ans = conn.define("t%d" % i, 1000000, 1)
        if ans[0] != "granted":
            emit("tiny", index=i, answer=ans[0], message=ans[1])
    ans = second.define("ask", 20000, 20000 * ask_ppm // 1000000)
    emit("ask", answer=ans[0], message=ans[1])
    # Keep the connections until told to go, so the reserves stay held.
    sys.stdin.readline()
    exit_now(0)


if __name__ == "__main__":
    main()
