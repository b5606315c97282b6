"""`gateway_dev.localrun.free_port`: the ports servers in tests, the demo and the benchmarks are started on."""

from __future__ import annotations

import socket

from gateway_dev.localrun import _ephemeral_floor, free_port


def test_free_port_gives_consecutive_bindable_ports_below_the_ephemeral_range() -> None:
    for count in (1, 3):
        port = free_port(count)
        assert port >= 1024 and port + count <= _ephemeral_floor()
        socks = [socket.socket() for _ in range(count)]
        try:
            for i, s in enumerate(socks):
                s.bind(("127.0.0.1", port + i))
        finally:
            for s in socks:
                s.close()

