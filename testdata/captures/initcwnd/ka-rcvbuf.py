# Keep-alive downloads like ka.py, from a client whose receive buffer is small (SO_RCVBUF set
# before connect: its window stays small). ka-rcvbuf.py HOST PORT N IDLE RCVBUF
import socket, sys, time
host, port, n, idle, rcv = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcv)
s.connect((host, port))
buf = b""
for i in range(n):
    t = time.time()
    s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, buf = buf.split(b"\r\n\r\n", 1)
    length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(buf) < length:
        buf += s.recv(65536)
    buf = buf[length:]
    print("rcvbuf req %d: %d bytes %.1f ms" % (i, length, (time.time() - t) * 1000))
    time.sleep(idle)
s.close()
