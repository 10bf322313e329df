#!/usr/bin/env python3
"""Servers and clients for the namespace captures made by make.sh (see README.md).

server PORT MODE [BODY]   listen on 0.0.0.0:PORT, print "ready" after listen(), serve forever
    keepalive   HTTP/1.1 keep-alive, BODY bytes per response, one write, TCP_NODELAY
    smallsnd    like keepalive, with SO_SNDBUF 4096: the kernel holds ~1 segment in flight
    reset       sends the headers and half the body, then closes with SO_LINGER 0 (RST)
    noaccept    listen(0) and never accept: the accept queue fills, SYNs get dropped
    closeidle   like keepalive, but closes (FIN) a connection idle for 0.3 s after a response
client MODE HOST PORT N [...]
    keepalive   N sequential requests on one connection, reading each response fully
    perconn     N requests, each on its own connection (connect, request, response, close)
    slowread    one request; SO_RCVBUF 4096, does not read for 0.5 s, then reads it all
    connect     N concurrent connects (3.5 s timeout each), then closes them
    hold        N sequential connects, each held open (silent) for 1.5 s, then closed
    reset       N requests, each on its own connection, to a server that resets mid-response
    refused     N connects to a port where nothing listens (RST instead of a handshake)
    afterfin    N connections: a request, its response, then it waits for the server's FIN
                without closing, and 0.2 s later sends another request (the server's kernel
                answers with a reset)
Every client loop is bounded in count and time.
"""
import socket
import struct
import sys
import threading
import time


def response(body_len):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n\r\n%s" % (
        body_len,
        b"x" * body_len,
    )


def serve_conn(c, mode, body_len):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == "closeidle":
        c.settimeout(0.3)
    if mode == "smallsnd":
        c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    resp = response(body_len)
    buf = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            buf += d
            while b"\r\n\r\n" in buf:
                _, buf = buf.split(b"\r\n\r\n", 1)
                if mode == "reset":
                    c.sendall(resp[: len(resp) // 2])
                    time.sleep(0.01)
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    c.close()
                    return
                c.sendall(resp)
    except OSError:  # also the idle timeout of closeidle
        pass
    c.close()


def server(port, mode, body_len):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(0 if mode == "noaccept" else 64)
    print("ready", flush=True)
    if mode == "noaccept":
        time.sleep(60)
        return
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve_conn, args=(c, mode, body_len), daemon=True).start()


def read_response(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise OSError("closed")
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    while len(rest) < n:
        d = s.recv(65536)
        if not d:
            raise OSError("closed")
        rest += d


REQ = b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n"


def client(mode, host, port, n):
    deadline = time.monotonic() + 20
    if mode == "keepalive":
        s = socket.create_connection((host, port), timeout=10)
        for _ in range(n):
            s.sendall(REQ)
            read_response(s)
        s.close()
    elif mode == "perconn":
        for _ in range(n):
            s = socket.create_connection((host, port), timeout=10)
            s.sendall(REQ)
            read_response(s)
            s.close()
    elif mode == "slowread":
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(10)
        s.connect((host, port))
        s.sendall(REQ)
        time.sleep(0.5)  # the application does not read: the receive window closes
        read_response(s)
        s.close()
    elif mode == "connect":
        socks = []
        threads = []

        def one():
            s = socket.socket()
            s.settimeout(3.5)
            try:
                s.connect((host, port))
            except OSError:
                pass
            socks.append(s)

        for _ in range(n):
            t = threading.Thread(target=one)
            t.start()
            threads.append(t)
            time.sleep(0.05)  # ordered SYNs, not a measurement
        for t in threads:
            t.join()
        for s in socks:
            s.close()
    elif mode == "hold":
        for _ in range(n):
            s = socket.create_connection((host, port), timeout=5)
            time.sleep(1.5)  # silent: only the handshake's ACK can complete it at the server
            s.close()
    elif mode == "reset":
        for _ in range(n):
            s = socket.create_connection((host, port), timeout=10)
            s.sendall(REQ)
            try:
                while s.recv(65536):
                    pass
            except OSError:
                pass  # connection reset by peer: expected
            s.close()
    elif mode == "afterfin":
        for _ in range(n):
            s = socket.create_connection((host, port), timeout=3)
            s.sendall(REQ)
            read_response(s)
            while s.recv(65536):  # until the server's FIN (bounded by the 3 s timeout)
                pass
            time.sleep(0.2)
            try:
                s.sendall(REQ)  # to a closed socket: the server's kernel resets
                s.recv(65536)
            except OSError:
                pass  # connection reset by peer: expected
            s.close()
    elif mode == "refused":
        for _ in range(n):
            try:
                socket.create_connection((host, port), timeout=2).close()
            except OSError:
                pass  # connection refused: expected
    if time.monotonic() > deadline:
        sys.exit("client took too long")


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 100)
    else:
        client(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
