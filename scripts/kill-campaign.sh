#!/usr/bin/env bash
# kill -9 of perfpipe at random moments of `run`, `cache push`, substitution
# (`run --substituter`) and `store gc`, with `store verify` after each kill:
# the store must stay sound (exit 0) every time. Prints one line per kill and
# a summary; exits 1 when any verify found damage.
#
#   scripts/kill-campaign.sh [KILLS_PER_COMMAND]   (default 10; needs a built perfpipe:
#                                                   PERFPIPE=path, else target/debug/perfpipe)
set -euo pipefail
per=${1:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${PERFPIPE:-${CARGO_TARGET_DIR:-$here/target}/debug/perfpipe}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export XDG_CONFIG_HOME=$work/config PERFPIPE_SIM_TIMING=fixed:ttft_ms=20,itl_ms=4
mkdir experiments
cat > experiments/kill.kdl <<'KDL'
experiment "kill" {
    hardware "nvidia-a100-sxm4-80gb" gpus=2
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    engine sglang version="0.5.5.post1"
    workload a {
        dataset random input=32 output=48 seed=1
        prompts 6
    }
    workload b {
        dataset random input=64 output=32 seed=2
        prompts 6
    }
    step vllm engine=vllm gpus=1
    step sglang engine=sglang gpus=1
}
KDL
public=$("$bin" cache keygen kill-1 2>/dev/null | grep -o 'kill-1:[A-Za-z0-9+/=]*' | head -1)
secret=$XDG_CONFIG_HOME/perfpipe/keys/kill-1.secret
kills=0 damaged=0 phase_kills=0
# kill_at LABEL STORE MAX_MS CMD...: starts CMD, kills it after a random
# 1..MAX_MS ms, then verifies STORE (a store not created yet is sound).
kill_at() {
    local label=$1 store=$2 ms=$((RANDOM % $3 + 1)); shift 3
    "$bin" "$@" >/dev/null 2>&1 &
    local pid=$!
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    local how=finished
    if kill -9 "$pid" 2>/dev/null; then
        how=killed kills=$((kills + 1)) phase_kills=$((phase_kills + 1))
    fi
    wait "$pid" 2>/dev/null || true
    local rc=0
    [ -d "$store" ] && { "$bin" store verify --store "$store" >verify.out 2>&1 || rc=$?; }
    printf '%-12s %4d ms  %-8s  store verify: exit %d\n' "$label" "$ms" "$how" "$rc"
    if [ "$rc" -ne 0 ]; then damaged=$((damaged + 1)); cat verify.out; fi
}
# phase LABEL STORE MAX_MS SETUP CMD...: kill_at until PER kills (or 10×PER tries).
phase() {
    local label=$1 store=$2 max=$3 setup=$4; shift 4
    phase_kills=0
    for _ in $(seq $((per * 10))); do
        [ "$phase_kills" -ge "$per" ] && break
        $setup
        kill_at "$label" "$store" "$max" "$@"
    done
}
nothing() { :; }
# Every fourth try starts over, so a run is killed mid-way again.
tries=0
sometimes_empty() { tries=$((tries + 1)); [ $((tries % 4)) -ne 0 ] || rm -rf store; }
fresh_cache() { rm -rf cache; }
# Nothing reaches the runs once the experiment and its lockfile are away.
stored_twice_unreached() {
    [ -f kill.kdl.away ] && mv kill.kdl.away experiments/kill.kdl && mv lockfiles.away lockfiles
    "$bin" run experiments/kill.kdl --runtime sim --store gcstore --samples 2 >/dev/null 2>&1 || true
    mv experiments/kill.kdl kill.kdl.away && mv lockfiles lockfiles.away
}
fresh_other() { rm -rf other; }

phase run store 900 sometimes_empty run experiments/kill.kdl --runtime sim --store store
"$bin" run experiments/kill.kdl --runtime sim --store store >/dev/null 2>&1
phase push store 60 fresh_cache cache push experiments/kill.kdl --runtime sim --store store --to "$work/cache" --secret-key "$secret"
"$bin" cache push experiments/kill.kdl --runtime sim --store store --to "$work/cache" --secret-key "$secret" >/dev/null 2>&1
phase substitute other 200 fresh_other run experiments/kill.kdl --runtime sim --store other --substituter "$work/cache" --trusted-key "$public"
phase gc gcstore 15 stored_twice_unreached store gc --all --store gcstore
echo "$kills kills, $damaged verifies found damage"
[ "$damaged" -eq 0 ]
