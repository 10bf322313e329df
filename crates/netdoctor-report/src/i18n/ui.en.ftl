# Headings and labels of the terminal and HTML reports and of `demo`, in English.
# ui.zh.ftl holds the same message ids (a test fails otherwise). Arguments arrive formatted
# ("43.8 ms", "45,123"), except counts that choose a plural form ($n).

## Words for the JSON enums: word-<JSON word> (verdict, severity, side, layer, check status)

word-problem = problem
word-healthy = healthy
word-inconclusive = inconclusive
word-critical = critical
word-warning = warning
word-info = info
word-server = server
word-client = client
word-network = network
word-host = host
word-link = link
word-transport = transport
word-application = application
word-dns = dns
word-ok = ok
word-skipped = skipped
word-failed = failed

## Terminal report

term-interrupted = interrupted: the run was stopped early; this report covers what was measured until then
term-measured = Measured
term-syn-rtt = SYN RTT
term-syn-raw = raw SYN, kernel timestamps
term-syn-connect = connect() timing
term-syn-line = { $median } median (min { $min }, max { $max }; { $answered }/{ $sent } answered, { $how })
term-syn-refused = refused: { $refused } of { $sent } SYNs answered with RST (nothing listens)
term-syn-none = no answer to { $sent } SYNs ({ $how })
term-one-request = One request
term-tls = TLS { $tls }
term-one-request-line = connect { $connect }{ $tls } · first byte { $first } · total { $total }  (HTTP { $status }, { $bytes } bytes; median of 3)
term-under-load = Under load
term-load-line = { $connections } connections, { $duration } s: { $requests } requests, { $rps } req/s, errors { $errors }
term-p-line = p50 { $p50 } · p90 { $p90 } · p99 { $p99 } · max { $max }
term-first-error = first error: { $error }
term-captured = Captured
term-read = Read
term-capture-line = { $packets } packets ({ $drops } dropped) on { $conns } connections, { $exchanges } { $http ->
    [yes] HTTP exchanges
   *[no] exchanges
}
term-handshake-rtt = ; handshake RTT { $rtt }
term-exchange-line = exchange latency p50 { $p50 } · p99 { $p99 }; server time p50 { $server }{ $rtt }
term-exchanges-turns = exchanges found from direction turns (payload not HTTP/1.x)
term-exchanges-mixed = exchanges found from HTTP/1.x requests and direction turns (mixed)
term-pcap-written = packets written to { $path }
term-warning = warning:
term-sockets = Server sockets
term-sockets-listen-only = { $process } (pid { $pid }): only its listening socket was open when sampled; no connection's options to show
term-sockets-line = { $process } (pid { $pid }): TCP_NODELAY off on { $off } of { $n } sampled connections, TCP_CORK on { $corked }
term-kernel = Kernel
term-nothing = nothing (see checks below)
term-bd-line = a typical request (p50) { $latency } = { $parts }
term-bd-network = { $v } network
term-bd-server = { $v } server
term-bd-transfer = { $v } transfer
term-stall-nagle = Nagle/delayed ACK
term-stall-delayed-ack = delayed-ACK stall
term-stall-loss = loss recovery
term-stall-rto = retransmission timeouts
term-stall-zero-window = zero window
term-verdict = Verdict:
term-verdict-problem = { $n } { $n ->
    [one] finding
   *[other] findings
}; the first one explains most of the latency
term-verdict-healthy = no problem found in what was checked
term-verdict-inconclusive = not enough was observed to judge; see the checks below
term-finding-meta = ({ $layer }, side: { $side }, confidence { $confidence })
term-why = Why:
term-evidence = Evidence:
term-fix = Fix:
term-ev-connection = connection { $connection }
term-ev-counter = counter { $name }: { $before } → { $after }
term-ev-socket = socket of pid { $pid } (fd { $fd }): { $option } = { $value }
term-ev-probe = probe { $probe }:
term-ev-log = kernel log: { $line }
term-checks = Checks

## Two runs side by side (demo)

cmp-syn = SYN RTT (median)
cmp-one-request = one request (total)
cmp-rps = requests/s under load
cmp-p50 = latency p50 under load
cmp-p99 = latency p99 under load
cmp-verdict = verdict
