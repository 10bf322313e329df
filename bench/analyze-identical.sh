#!/usr/bin/env bash
# bench/analyze-identical.sh OLD_BINARY NEW_BINARY [CAPTURE...]
#
# Checks that two netdoctor binaries give the same analysis of every capture: the JSON report of
# `analyze -j 1 --json` and of `analyze -j 2 --json` (elapsed_s aside), the terminal report
# (its elapsed-time line aside) and the per-segment flags of `--dump-flags`. For a change meant
# to make the per-packet path cheaper without changing any output.
#
# Captures: those given, else every pcap/pcapng file committed in the repository, every file
# in /work/shared/realworld-pcaps (CORPUS=DIR to change; skipped when missing) and the bench
# captures in CACHE (default /tmp/netdoctor-bench-cache) when present.
# Prints one line per capture that differs and the first lines of its diff; exit 1 when any
# differs. Needs jq.
set -euo pipefail
export NETDOCTOR_QUIET=1
[[ $# -ge 2 ]] || {
    echo "usage: $0 OLD_BINARY NEW_BINARY [CAPTURE...]" >&2
    exit 2
}
old="$1"
new="$2"
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
command -v jq >/dev/null || {
    echo "skipped: needs jq (apt-get install jq)" >&2
    exit 2
}
work="$(mktemp -d /tmp/netdoctor-identical.XXXXXX)"
trap 'rm -rf "$work"' EXIT

caps=("$@")
if [[ ${#caps[@]} -eq 0 ]]; then
    while IFS= read -r f; do caps+=("$root/$f"); done < <(git -C "$root" ls-files |
        grep -E '\.(pcap|pcapng)(\.gz)?$')
    corpus="${CORPUS:-/work/shared/realworld-pcaps}"
    if [[ -d "$corpus" ]]; then
        for f in "$corpus"/*; do [[ -f "$f" && "$f" != *.md ]] && caps+=("$f"); done
    else
        echo "skipped: corpus $corpus missing" >&2
    fi
    cache="${CACHE:-/tmp/netdoctor-bench-cache}"
    for f in "$cache"/*.pcap; do [[ -f "$f" ]] && caps+=("$f"); done
fi

# dump BINARY CAPTURE OUT_PREFIX: every output of one binary on one capture.
dump() {
    local b="$1" f="$2" o="$3"
    { "$b" analyze -j 1 --json "$f" 2>&1 || echo "exit $?"; } | { jq -S 'del(.elapsed_s)' 2>/dev/null || cat; } >"$o.j1"
    { "$b" analyze -j 2 --json "$f" 2>&1 || echo "exit $?"; } | { jq -S 'del(.elapsed_s)' 2>/dev/null || cat; } >"$o.j2"
    { "$b" analyze -j 1 "$f" 2>&1 || echo "exit $?"; } | grep -v -i 'elapsed\|analy[sz]ed in' >"$o.txt" || true
    { "$b" analyze -j 1 --dump-flags "$o.flags" "$f" >/dev/null 2>&1 || echo "exit $?"; } >>"$o.flags"
}

differ=0
n=0
for f in "${caps[@]}"; do
    n=$((n + 1))
    dump "$old" "$f" "$work/old"
    dump "$new" "$f" "$work/new"
    for k in j1 j2 txt flags; do
        if ! cmp -s "$work/old.$k" "$work/new.$k"; then
            differ=$((differ + 1))
            echo "DIFFERS ($k): $f"
            diff "$work/old.$k" "$work/new.$k" | head -10 || true
        fi
    done
done
echo "$n captures, $differ outputs differ"
[[ $differ -eq 0 ]]
