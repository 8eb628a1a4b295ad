"""A collective across the nodes of a multi-node job: every rank holds a shard of the data, and an
all-reduce (a reduce to rank 0, then a broadcast back) gives every rank the global result.

It uses nothing but the rendezvous variables Azure ML sets for a PyTorch-distributed job (MASTER_ADDR,
MASTER_PORT, RANK, WORLD_SIZE) and TCP sockets, so it runs on any image, here and in Azure. With PyTorch
installed, `torch.distributed.init_process_group("gloo")` would rendezvous on the very same variables.
"""

import json
import os
import socket
import struct
import time

RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
MASTER = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
N = 1_000_000


def send(sock: socket.socket, value: int) -> None:
    sock.sendall(struct.pack("!Q", value))


def receive(sock: socket.socket) -> int:
    data = b""
    while len(data) < 8:
        chunk = sock.recv(8 - len(data))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        data += chunk
    return struct.unpack("!Q", data)[0]


def connect(deadline: float) -> socket.socket:
    """Rank 0 may still be starting: retry until it listens."""
    while True:
        try:
            return socket.create_connection(MASTER, timeout=5)
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def all_reduce(value: int) -> int:
    if RANK == 0:
        with socket.create_server(("0.0.0.0", MASTER[1]), backlog=WORLD) as server:
            peers = [server.accept()[0] for _ in range(WORLD - 1)]
            total = value + sum(receive(peer) for peer in peers)
            for peer in peers:
                send(peer, total)
                peer.close()
            return total
    with connect(time.time() + 120) as sock:
        send(sock, value)
        return receive(sock)


# Each rank sums the squares of its own shard of 0..N-1; the all-reduce adds the shards up.
shard = range(RANK, N, WORLD)
partial = sum(i * i for i in shard)
total = all_reduce(partial)
expected = (N - 1) * N * (2 * N - 1) // 6
print(f"rank {RANK}/{WORLD} on {socket.gethostname()}: partial {partial}, all-reduced {total}, "
      f"{'correct' if total == expected else 'WRONG'}")
if RANK == 0:
    os.makedirs("outputs", exist_ok=True)
    with open("outputs/result.json", "w") as f:
        json.dump({"world_size": WORLD, "sum_of_squares": total, "correct": total == expected}, f)
if total != expected:
    raise SystemExit(1)
