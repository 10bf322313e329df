# Per server turn: flights of new data (a gap >= RTT/2 between new-data segments starts a flight),
# from a client-side capture. RTT = SYN/ACK -> client's ACK ... measured as SYN -> SYN/ACK at the client.
import subprocess, sys, collections
f = sys.argv[1]; port = sys.argv[2] if len(sys.argv) > 2 else "9090"; REV = len(sys.argv) > 3
out = subprocess.run(["tshark","-r",f,"-T","fields","-E","separator=|","-e","frame.time_epoch","-e","tcp.stream",
  "-e","tcp.srcport","-e","tcp.flags.syn","-e","tcp.flags.ack","-e","tcp.seq","-e","tcp.len","-e","tcp.ack",
  "-e","tcp.window_size","-e","tcp.analysis.retransmission"], capture_output=True, text=True).stdout
S = collections.defaultdict(list)
for l in out.splitlines():
    t,s,sp,syn,ack,seq,ln,ak,win,rx = l.split("|")
    if not s: continue
    S[int(s)].append((float(t), (sp == port) != REV, syn=="1", int(seq or 0), int(ln or 0), int(ak or 0), int(win or 0), rx!=""))
for s, P in sorted(S.items()):
    syn = [p for p in P if p[2]]
    if len(syn) < 2: continue
    rtt = syn[1][0] - syn[0][0]
    # turns: server data after a client request
    turns = []; cur = None; hi = 0; rx = 0; last_cli_req = None; cli_win = 0
    for t, srv, sy, seq, ln, ak, win, r in P:
        if not srv:
            cli_win = win
            if ln > 0: last_cli_req = t; cur = None
            continue
        if ln == 0: continue
        if r: rx += 1
        if cur is None:
            cur = {"req": last_cli_req, "flights": [], "last": None, "win": cli_win}; turns.append(cur)
        if seq + ln <= hi: continue
        hi = seq + ln
        if cur["last"] is None or t - cur["last"] >= rtt / 2:
            cur["flights"].append([t, 0, 0])
        cur["flights"][-1][1] += ln; cur["flights"][-1][2] += 1; cur["last"] = t
    for i, c in enumerate(turns):
        fl = c["flights"]; tot = sum(x[1] for x in fl)
        idle = (c["req"] - prev_end) if i and c["req"] else None
        print(f"stream {s} turn {i}: rtt {rtt*1e3:.2f} ms, bytes {tot}, flights {len(fl)}, first flight {fl[0][1]} B = {fl[0][1]/1448:.1f} MSS, "
              f"flight bytes {[x[1] for x in fl[:8]]}, req->last {((c['last']-c['req'])*1e3 if c['req'] else 0):.1f} ms, rwnd(raw) {c['win']}, retx {rx}"
              + (f", idle before {idle*1e3:.0f} ms" if idle is not None else ""))
        prev_end = c["last"]
