# Sourced by the make-*.sh capture scripts in this folder (not run on its own): the setup and
# teardown every one of them needs, written once, so that a fix to the cleanup reaches them all.
# A script sets `out` (its folder) and sources "$out/lib.sh".
#   lab_begin TAG        sets `work` (a fresh /tmp/TAG.XXXXXX) and the `pids` array, and
#                        traps exit (also on Ctrl-C or TERM): every PID in `pids` is stopped, an nginx whose pid file is "$work/nginx.pid" too,
#                        every namespace made by lab_netns is deleted (with its veth ends,
#                        iptables rules, qdiscs and sockets), and "$work" is removed.
#   lab_netns NAME...    makes network namespaces that the exit trap deletes.
#   lab_veth C S DEVC DEVS ADDRC ADDRS [gso1]
#                        joins namespaces C and S (made by lab_netns) by a veth pair DEVC/DEVS
#                        with ADDRC/24 and ADDRS/24, brings every device of both up (with
#                        `gso1`: GSO limited to one segment first, so the capture sees wire-size
#                        packets) and waits for DEVC's carrier.
# Nothing here touches the root namespace's sysctls, qdiscs or iptables.

lab_pids_stop() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    if [[ -f "$work/nginx.pid" ]]; then kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; fi
}

lab_cleanup() {
    lab_pids_stop
    local n
    if ((${#lab_namespaces[@]})); then
        sleep 0.2 # the stopped servers release their sockets before their namespace goes
        for n in "${lab_namespaces[@]}"; do ip netns del "$n" 2>/dev/null || true; done
    fi
    rm -rf "$work"
}

lab_begin() {
    work="$(mktemp -d "/tmp/$1.XXXXXX")"
    pids=()
    lab_namespaces=()
    trap lab_cleanup EXIT
    trap 'exit 130' INT TERM
}

lab_netns() {
    local n
    for n in "$@"; do
        ip netns add "$n"
        lab_namespaces+=("$n")
    done
}

lab_veth() {
    local c=$1 s=$2 devc=$3 devs=$4 ns dev
    ip link add "$devc" netns "$c" type veth peer name "$devs" netns "$s"
    ip -n "$c" addr add "$5/24" dev "$devc"
    ip -n "$s" addr add "$6/24" dev "$devs"
    for ns in "$c" "$s"; do
        for dev in $(ip netns exec "$ns" ls /sys/class/net); do
            if [[ "${7:-}" == gso1 ]]; then
                ip -n "$ns" link set "$dev" gso_max_segs 1 2>/dev/null || true
            fi
            ip -n "$ns" link set "$dev" up
        done
    done
    for _ in $(seq 1 100); do
        ip -n "$c" link show "$devc" | grep -q LOWER_UP && break
        sleep 0.02
    done
}
