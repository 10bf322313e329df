"""HTTP server for the lost_answer test: `big` answers 200 KB at once, `hang` reads the
request and never answers, `slow` answers after 1.5 s (after
lost_answer.rs's 1 s request timeout, inside its 2 s run). argv: MODE ADDR PORT."""
import http.server
import sys
import time

MODE, ADDR, PORT = sys.argv[1], sys.argv[2], int(sys.argv[3])
BODY = b"x" * 200_000


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        if MODE == "hang":
            time.sleep(30)
            return
        if MODE == "slow":
            time.sleep(1.5)
        body = BODY if MODE == "big" else b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer((ADDR, PORT), H).serve_forever()
