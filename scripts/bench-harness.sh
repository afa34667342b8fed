#!/usr/bin/env bash
# Measures the built-in load generator itself (issue "built-in load generator"):
#   1. ceiling: 256 and 1000 concurrent streams against a server that emits
#      tokens as fast as it can (one core for the server, one for the client);
#   2. accuracy: 512 streams opened at once against a server that holds TTFT at
#      200 ms and the gap between tokens at 20 ms, measured by perfpipe and by a
#      bare hyper client (examples/bare_client.rs) in the same run, side by side;
#   3. memory: peak RSS of 12,000 requests at 1000 streams;
#   4. connections: at `--max-concurrency 64`, the most connections the server
#      had established at once (one per stream: at most c);
#   5. prompts: 12,000 random 128-token prompts built through a BPE tokenizer
#      on every core, cold (an empty prompt cache) then warm (target: cold
#      under 1 s on 2 cores): the shipped test BPE, and a model's
#      tokenizer.json if PERFPIPE_BENCH_TOKENIZER names one.
# Every case prints the time to build its prompts, the client's peak RSS and the most connections the
# server side held at once (sampled with `ss` every 20 ms).
# Usage: scripts/bench-harness.sh   (builds the `perf` profile first;
#        PERFPIPE_BENCH_PROFILE=release builds and measures `--release`;
#        PERFPIPE_BENCH_TOKENIZER=path/to/tokenizer.json adds that tokenizer)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/perfpipe-target}"
profile="${PERFPIPE_BENCH_PROFILE:-perf}"
cargo build --locked --profile "$profile" -q --bin perfpipe --example bare_client
dir="$CARGO_TARGET_DIR/$profile"
[ "$profile" = dev ] && dir="$CARGO_TARGET_DIR/debug"
bin="$dir/perfpipe"
bare="$dir/examples/bare_client"
out=$(mktemp -d)
# One core for the server, one for the client (taskset execs, so $! is the server).
pin=(); command -v taskset >/dev/null && pin=(taskset -c)

serve() { # serve PORT TIMING
    PERFPIPE_SIM_GPU=nvidia-h100-sxm5-80gb PERFPIPE_SIM_TIMING="$2" \
        "${pin[@]}" ${pin:+1} "$bin" sim-engine vllm serve bench-model --port "$1" >"$out/server-$1.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done
    echo "server on port $1 did not start" >&2; exit 1
}

# The most connections established to PORT at once, sampled until PID ends.
peak_connections() { # peak_connections PORT PID
    local peak=0 now
    while kill -0 "$2" 2>/dev/null; do
        now=$(ss -Htn state established "( sport = :$1 )" | wc -l)
        [ "$now" -gt "$peak" ] && peak=$now
        sleep 0.02
    done
    echo "server-side connections: at most $peak established at once"
}

run() { # run NAME PORT ARGS...
    echo "== $1"
    "${pin[@]}" ${pin:+0} "$bin" bench --port "$2" --backend openai-chat --model bench-model --ignore-eos \
        --percentile-metrics ttft,tpot,itl,e2el --save-result --result-dir "$out" \
        --result-filename "$1.json" "${@:3}" >"$out/$1.log" 2>&1 &
    local client=$!
    peak_connections "$2" "$client"
    wait "$client" || true
    grep -E "ingested|prompts (built|read)|peak RSS|client delay|Successful|Failed|TTFT|TPOT|ITL \(|warning" "$out/$1.log" || true
}

bare() { # bare NAME PORT NUM_PROMPTS CONCURRENCY INPUT_LEN OUTPUT_LEN: the yardstick
    echo "== $1 (bare hyper client)"
    "${pin[@]}" ${pin:+0} "$bare" "$2" "$3" "$4" "$5" "$6" >"$out/$1.log" 2>&1 &
    local client=$!
    peak_connections "$2" "$client"
    wait "$client" || true
    cat "$out/$1.log"
}

# The server writes all events that are ready at once (64 KiB at most), as a busy server does.
serve 18771 fixed:ttft_ms=0,itl_ms=0
run ceiling-256 18771 --num-prompts 2048 --max-concurrency 256 --random-input-len 128 --random-output-len 1024
run ceiling-1000 18771 --num-prompts 2000 --max-concurrency 1000 --random-input-len 128 --random-output-len 1024
# Memory: peak RSS at 1000 streams for 12,000 requests (target < 300 MiB).
run memory-1000x12000 18771 --num-prompts 12000 --max-concurrency 1000 --random-input-len 128 --random-output-len 1024

prompts() { # prompts NAME TOKENIZER: the client unpinned, so on every core
    for pass in cold warm; do
        echo "== $1, $pass"
        XDG_CACHE_HOME="$out/prompt-cache-$1" "$bin" bench --port 18771 --backend openai-chat \
            --model bench-model --tokenizer "$2" --num-prompts 12000 --max-concurrency 256 \
            --random-input-len 128 --random-output-len 1 >"$out/$1-$pass.log" 2>&1 || true
        grep -E "prompts (built|read)|error" "$out/$1-$pass.log" || true
    done
}
prompts prompts-12000x128-test-bpe tests/fixtures/tokenizer/tokenizer.json
if [ -n "${PERFPIPE_BENCH_TOKENIZER:-}" ]; then
    prompts prompts-12000x128-model "$PERFPIPE_BENCH_TOKENIZER"
fi
kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true

# One event per write: the server core becomes the limit.
serve 18773 fixed:ttft_ms=0,itl_ms=0,coalesce=0
run ceiling-256-one-event-per-write 18773 --num-prompts 512 --max-concurrency 256 --random-input-len 128 --random-output-len 1024
kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true

serve 18772 fixed:ttft_ms=200,itl_ms=20,probe=1
run accuracy-512-cold 18772 --num-prompts 512 --random-input-len 128 --random-output-len 64
bare accuracy-512-cold-bare 18772 512 512 128 64
# Warm-up requests leave 512 keep-alive connections open: no connect in the TTFT.
run accuracy-512-warm 18772 --num-prompts 512 --random-input-len 128 --random-output-len 64 --num-warmups 512
# Each connection is back in the pool before its request ends: at most c open at once.
run connections-64 18772 --num-prompts 1024 --max-concurrency 64 --random-input-len 128 --random-output-len 16
kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true
echo "results in $out"
