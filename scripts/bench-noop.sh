#!/usr/bin/env bash
# Measures what perfpipe does when there is nothing to do (issue 17, item 13;
# issue 37, section 2):
#   1. a fully cached `run` and `plan` of experiments/qwen3-235b-a100.kdl under
#      `--runtime sim`, after one real run filled a temporary store (target:
#      the cached `run` within 50 ms);
#   2. a synthetic study of 10,000 runs (10 workloads x 10 sweeps x 100 values)
#      in a store of 100,000 results: the study's 10,000 and 9 more studies
#      of 10,000 (committed by examples/fill_store.rs, not run): `plan`
#      without and with its lockfile (target: 200 ms), and `report` (target:
#      300 ms), and the peak RSS of a no-op `run` that renders its report
#      again (issue 36: `run` under 200 MB).
# Everything happens in a temporary copy of the project; the repo is not touched.
# Usage: scripts/bench-noop.sh [PERFPIPE_BINARY...]   (default: builds --release)
#   Several binaries (say, before and after a change) are measured on the
#   same stores, each command by each binary in turn.
#   REPS=N  repetitions per measurement (default 5; medians are shown). The
#   wall time of a loaded machine varies; CPU time (user + sys) less so.
#   STORE_RESULTS=N  results in the store, a multiple of 10,000 (default
#   100000; filling takes a few minutes).
#   KEEP=DIR  work in DIR and keep it (the store, to profile a command).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/perfpipe-target}"
(cd "$repo" && cargo build --locked --release -q --example fill_store)
bins=()
if [ $# -ge 1 ]; then
    for b in "$@"; do bins+=("$(realpath "$b")"); done
else
    (cd "$repo" && cargo build --locked --release -q)
    bins=("$CARGO_TARGET_DIR/release/perfpipe")
fi
fill="$CARGO_TARGET_DIR/release/examples/fill_store"
reps=${REPS:-5}
store_results=${STORE_RESULTS:-100000}

if [ -n "${KEEP:-}" ]; then
    # KEEP=DIR: work in DIR (new) and leave it, store included, to profile.
    work=$KEEP
    mkdir "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/project"
cp -r "$repo/experiments" "$repo/datasets" "$repo/lockfiles" "$work/project/"
cd "$work/project"
export PERFPIPE_STORE="$work/store"

median() { sort -n | sed -n "$(((reps + 1) / 2))p"; }

# measure NAME TARGET_MS ARGS...: each binary's median wall and CPU time
# over $reps runs of `perfpipe ARGS`, in ms, after one run that must
# succeed; with the target (0: none) and whether the median wall meets it.
measure() {
    local name=$1 target=$2 bin wall cpu rss median_wall verdict
    shift 2
    for bin in "${bins[@]}"; do
        "$bin" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
        wall=() cpu=() rss=()
        for _ in $(seq "$reps"); do
            # RERENDER=1: the report rendered again (its record removed).
            if [ -n "${RERENDER:-}" ]; then rm -f reports/.*.inputs; fi
            /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$bin" "$@" >/dev/null 2>&1
            read -r e u s m <"$work/time"
            wall+=("$(echo "$e * 1000 / 1" | bc)")
            cpu+=("$(echo "($u + $s) * 1000 / 1" | bc)")
            rss+=("$((m / 1024))")
        done
        median_wall=$(printf '%s\n' "${wall[@]}" | median)
        verdict=""
        if [ "$target" -gt 0 ]; then
            if [ "$median_wall" -le "$target" ]; then verdict="(target $target ms: met)"
            else verdict="(target $target ms: MISSED)"; fi
        fi
        printf '%-24s %-28s wall %6d ms   cpu %6d ms   peak RSS %4d MB   %s\n' "$name" \
            "$(basename "$bin")" "$median_wall" "$(printf '%s\n' "${cpu[@]}" | median)" \
            "$(printf '%s\n' "${rss[@]}" | median)" "$verdict"
    done
}

echo "== qwen3-235b-a100 under --runtime sim (one real run fills the store)"
"${bins[0]}" run experiments/qwen3-235b-a100.kdl --runtime sim >/dev/null 2>"$work/fill.log" ||
    { cat "$work/fill.log" >&2; exit 1; }
measure "run (fully cached)" 50 run experiments/qwen3-235b-a100.kdl --runtime sim
measure "plan" 0 plan experiments/qwen3-235b-a100.kdl --runtime sim

echo "== synthetic: 10 workloads x 10 sweeps x 100 values = 10,000 runs, in a store of $store_results results"
# synthetic NAME SEED: a study of 10,000 runs; studies of other seeds have
# other keys (each workload's dataset seed is part of its key).
synthetic() {
    local name=$1 seed=$2 w s workloads="" values
    echo "experiment \"$name\" {"
    echo '    hardware "nvidia-a100-sxm4-80gb" gpus=8'
    echo '    model "Qwen/Qwen3-8B"'
    echo '    runtime sim'
    echo '    engine vllm version="0.11.0"'
    echo '    harness builtin backend="openai-chat"'
    for w in $(seq 0 9); do
        echo "    workload w$w { dataset random input=$((128 + w)) output=16 seed=$((seed * 10 + w)); prompts 10; }"
        workloads="$workloads w$w"
    done
    values=$(seq 1 100 | tr '\n' ' ')
    for s in $(seq 0 9); do
        echo "    sweep s$s engine=vllm gpus=1 {"
        echo "        vary \"--sweep-flag-$s\" $values"
        echo "        workloads$workloads"
        echo "    }"
    done
    echo '}'
}
synthetic synthetic-10k 0 >experiments/synthetic-10k.kdl
template=$(find "$work/store/entries" -name result.json -print0 |
    xargs -0 grep -l '"status": "success"' | head -1)
start=$(date +%s)
# Each study by its own process, all at once: a commit waits mostly for its
# fsyncs, not for a CPU.
mkdir -p "$work/others"
fills=()
for n in $(seq 1 $((store_results / 10000 - 1))); do
    synthetic "other-$n" "$n" >"$work/others/other-$n.kdl"
    "$fill" "$work/others/other-$n.kdl" "$work/store" "$template" sim 2>/dev/null &
    fills+=($!)
done
"$fill" experiments/synthetic-10k.kdl "$work/store" "$template" sim
for pid in "${fills[@]}"; do wait "$pid"; done
echo "(filled in $(($(date +%s) - start)) s; $(find "$work/store/entries" -name result.json | wc -l) results)"
measure "plan (no lockfile)" 200 plan experiments/synthetic-10k.kdl
"${bins[0]}" lock experiments/synthetic-10k.kdl --offline >/dev/null 2>&1
echo "(lockfile: $(wc -c <lockfiles/synthetic-10k.lock) bytes)"
measure "plan (with lockfile)" 200 plan experiments/synthetic-10k.kdl
measure "report" 300 report experiments/synthetic-10k.kdl
# What `run` holds at its end (issue 36: under 200 MB): the no-op run of the
# study, its report rendered again (markdown, charts and HTML page).
RERENDER=1 measure "run (report rendered)" 0 run experiments/synthetic-10k.kdl
for bin in "${bins[@]}"; do
    echo "($(basename "$bin") plan: $("$bin" plan experiments/synthetic-10k.kdl 2>/dev/null | grep -E '^[0-9]+ runs'))"
done
