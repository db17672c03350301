"""The engine benchmark's workload in SimPy 4: what a user would otherwise write.

    pip install simpy
    python3 bench/peers/simpy_model.py NODES MSGS ring|shift|rand [REPS]

prints `completion sum_completion sum_latency events wall_s` (the wall time
is the best of REPS runs, each from scratch), as bench/peers/heap.rs does;
the two must agree exactly.

The workload (integer cycles): every node sends MSGS messages of 32 packets,
all posted at cycle 0, one after another: set a message up (20 cycles of the
node's protocol processor), then send its packets (12 each). A packet goes
into the outbox (the one on the wire plus two waiting); a send that finds it
full holds the processor until a slot frees. On the wire 40 cycles, it
arrives 22 later. Receiving takes 10 cycles, 16 more for a message's last
packet, whose end completes the message. A processor serves arrived packets
(by arrival, source, message, packet) before its own work, and every event of
a cycle is applied before any idle processor picks its next job in it.
"""

import heapq
import sys
import time

import simpy

PACKETS = 32
SETUP, SEND, RECV, LAST = 20, 12, 10, 16
WIRE, LATENCY, OUTBOX = 40, 22, 3
MASK = (1 << 64) - 1


class Node:
    def __init__(self, i):
        self.i = i
        self.inbox = []  # (arrival, source, message, packet, setup start)
        self.msg = 0
        self.pkt = 0
        self.sending = None  # (destination, setup start)
        self.lcg = (i * 0x9E3779B97F4A7C15 + 1) & MASK
        self.outbox = []  # when each packet in the outbox leaves the wire
        self.wire_free = 0
        self.wake = None


class Model:
    def __init__(self, n, msgs, pattern):
        self.env = simpy.Environment()
        self.nodes = [Node(i) for i in range(n)]
        self.msgs = msgs
        self.pattern = pattern
        self.completion = 0
        self.sum_completion = 0
        self.sum_latency = 0
        for node in self.nodes:
            self.env.process(self.processor(node))

    def dest(self, node, j):
        n, i = len(self.nodes), node.i
        if self.pattern == "ring":
            return (i + 1) % n
        if self.pattern == "shift":
            return (i + 1 + j % (n - 1)) % n
        node.lcg = (node.lcg * 6364136223846793005 + 1442695040888963407) & MASK
        return (i + 1 + (node.lcg >> 33) % (n - 1)) % n

    def arrive(self, to, packet):
        node = self.nodes[to]
        heapq.heappush(node.inbox, (self.env.now,) + packet)
        if node.wake is not None and not node.wake.triggered:
            node.wake.succeed()

    def send(self, node):
        """Hand the finished packet to the outbox (the caller made room)."""
        env = self.env
        to, start = node.sending
        begin = max(env.now, node.wire_free)
        node.wire_free = begin + WIRE
        node.outbox.append(node.wire_free)
        packet = (node.i, node.msg, node.pkt, start)
        ev = env.timeout(begin + WIRE + LATENCY - env.now)
        ev.callbacks.append(lambda _e, to=to, packet=packet: self.arrive(to, packet))
        node.pkt += 1
        if node.pkt == PACKETS:
            node.pkt, node.sending = 0, None
            node.msg += 1

    def processor(self, node):
        env = self.env
        while True:
            # Let every event of this cycle land before choosing.
            yield env.timeout(0)
            if node.inbox and node.inbox[0][0] <= env.now:
                _, _, _, pkt, start = heapq.heappop(node.inbox)
                last = pkt + 1 == PACKETS
                yield env.timeout(RECV + (LAST if last else 0))
                if last:
                    self.completion = max(self.completion, env.now)
                    self.sum_completion += env.now
                    self.sum_latency += env.now - start
                continue
            if node.msg < self.msgs:
                if node.sending is None:
                    node.sending = (self.dest(node, node.msg), env.now)
                    yield env.timeout(SETUP)
                    continue
                yield env.timeout(SEND)
                node.outbox = [e for e in node.outbox if e > env.now]
                if len(node.outbox) >= OUTBOX:
                    # Held until the packet on the wire leaves it.
                    yield env.timeout(node.outbox[0] - env.now)
                    node.outbox = [e for e in node.outbox if e > env.now]
                self.send(node)
                continue
            node.wake = env.event()
            yield node.wake


def main():
    usage = "usage: simpy_model.py NODES MSGS ring|shift|rand [REPS]"
    try:
        n, m, pattern = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
        reps = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    except (IndexError, ValueError):
        sys.exit(usage)
    if n < 2 or m < 1 or reps < 1 or pattern not in ("ring", "shift", "rand"):
        sys.exit(usage)
    best, out = float("inf"), None
    for _ in range(reps):
        clock = time.perf_counter()
        model = Model(n, m, pattern)
        model.env.run()
        best = min(best, time.perf_counter() - clock)
        out = (model.completion, model.sum_completion, model.sum_latency)
    events = n * m * (1 + 4 * PACKETS)
    print(f"{out[0]} {out[1]} {out[2]} {events} {best:.3f}")


if __name__ == "__main__":
    main()
