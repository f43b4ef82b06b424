"""A TCP forwarder across network namespaces: listens on 127.0.0.1:PORT inside a named netns (/run/netns/NAME) and
relays each connection to 127.0.0.1:PORT of the namespace it was started in (the API server, for the real node).

Run as `python -m tests.real.nsforward NETNS PORT`; prints `listening` once the socket is bound."""

from __future__ import annotations

import ctypes
import os
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000  # linux/sched.h


def setns(fd: int) -> None:
    """Move the calling thread into the network namespace open at ``fd``."""
    if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def listen_in(netns: str, port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` of the named netns; the thread is back in its own netns after."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        setns(target)
        try:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(64)
        finally:
            setns(home)
    finally:
        os.close(home)
        os.close(target)
    return sock


def pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` until EOF, then half-close ``dst``."""
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def relay(client: socket.socket, port: int) -> None:
    try:
        upstream = socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError:
        client.close()
        return
    upstream.settimeout(None)
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main() -> None:
    netns, port = sys.argv[1], int(sys.argv[2])
    sock = listen_in(netns, port)
    print("listening", flush=True)
    while True:
        client, _addr = sock.accept()
        threading.Thread(target=relay, args=(client, port), daemon=True).start()


if __name__ == "__main__":
    main()
