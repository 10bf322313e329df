"""The HTTP/2 test server of netdoctor's lab cases (crates/netdoctor-lab/src/h2case.rs embeds
it) and capture script (testdata/captures/make-h2.sh runs it): cleartext h2 with prior
knowledge on python3-h2, one thread per connection, or HTTP/1.1 with --http1.

usage: /usr/bin/python3 h2server.py HOST PORT [options]
  --body BYTES         response body size (default 2)
  --delay-ms MS        answer each request this long after it ended (default 0)
  --delay-max-ms MS    answer after a uniformly random time between --delay-ms and this
  --max-streams N      announce SETTINGS_MAX_CONCURRENT_STREAMS N (in force once acknowledged)
  --reset-every K      answer stream number K, 2K, 3K... (per connection, by stream id) with
                       RST_STREAM instead of a response
  --reset-code C       the RST_STREAM error code (default 7, REFUSED_STREAM)
  --status-every K:S   answer stream number K, 2K... with status S (e.g. 4:503)
  --nagle              no TCP_NODELAY; HEADERS and DATA in two writes (Nagle holds the second)
  --http1              HTTP/1.1 instead (same body, delay, status-every and nagle)
Windows stay at the protocol's 65 535 bytes; WINDOW_UPDATE goes out only for what was read.
"""
import argparse
import heapq
import random
import select
import socket
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("host")
p.add_argument("port", type=int)
p.add_argument("--body", type=int, default=2)
p.add_argument("--delay-ms", type=float, default=0.0)
p.add_argument("--delay-max-ms", type=float)
p.add_argument("--max-streams", type=int)
p.add_argument("--reset-every", type=int, default=0)
p.add_argument("--reset-code", type=int, default=7)
p.add_argument("--status-every", default="")
p.add_argument("--nagle", action="store_true")
p.add_argument("--http1", action="store_true")
a = p.parse_args()
every, every_status = (0, 200)
if a.status_every:
    k, s = a.status_every.split(":")
    every, every_status = int(k), int(s)
BODY = b"x" * a.body
DELAY = a.delay_ms / 1000.0
DELAY_MAX = max(a.delay_max_ms or 0.0, a.delay_ms) / 1000.0


def delay():
    return random.uniform(DELAY, DELAY_MAX)


def status_of(n):
    return every_status if every and n % every == 0 else 200


def serve_http1():
    import http.server

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = not a.nagle
        count = 0

        def answer(self):
            n = int(self.headers.get("content-length") or 0)
            if n:
                self.rfile.read(n)
            time.sleep(delay())
            H.count += 1
            self.send_response(status_of(H.count))
            self.send_header("content-length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        do_GET = do_POST = answer

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer.allow_reuse_address = True
    http.server.ThreadingHTTPServer((a.host, a.port), H).serve_forever()


if not a.http1:
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    import h2.settings


def serve_h2(c):
    if not a.nagle:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    if a.max_streams:
        conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: a.max_streams})
    c.sendall(conn.data_to_send())
    due = []  # (time, stream id): requests to answer
    body_left = {}  # stream id -> body bytes not yet sent (flow control)

    def pump():
        for sid in list(body_left):
            left = body_left[sid]
            try:
                while left:
                    n = min(len(left), conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
                    if n <= 0:
                        break
                    conn.send_data(sid, left[:n], end_stream=n == len(left))
                    left = left[n:]
            except h2.exceptions.StreamClosedError:
                left = b""
            if left:
                body_left[sid] = left
            else:
                del body_left[sid]

    def answer(sid):
        n = (sid + 1) // 2
        try:
            if a.reset_every and n % a.reset_every == 0:
                conn.reset_stream(sid, error_code=a.reset_code)
                return
            conn.send_headers(sid, [(":status", str(status_of(n))), ("content-length", str(len(BODY)))])
        except h2.exceptions.StreamClosedError:
            return
        if a.nagle:
            c.sendall(conn.data_to_send())  # first write: HEADERS; DATA waits behind it
        body_left[sid] = BODY
        pump()

    while True:
        timeout = max(0.0, due[0][0] - time.monotonic()) if due else None
        data = None
        if select.select([c], [], [], timeout)[0]:
            try:
                data = c.recv(65536)
            except OSError:
                break
            if not data:
                break
        if data:
            try:
                events = conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                c.sendall(conn.data_to_send())
                break
            for ev in events:
                if isinstance(ev, h2.events.DataReceived):
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    heapq.heappush(due, (time.monotonic() + delay(), ev.stream_id))
                elif isinstance(ev, h2.events.StreamReset):
                    body_left.pop(ev.stream_id, None)
            if body_left:
                pump()
        now = time.monotonic()
        while due and due[0][0] <= now:
            answer(heapq.heappop(due)[1])
        out = conn.data_to_send()
        if out:
            try:
                c.sendall(out)
            except OSError:
                break
    c.close()


if a.http1:
    serve_http1()
else:
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.host, a.port))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve_h2, args=(c,), daemon=True).start()
