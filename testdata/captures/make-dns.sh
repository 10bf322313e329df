#!/usr/bin/env bash
# DNS captures for `analyze::dns` (run as root): a client namespace nd-dns-cli (10.0.53.1)
# whose glibc resolver (getent, resolv.conf bind-mounted in a private mount namespace:
# `nameserver 10.0.53.2`, `options timeout:1 attempts:3`) asks dns-responder.py in
# nd-dns-srv (10.0.53.2) in one of its modes; tcpdump records port 53 on the client's veth.
#   ./make-dns.sh            all of them; ONLY="dns-tc" ./make-dns.sh just one
# dns-refused: every answer REFUSED; dns-lossy: every 3rd query dropped (12 names, A+AAAA);
# dns-ptr: A/AAAA answered, PTR dropped (getent hosts of two addresses); dns-slow: every
# answer after 300 ms; dns-tc: A answers truncated over UDP (TC), answered in full over TCP.
# Over TCP (`analyze::dns::tcp`): dns-tcp: `options use-vc` (every lookup over TCP), answered
# at once; dns-tcp-slow: use-vc, every answer after 300 ms; dns-tc-rst: A truncated over UDP,
# nothing listens on TCP 53 (the kernel resets the SYN); dns-tc-drop: the same with a DROP
# rule for TCP 53 in the server's namespace (glibc's connect waits: getent stopped after 4 s);
# dns-tc-slow: A truncated over UDP, the answers over TCP after 300 ms.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
source "$out/lib.sh"
lab_begin nd-dns
lab_netns nd-dns-cli nd-dns-srv
lab_veth nd-dns-cli nd-dns-srv dnc0 dns0 10.0.53.1 10.0.53.2
printf 'nameserver 10.0.53.2\noptions timeout:1 attempts:3\n' >"$work/resolv.conf"

ask() { # getent ARGS... in the client namespace with the lab's resolv.conf ($conf)
    ip netns exec nd-dns-cli unshare -m sh -c \
        "mount --bind '$work/${conf:-resolv.conf}' /etc/resolv.conf && timeout ${tmo:-60} getent $*" || true
}
printf 'nameserver 10.0.53.2\noptions timeout:1 attempts:3 use-vc\n' >"$work/resolv-vc.conf"

one() {
    local name=$1 mode=$2
    shift 2
    ip netns exec nd-dns-srv python3 "$out/dns-responder.py" 10.0.53.2 "$mode" >"$work/ns.log" 2>&1 &
    pids+=($!)
    local ns_pid=$!
    for _ in $(seq 1 100); do grep -q listening "$work/ns.log" && break; sleep 0.05; done
    ip netns exec nd-dns-cli tcpdump -U --immediate-mode -i dnc0 -w "$work/$name.pcap" 'port 53' 2>"$work/td.log" &
    pids+=($!)
    local td_pid=$!
    for _ in $(seq 1 100); do grep -q listening "$work/td.log" && break; sleep 0.05; done
    "$@"
    sleep 1.5 # the last frames reach the file before tcpdump stops
    kill "$td_pid" "$ns_pid"
    wait "$td_pid" "$ns_pid" 2>/dev/null || true
    gzip -9 -n -c "$work/$name.pcap" >"$out/$name.pcap.gz"
    echo "$name: $(tshark -r "$out/$name.pcap.gz" 2>/dev/null | wc -l) frames"
}

want() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }

refused() { ask ahosts api.lab; ask ahosts www.lab; }
lossy() { for i in $(seq 1 12); do ask ahosts "h$i.lab" >/dev/null; done; }
ptr() { ask ahosts api.lab; ask hosts 10.9.0.7; ask hosts 10.9.0.8; }
slow() { for i in 1 2 3 4; do ask ahosts "s$i.lab" >/dev/null; done; }
truncated() { ask ahosts big.lab >/dev/null; ask ahosts big2.lab >/dev/null; }
over_tcp() { for i in 1 2 3; do conf=resolv-vc.conf ask ahosts "t$i.lab" >/dev/null; done; }
tc_once() { ask ahosts big.lab >/dev/null; }
tc_drop() {
    ip netns exec nd-dns-srv iptables -A INPUT -p tcp --dport 53 -j DROP
    tmo=4 ask ahosts big.lab >/dev/null
}

want dns-refused && one dns-refused refused refused
want dns-lossy && one dns-lossy lossy lossy
want dns-ptr && one dns-ptr ptr ptr
want dns-slow && one dns-slow slow slow
want dns-tc && one dns-tc tc truncated
want dns-tcp && one dns-tcp plain over_tcp
want dns-tcp-slow && one dns-tcp-slow slow over_tcp
want dns-tc-slow && one dns-tc-slow tc-slow tc_once
want dns-tc-rst && one dns-tc-rst tc-notcp tc_once
want dns-tc-drop && one dns-tc-drop tc-notcp tc_drop
exit 0
