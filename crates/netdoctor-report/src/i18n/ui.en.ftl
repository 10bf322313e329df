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
term-consequence-of = consequence of { $root } (above)
term-root-cause-of = root cause of: { $ids } (below)
html-consequence-of = Consequence of { $root } (above).
html-root-cause-of = Root cause of: { $ids } (below).
term-passive = passive: the target's real traffic was watched; no probe or load was sent
term-connect = connect()
term-connect-line = { $median } median (min { $min }, max { $max }; { $answered }/{ $sent } completed)
term-connect-some = { $answered } of { $sent } connect() calls completed
term-dns = DNS
term-dns-gai = getaddrinfo { $ms }
term-dns-gai-timeout = getaddrinfo timed out
term-dns-gai-error = getaddrinfo failed: { $error }
term-dns-server = { $server } udp { $ms }
term-dns-server-none = { $server } udp no answer ({ $answered }/{ $sent })
term-dns-no-dns = answered without DNS (/etc/hosts or localhost)
term-sep = {"; "}
term-route = Route
term-route-line = { $n } { $n ->
    [one] hop
   *[other] hops
} ({ $protocol }); RTT to the target min { $best }, median { $median }
term-route-unreached = { $n } { $n ->
    [one] hop
   *[other] hops
} probed ({ $protocol }); the target did not answer
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
term-exchange-line-cut = exchange latency unknown (no exchange ended before the capture did); server time p50 { $server }{ $rtt }
term-exchange-line-unseen = exchange latency unknown (no exchange's end was captured); server time p50 { $server }{ $rtt }
term-exchanges-turns = exchanges found from direction turns (payload not HTTP/1.x)
term-exchanges-mixed = exchanges found in more than one way (HTTP/1.x requests, HTTP/2 streams, direction turns: mixed)
term-exchanges-h2 = exchanges are HTTP/2 streams (cleartext h2c, read frame by frame)
term-exchanges-cut = { $n } of them cut by the end of the capture: their first byte counts, their latency is unknown
term-exchanges-lost = { $n } of them ended in frames the capture missed (their answer stopped mid-way, with no close, while the capture went on): their first byte counts, their latency is unknown
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
term-stall-syn = SYN retransmissions
term-tail-head = where the time went, per latency band (mean of the requests in the band):
term-tail-band = { $band } { $latency } = { $parts } ({ $n ->
    [one] 1 request
   *[other] { $n } requests
})
term-tail-cause = { $v } { $name } on { $pct } of the band
slo-head = SLO:
slo-pass = pass
slo-fail = fail
slo-inconclusive = inconclusive
slo-spare = { $value } ({ $margin } to spare; { $source })
slo-over = { $value } ({ $margin } over; { $source })
slo-points = { $v } points
html-slo = Service-level objectives (--slo)
html-slo-th-objective = objective
term-verdict = Verdict:
term-verdict-problem = { $n } { $n ->
    [one] finding
   *[other] findings
}; the first one explains most of the latency
term-verdict-problem-short = { $n } { $n ->
    [one] finding
   *[other] findings
}; the first one accounts for { $part } of a typical request's { $latency }: its largest part, { $largest }, is { $by }'s
term-verdict-problem-unexplained = { $n } { $n ->
    [one] finding
   *[other] findings
}; the first one accounts for { $part } of a typical request's { $latency }: its largest part, { $largest }, no finding explains
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

## Two runs compared (`diagnose --compare`, `--baseline`, and `demo`'s side by side)

cmp-title = netdoctor compare
cmp-origin-file = saved report { $file }
cmp-origin-saved = saved report
cmp-origin-run = this run
cmp-syn = SYN RTT (median)
cmp-one-request = one request (total)
cmp-rps = requests/s under load
cmp-p50 = latency p50 under load
cmp-p90 = latency p90
cmp-p99 = latency p99
cmp-max = latency max
cmp-requests = requests
cmp-errors = errors
cmp-verdict = verdict
cmp-latency = Latency:
cmp-latency-not-compared = not compared: { $reason }
cmp-no-histogram = no histogram
cmp-no-histogram-run = { $label } has no latency histogram
cmp-faster = B is faster
cmp-slower = B is slower
cmp-same = no significant difference
cmp-offered = Offered load:
cmp-offered-auto = both runs measured at { $rate } requests/s (open loop), 80 % of the slower side's capacity: in a closed loop A served { $a } and B { $b } requests/s, too far apart to compare latencies
cmp-offered-given = both runs measured at { $rate } requests/s (open loop, --rate)
cmp-mixed = mixed: some percentiles lower, others higher
cmp-median-lower = the median request is faster
cmp-median-higher = the median request is slower
cmp-median-same = no significant difference at the median
cmp-latency-test = { $head } (typical request ×{ $ratio }; Mann–Whitney U on the histograms: { $p }, Cliff's δ { $delta }, { $effect } effect; KS D { $ks }; { $na } vs { $nb } requests)
cmp-effect-negligible = negligible
cmp-effect-small = small
cmp-effect-medium = medium
cmp-effect-large = large
cmp-findings = Findings
cmp-no-findings = none in either run
cmp-side-impact = { $sev } +{ $ms } on { $pct } %
cmp-side-added = { $sev } +{ $ms }
cmp-counters = Kernel counters (change during each run)
cmp-change-fixed = fixed
cmp-change-improved = improved
cmp-change-unchanged = unchanged
cmp-change-worse = worse
cmp-change-new = new
cmp-change-inconclusive = inconclusive
cmp-head-fixed = B is healthy where A had a problem
cmp-head-improved = B is better than A
cmp-head-unchanged = no significant change from A to B
cmp-head-worse = B is worse than A
cmp-head-new = B has a problem A did not have
cmp-head-inconclusive = a run could not be judged
cmp-sum-faster = latency significantly lower
cmp-sum-slower = latency significantly higher
cmp-sum-same = no significant latency difference
cmp-sum-not-compared = latency not compared
cmp-sum-mixed = latency mixed
cmp-sum-stalled = stalled requests { $a } → { $b }
cmp-sum-rps = ×{ $ratio } the requests/s
cmp-sum-median-load-up = the median rose because B carried ×{ $ratio } the requests/s in a closed loop (more requests queue at once), not because requests got slower
cmp-sum-median-load-down = the median fell only because B carried ×{ $ratio } the requests/s in a closed loop (fewer requests queue at once)
cmp-sum-starved = not conclusive about latency: run { $run }'s load generator waited for a CPU { $share } of its time (run { $other }: { $other_share }), which alone makes run { $run } the slower one; run again on a quieter host or with the load generator on another machine
cmp-sum-starved-tail = the p99 ({ $p99 }) is not compared: run { $run }'s requests waited for a CPU in the load generator { $wait } at the 99th percentile (run { $other }: { $other_wait }), which with the server's own waits on the same host can alone make run { $run }'s tail the slower one; run again on a quieter host or with the load generator on another machine
cmp-sum-busy-median = the medians ({ $p50 }) are not compared: run { $run } was measured on a busy host (its requests waited for a CPU in the load generator { $wait } at the 99th percentile, run { $other }: { $other_wait }), and a busy host moves a short request's p50 either way, by up to { $bound } (CPUs kept busy by other work ran its wake-ups faster here, as well as later); run again on a quieter host
cmp-sum-list = { $word }: { $ids }
cmp-sum-latency = { $lat } ({ $p50 })
cmp-html-title = netdoctor compare: { $verdict } – { $a } vs { $b }
cmp-html-footer = netdoctor { $version } · comparison schema { $schema } · this page is self-contained: no script, nothing fetched
cmp-html-runs = The two runs
cmp-html-th-run = run
cmp-html-th-target = target
cmp-html-th-from = from
cmp-html-th-findings = findings
cmp-html-this-run = this run ({ $s } s)
cmp-html-none-above-info = none above info
cmp-html-latency = Latency distributions
cmp-html-not-compared = Latency not compared: { $reason }.
cmp-html-same = No significant difference
cmp-html-latency-test = <b>{ $head }</b>: a typical B request takes ×{ $ratio } the time of a typical A request (Hodges–Lehmann, { $shift } histogram buckets); Mann–Whitney U on the two histograms, { $p }, Cliff's δ { $delta } ({ $effect } effect), Kolmogorov–Smirnov D { $ks }; { $na } and { $nb } requests. A difference counts when p &lt; { $alpha }, |δ| ≥ { $min_effect } and the shift is at least { $min_shift } buckets (×1.26).
cmp-html-hist-caption = Share of each run's requests per latency bucket (log scale)
cmp-html-no-hist = Latency histograms not measured.
cmp-html-curve-caption = Latency at each percentile
cmp-html-side-impact = { $sev }: +{ $ms } on { $pct } %
cmp-html-side-added = { $sev }: +{ $ms }
cmp-html-no-findings = No finding in either run.
cmp-html-th-finding = finding
cmp-html-th-summary = summary
cmp-html-still-to-fix = Still to fix in B ({ $id }):
cmp-html-counters = Kernel counters: change during each run
cmp-html-no-counters = Kernel counters not measured in either run.
cmp-svg-histograms = latency histograms of A and B
cmp-svg-tip = { $name }: { $from } – { $to }: { $count } requests ({ $pct } %)
cmp-svg-share = % of requests
cmp-svg-curves = latency percentile curves of A and B
cmp-svg-max = max
cmp-svg-ms-log = ms (log)

## HTML report (arguments that come from the report arrive HTML-escaped)

html-not-measured = { $what } not measured.
html-not-measured-because = { $what } not measured: { $reason }.
html-footer = netdoctor { $version } · report schema { $schema } · this page is self-contained: no script, nothing fetched
html-headline-problem = a problem was found
html-headline-healthy = No problem found: nothing above info
html-headline-inconclusive = Not enough evidence to call it healthy: see the checks below
html-finding-counts = { $n } { $n ->
    [one] finding
   *[other] findings
}: { $critical } critical, { $warning } warning, { $info } info
html-took = took { $s } s
html-findings = Findings
html-no-findings = No findings.
html-finding-meta = { $layer } layer · side: { $side } · confidence { $confidence } %
html-impact = Impact: { $impact }
html-impact-adds = adds { $ms } per affected request
html-impact-affected = { $pct } % affected
html-fix = Fix
html-ev-counter = counter <code>{ $name }</code>: { $before } → { $after } ({ $change })
html-ev-socket = socket option <code>{ $option }</code> = <code>{ $value }</code> (pid { $pid }, fd { $fd })
html-ev-probe = probe { $probe }:
html-ev-log = kernel log <code>{ $line }</code>
html-ev-packets = packets on { $n } { $n ->
    [one] connection
   *[other] connections
}: <a href="{ $href }">flow graph below</a>
html-packet-evidence = Packet evidence
html-no-packet-finding = No finding rests on packets: no flow graph to draw.
html-ladder-title = <code>{ $id }</code> on { $connection }
html-more-connections = { $n } more { $n ->
    [one] connection
   *[other] connections
} with the same evidence
html-th-connection = connection
html-th-frames = frames
html-th-packets-show = what the packets show
html-latency = Latency distribution
html-load-lead = { $requests } requests over { $duration } s on { $connections } connections ({ $rps } req/s): p50 <b>{ $p50 }</b>, p90 { $p90 }, p99 <b>{ $p99 }</b>, max { $max }.
html-histogram-caption = How many requests took how long (log scale, buckets 12 % wide; hover a bar for its count)
html-histogram = Latency histogram
html-no-request-completed = no request completed
html-no-histogram-data = this report has no histogram data
html-curve-caption = Percentile curve: the latency that the given share of requests stayed at or under; the right-hand side is the tail
html-load = Load
html-capture-lead = In the capture: { $n } HTTP { $n ->
    [one] exchange
   *[other] exchanges
} (first request byte to last response byte at the capture point): p50 <b>{ $p50 }</b>, p90 { $p90 }, p99 <b>{ $p99 }</b>, max { $max }{ $rtt }.
html-capture-lead-cut = In the capture: { $n } HTTP { $n ->
    [one] exchange
   *[other] exchanges
}, none of them ended before the capture did: latency unknown{ $rtt }.
html-capture-lead-unseen = In the capture: { $n } HTTP { $n ->
    [one] exchange
   *[other] exchanges
}, the end of none of them was captured: latency unknown{ $rtt }.
html-handshake-rtt = ; handshake RTT { $rtt }
html-baseline-syn = TCP handshake RTT <b>{ $rtt }</b> (median of { $answered } answered, { $method })
html-baseline-http = one request <b>{ $total }</b> (connect { $connect }{ $tls }, first byte { $first } from the start, HTTP { $status })
html-baseline-tls = , TLS { $tls }
html-baseline = Alone, before the load: { $parts }.
html-list-sep = {"; "}
html-status-lead = Responses by status: { $codes }. Errors: <b>{ $total }</b>
html-none = none
html-error-kinds = (connect { $connect }, read { $read }, write { $write }, timeout { $timeout }, HTTP status { $status })
html-first-error = ; the first: <code>{ $error }</code>
html-end = .
html-over-time = Over the run
html-timeline-caption = Requests per second (errors in red) and the latency of each second's responses
html-no-per-second = this report has no per-second data
html-timeline = Requests/s and latency over time
html-tables = Capture, counters and sockets
html-capture = Capture
html-th-packets = packets
html-th-segments = TCP segments
html-th-connections = connections
html-with-handshake = { $n } with handshake
html-th-duration = duration
html-th-retransmitted = retransmitted segments
html-th-dropped = dropped by the kernel
html-counters = Kernel counters that changed
html-th-counter = counter
html-th-before = before
html-th-after = after
html-th-change = change
html-no-counter-changed = No counter changed during the run.
html-kernel-counters = Kernel counters
html-sockets = Socket options of the server
html-th-process = process
html-th-state = state
html-th-local = local
html-nodelay-on = on (Nagle off)
html-nodelay-off = off (Nagle on)
html-nodelay-listen-on = on (a listener sends nothing)
html-nodelay-listen-off = off (a listener sends nothing)
html-socket-options = Socket options
html-offline = offline analysis of a capture file
html-not-local = the server is not a process on this host, or it was not read
html-breakdown = Where the time of a request went
html-bar-typical = typical request (p50)
html-bar-mean = mean of all requests
html-tail-caption = Where the tail goes: the requests of each latency band (p50, p90, p99, p99.9, max), each bar its band's whole latency; a stall part says on what share of the band's requests it happened
html-bar-band = { $band } · { $n } req.
html-part-share = { $part } (on { $pct } % of the band's requests)
html-breakdown-caption = Each request's latency split into the network RTT, the server's think time, transferring the bytes, and stalls by their cause (from the capture)
html-no-complete-exchange = the capture held no complete HTTP exchange
html-per-request-breakdown = The per-request breakdown
html-checks = Checks
html-th-check = check
html-th-status = status
html-th-note = note

## HTML charts and flow graphs

chart-histogram = latency histogram
chart-latency-log = latency (ms, log scale)
chart-requests = requests
chart-curve = latency percentile curve
chart-percentile = percentile (of requests at or below the latency)
chart-timeline = requests per second and latency over the run
chart-rps = requests/s
chart-latency-ms = latency (ms)
chart-time = time since the start of the load
chart-part-network = network (one RTT)
chart-part-server = server processing
chart-part-transfer = transfer
chart-part-stall = stall: { $id }
chart-breakdown = per-request breakdown
ladder-title = flow graph of { $connection }: { $n } packets
ladder-frame-time = frame · time
ladder-gap = { $ms } gap
ladder-in-flight = in flight, waiting for its ACK
ladder-late-ack = late ACK: the delayed-ACK timer fired
ladder-held = held segment: Nagle kept it until the ACK
ladder-next = next segment: waited for the ACK
ladder-original = original transmission
ladder-retransmission = retransmission
ladder-window-zero = window 0 advertised
ladder-window-reopened = window reopened
ladder-request-complete = request complete
ladder-first-byte = first response byte
ladder-gap-delayed-ack = delayed ACK: the receiver's ACK timer (≥ 40 ms on Linux)
ladder-gap-rto = retransmission timeout (RTO, ≥ 200 ms)
ladder-gap-loss = waiting to retransmit a lost segment
ladder-gap-zero-window = receive window closed: the sender may not send
ladder-gap-server = server processing time
ladder-gap-syn = SYN / SYN-ACK retransmission timer (1 s)
ladder-gap-longest = longest gap

## netdoctor demo

demo-server-nginx = nginx
demo-server-builtin = netdoctor's built-in reference server (not nginx)
demo-intro-1 = The reference case: the same server and page twice, once with `tcp_nodelay on;` and once with
demo-intro-2 = `tcp_nodelay off;`, loaded with { $connections } keep-alive connections from another network namespace.
demo-server = Server: { $server }.
demo-same-alone = One request and the SYN RTT look the same on both; only under concurrency does the difference show.
demo-full-report = netdoctor's full report on the slow server:
demo-as-expected = The fast server came out healthy; the slow one's root cause was found from its packets.
demo-try-it = Try it yourself: `netdoctor lab start`, then `netdoctor diagnose --netns netdoctor-cli http://…`.
demo-unexpected = The demo did not come out as expected (tcp_nodelay on: { $on }, off: { $off }). On a very busy machine the
demo-unexpected-2 = load may not reach the stall; run `netdoctor demo --json` for details.
demo-no-ebpf = Built without the eBPF observers: `apt-get install clang libbpf-dev bpftool` and build again to add the kernel's drops by reason, retransmits per connection and TCP state changes to every diagnose (check `bpf`).
demo-no-finding = no finding

chart-bulk = throughput and bytes in flight against the advertised window over the transfer
chart-mbits = Mbit/s
chart-inflight-window = KB in flight / window
html-bulk = Bulk transfers
html-bulk-server-sends = the server sends
html-bulk-client-sends = the client sends
html-bulk-retransmitted = retransmitted
html-bulk-inflight = largest in flight per interval
html-bulk-window = smallest advertised window per interval
