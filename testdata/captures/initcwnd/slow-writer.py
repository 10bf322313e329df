# A keep-alive HTTP server whose first answer on a connection is 300 KB written at once (the
# window grows) and whose later answers are 64 KB written 8 KB every 50 ms (the application's
# pace, not the window's). slow-writer.py ADDR PORT
import socket, sys, threading, time
BIG = b"x" * 300000
def serve(c):
    n = 0
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = c.recv(4096)
            if not d:
                c.close(); return
            buf += d
        buf = buf.split(b"\r\n\r\n", 1)[1]
        body = BIG if n == 0 else b"y" * 65536
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        if n == 0:
            c.sendall(body)
        else:
            for k in range(0, len(body), 8192):
                c.sendall(body[k:k + 8192]); time.sleep(0.05)
        n += 1
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2]))); l.listen(8)
while True:
    c, _ = l.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
