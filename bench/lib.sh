# Shared by the bench scripts (`. "$(dirname "$0")/lib.sh"`): the netdoctor binary, tool
# checks, stopping processes by PID, namespaces made for a run, the load average.
# shellcheck shell=bash

# need TOOL [PACKAGE]: exits 2 with "missing: TOOL" (and how to install it) when TOOL is absent.
need() {
    command -v "$1" >/dev/null && return 0
    if [[ -n "${2:-}" ]]; then
        echo "missing: $1 (apt-get install -y $2)" >&2
    else
        echo "missing: $1" >&2
    fi
    exit 2
}

# netdoctor_binary DEFAULT_TARGET_DIR: sets NETDOCTOR, building it (release, quiet) into
# $CARGO_TARGET_DIR (DEFAULT_TARGET_DIR when unset) unless NETDOCTOR is already set.
netdoctor_binary() {
    [[ -n "${NETDOCTOR:-}" ]] && return 0
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$1}"
    (cd "$(dirname "${BASH_SOURCE[0]}")/.." && cargo build --release -q -p netdoctor)
    NETDOCTOR="$CARGO_TARGET_DIR/release/netdoctor"
}

# stop_pid PID: SIGTERM, up to 5 s for it to exit, then SIGKILL. An empty PID is no-op.
stop_pid() {
    local p="$1"
    [[ -n "$p" ]] || return 0
    kill "$p" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.05; done
    kill -9 "$p" 2>/dev/null || true
}

# netns_add NAME...: makes each namespace with its loopback up; netns_del_all removes every
# namespace made so (call it from the script's cleanup, after its processes are stopped).
BENCH_NETNS=()
netns_add() {
    local ns
    for ns in "$@"; do
        ip netns add "$ns"
        BENCH_NETNS+=("$ns")
        ip -n "$ns" link set lo up
    done
}
netns_del_all() {
    local ns
    for ns in "${BENCH_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
}

# load_average WHEN: "load average WHEN: 1m 5m 15m" (the machine may be shared).
load_average() { echo "load average $1: $(cut -d' ' -f1-3 /proc/loadavg)"; }

# nginx in namespace NS serving a 614-byte page on 127.0.0.1:80 (keep-alive, tcp_nodelay,
# NGINX_WORKERS workers, default 2), files and pid under WORK: the watched server of
# watch-overhead.sh and watch-ab.sh. Stop it by the pid in WORK/nginx.pid.
nginx_watched() {
    local ns=$1 work=$2
    mkdir -p "$work/html" "$work/logs" "$work/tmp"
    head -c 589 /dev/zero | tr '\0' x | sed 's/^/<html><body>/; s/$/<\/body><\/html>/' >"$work/html/index.html"
    cat >"$work/nginx.conf" <<CONF
worker_processes ${NGINX_WORKERS:-2};
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    default_type text/html;
    keepalive_requests 1000000;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { listen 127.0.0.1:80; tcp_nodelay on; root $work/html; }
}
CONF
    ip netns exec "$ns" nginx -c "$work/nginx.conf" -p "$work"
}
