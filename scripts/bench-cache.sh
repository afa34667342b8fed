#!/usr/bin/env bash
# Measures the shared result cache at a team's scale (issue 36): a store of N
# small samples (default 10,000: 10 workloads x 10 sweeps x N/100 values,
# committed by examples/fill_store.rs, each a real sim run's result.json and
# engine log) is pushed to a directory, to Debian's docker-registry and to
# an S3 bucket of s3s-fs (scripts/real-s3.sh installs it); the directory is
# also served by a static HTTP server (python3 -m http.server). Then a
# second, empty store plans and runs the study from each cache.
# Reported per cache kind: requests per key `plan` looked up, bytes `plan`
# read, wall time and peak RSS (/usr/bin/time -v) of push, plan and run
# (the pull, then the study's report).
# Everything happens in a temporary directory; the repo is not touched.
# Usage: scripts/bench-cache.sh [PERFPIPE_BINARY [FILL_STORE_BINARY]]
#                                (default: builds both --release)
#   N=1000 scripts/bench-cache.sh   a smaller study (N a multiple of 100)
#   KINDS="directory s3"            only these kinds (of: directory http oci s3)
#   PROFILE=debug                    build the debug binaries instead
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/perfpipe-target}"
n=${N:-10000}
profile=${PROFILE:-release}
flag=$([ "$profile" = release ] && echo --release || true)
if [ $# -ge 2 ]; then
    fill=$(realpath "$2")
else
    (cd "$repo" && cargo build --locked $flag -q --example fill_store)
    fill="$CARGO_TARGET_DIR/$profile/examples/fill_store"
fi
if [ $# -ge 1 ]; then
    bin=$(realpath "$1")
else
    (cd "$repo" && cargo build --locked $flag -q)
    bin="$CARGO_TARGET_DIR/$profile/perfpipe"
fi
kinds=" ${KINDS:-directory http oci s3} "
wants() { [[ $kinds == *" $1 "* ]]; }
if wants oci; then
    command -v docker-registry >/dev/null || { echo "needs Debian's docker-registry" >&2; exit 1; }
fi
if wants s3; then
    "$repo/scripts/real-s3.sh"
    s3s_fs="${PERFPIPE_TEST_CACHE:-$HOME/.cache/perfpipe-test}/s3s-fs-0.14.1/bin/s3s-fs"
fi

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/project/datasets"
cd "$work/project"
cp "$repo/tests/fixtures/experiments/tiny.kdl" tiny.kdl
cp "$repo/tests/fixtures/datasets/sharegpt-tiny.json" sharegpt-tiny.json
unset PERFPIPE_OFFLINE PERFPIPE_STORE
# The S3 server's access key, as a user's config.toml names it.
export XDG_CONFIG_HOME="$work/config"
export BENCH_S3_SECRET=bench-secret-access-key-0123456789

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done; echo "no server on $1" >&2; exit 1; }

# timed NAME ARGS...: runs `perfpipe ARGS`, prints its wall time and peak RSS.
timed() {
    local name=$1
    shift
    /usr/bin/time -v -o "$work/time" "$bin" "$@" >"$work/out" 2>"$work/err" ||
        { cat "$work/err" >&2; exit 1; }
    local wall rss
    wall=$(sed -n 's/.*Elapsed (wall clock) time.*: //p' "$work/time")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time")
    printf '  %-34s wall %9s   peak RSS %6d MB\n' "$name" "$wall" $((rss / 1024))
}

echo "== template: the tiny study measured on sim"
PERFPIPE_STORE="$work/tiny-store" "$bin" run tiny.kdl --runtime sim >/dev/null 2>"$work/tiny.log" ||
    { cat "$work/tiny.log" >&2; exit 1; }
template=$(find "$work/tiny-store/entries" -name result.json -print0 |
    xargs -0 grep -l '"status": "success"' | head -1)
log="$(dirname "$template")/logs/engine.log"
echo "  result.json $(wc -c <"$template") bytes, engine.log $(wc -c <"$log") bytes"

echo "== a store of $n samples (10 workloads x 10 sweeps x $((n / 100)) values)"
{
    echo 'experiment "cache-bench" {'
    echo '    hardware "nvidia-a100-sxm4-80gb" gpus=8'
    echo '    model "Qwen/Qwen3-8B"'
    echo '    runtime sim'
    echo '    engine vllm version="0.11.0"'
    echo '    harness builtin backend="openai-chat"'
    workloads=""
    for w in $(seq 0 9); do
        echo "    workload w$w { dataset random input=$((128 + w)) output=16 seed=$w; prompts 10; }"
        workloads="$workloads w$w"
    done
    values=$(seq 1 $((n / 100)) | tr '\n' ' ')
    for s in $(seq 0 9); do
        echo "    sweep s$s engine=vllm gpus=1 {"
        echo "        vary \"--sweep-flag-$s\" $values"
        echo "        workloads$workloads"
        echo "    }"
    done
    echo '}'
} >bench.kdl
"$fill" bench.kdl "$work/a" "$template" sim "$log" 2>&1 | sed 's/^/  /'
"$bin" lock bench.kdl --offline >/dev/null 2>&1
"$bin" cache keygen alice --dir "$work/keys" >"$work/public" 2>/dev/null
public=$(cat "$work/public")
echo "  store: $(du -sm "$work/a" | cut -f1) MB"

echo "== servers"
echo "  load: $(uptime | sed 's/.*load average/load average/')"
if wants oci; then
    port=$(free_port)
    cat >"$work/registry.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
EOF
    env -i docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
    pids+=($!)
    wait_port "$port"
    oci="oci://127.0.0.1:$port/team/perfpipe"
fi
if wants s3; then
    sport=$(free_port)
    mkdir -p "$work/s3/bench"
    # Its debug log names each request's operation ("resolved route, op: GetObject").
    RUST_LOG=s3s::ops=debug "$s3s_fs" --host 127.0.0.1 --port "$sport" \
        --access-key bench-access-key --secret-key "$BENCH_S3_SECRET" "$work/s3" >"$work/s3.log" 2>&1 &
    pids+=($!)
    wait_port "$sport"
    s3="s3://bench/team/results?endpoint=http://127.0.0.1:$sport"
    mkdir -p "$XDG_CONFIG_HOME/perfpipe"
    printf '[credentials."127.0.0.1:%s"]\nusername = "bench-access-key"\npassword-env = "BENCH_S3_SECRET"\n' \
        "$sport" >"$XDG_CONFIG_HOME/perfpipe/config.toml"
fi

echo "== push (cache push --all, $n samples)"
if wants directory || wants http; then
    PERFPIPE_STORE="$work/a" timed "to a directory" cache push --all --to "$work/dir" --secret-key "$work/keys/alice.secret"
    echo "  directory cache: $(du -sm "$work/dir" | cut -f1) MB, $(find "$work/dir/keys" -name '*.json' | wc -l) indexes of $(du -cb "$work/dir"/keys/*.json 2>/dev/null | tail -1 | cut -f1) bytes"
fi
if wants oci; then
    PERFPIPE_STORE="$work/a" timed "to docker-registry" cache push --all --to "$oci" --secret-key "$work/keys/alice.secret"
    PERFPIPE_STORE="$work/a" timed "again to docker-registry (no-op)" cache push --all --to "$oci" --secret-key "$work/keys/alice.secret"
    grep -o 'pushed.*' "$work/err" | sed 's/^/    /'
fi
if wants s3; then
    PERFPIPE_STORE="$work/a" timed "to s3s-fs" cache push --all --to "$s3" --secret-key "$work/keys/alice.secret"
    echo "  bucket: $(du -sm "$work/s3/bench" | cut -f1) MB"
fi

if wants http; then
    hport=$(free_port)
    (cd "$work/dir" && exec python3 -m http.server "$hport" --bind 127.0.0.1) >"$work/http.log" 2>&1 &
    pids+=($!)
    wait_port "$hport"
    http="http://127.0.0.1:$hport"
fi

lines_of() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
for kind in $kinds; do
    case $kind in
    directory) location="$work/dir" ;;
    http) location=$http ;;
    oci) location=$oci ;;
    s3) location=$s3 ;;
    esac
    echo "== $kind: plan and run on an empty store"
    store="$work/b-$kind"
    trust=(--substituter "$location" --trusted-key "$public")
    before_reg=$(lines_of "$work/registry.log")
    before_http=$(lines_of "$work/http.log")
    before_s3=$(lines_of "$work/s3.log")
    PERFPIPE_STORE=$store timed "plan" plan bench.kdl "${trust[@]}"
    grep -o 'substitutable: .*' "$work/out" | sed 's/^/    /'
    case $kind in
    directory)
        index_bytes=$(du -cb "$work/dir"/keys/*.json | tail -1 | cut -f1)
        echo "    lookups: one file read per key (keys/<run key>.json); bytes read: $index_bytes ($((index_bytes / n)) per key)"
        ;;
    http)
        requests=$(tail -n +"$((before_http + 1))" "$work/http.log" | grep -c '"GET ' || true)
        index_bytes=$(du -cb "$work/dir"/keys/*.json | tail -1 | cut -f1)
        echo "    requests: $requests for $n keys ($(echo "scale=2; $requests / $n" | bc) per key); bytes: $index_bytes ($((index_bytes / n)) per key)"
        ;;
    oci)
        lines=$(tail -n +"$((before_reg + 1))" "$work/registry.log" | grep '"GET /v2/' || true)
        requests=$(printf '%s\n' "$lines" | grep -c . || true)
        bytes=$(printf '%s\n' "$lines" | awk '{for (i = 1; i < NF; i++) if ($i ~ /^HTTP\/1/) { s += $(i + 2); break }} END {print s + 0}')
        echo "    requests: $requests for $n keys ($(echo "scale=2; $requests / $n" | bc) per key); bytes of their answers: $bytes ($((bytes / n)) per key); tags/list asked: $(printf '%s\n' "$lines" | grep -c 'tags/list' || true)"
        ;;
    s3)
        since=$(tail -n +"$((before_s3 + 1))" "$work/s3.log")
        requests=$(printf '%s\n' "$since" | grep -c 'resolved route' || true)
        ops=$(printf '%s\n' "$since" | grep -o 'resolved route, op: [A-Za-z]*' | sed 's/.*op: //' | sort | uniq -c | awk '{printf " %s %s", $1, $2}')
        index_bytes=$(du -cb "$work/s3/bench/team/results/keys"/*.json | tail -1 | cut -f1)
        echo "    requests: $requests for $n keys ($(echo "scale=2; $requests / $n" | bc) per key:$ops); bytes: the indexes, $index_bytes ($((index_bytes / n)) per key)"
        ;;
    esac
    before_reg=$(lines_of "$work/registry.log")
    before_http=$(lines_of "$work/http.log")
    before_s3=$(lines_of "$work/s3.log")
    PERFPIPE_STORE=$store timed "run (pulls every sample)" run bench.kdl "${trust[@]}"
    case $kind in
    http) echo "    requests of run: $(tail -n +"$((before_http + 1))" "$work/http.log" | grep -c '"GET ' || true) (the index again, then the blobs)" ;;
    oci) echo "    requests of run: $(tail -n +"$((before_reg + 1))" "$work/registry.log" | grep -c '"GET /v2/' || true) (the index again, then the blobs)" ;;
    s3) echo "    requests of run: $(tail -n +"$((before_s3 + 1))" "$work/s3.log" | grep -c 'resolved route' || true) (the index again, then the blobs)" ;;
    esac
    grep -o 'ran [0-9]* (failed: [0-9]*)' "$work/err" | sed 's/^/    /'
    echo "    substituted: $(grep -c 'substituted a sample' "$work/err" || true) messages; store: $(du -sm "$store" | cut -f1) MB"
done
echo "== run again with every sample stored (nothing pulled: the report of the $n runs alone)"
PERFPIPE_STORE=$store timed "run" run bench.kdl
echo "  load: $(uptime | sed 's/.*load average/load average/')"
