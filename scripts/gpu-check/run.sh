#!/usr/bin/env bash
# The GPU check, one script for a machine with one NVIDIA GPU and PyTorch:
# perfpipe's GPU-facing code (discovery, the GPU-type check, foreign GPU
# processes, GPU assignment, telemetry and its per-second series) against
# the real nvidia-smi under a real GPU load. The engine is a stand-in
# (scripts/gpu-check/vllm: the simulated vLLM, plus a PyTorch process in its
# group loading the GPU it was given). Everything it learns lands in $OUT
# (default /tmp/gpu-check-out). About 2 minutes, at most 5 (each step has
# a timeout); no cargo needed:
#   PERFPIPE_BIN=/path/to/perfpipe scripts/gpu-check/run.sh
# GPU_TYPE: the machine's GPU, as perfpipe names it (nvidia-h100-sxm5-80gb)
# or as nvidia-smi does ("NVIDIA H100 80GB HBM3"); by default what
# nvidia-smi says GPU 0 is.
set -u
D=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-/tmp/gpu-check-out}; mkdir -p "$O"
# perfpipe's name of a GPU type, from either name (src/gpu.rs's CATALOG;
# gpu::tests checks that this table names each NVIDIA type there).
perfpipe_type() {
    case "$1" in
    nvidia-*) echo "$1" ;;
    "NVIDIA A100-SXM4-80GB") echo nvidia-a100-sxm4-80gb ;;
    "NVIDIA A100-PCIE-40GB") echo nvidia-a100-pcie-40gb ;;
    "NVIDIA L40S") echo nvidia-l40s-48gb ;;
    "NVIDIA H100 80GB HBM3") echo nvidia-h100-sxm5-80gb ;;
    "NVIDIA H200") echo nvidia-h200-sxm-141gb ;;
    *) return 1 ;;
    esac
}
SMI_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)
if ! GPU_TYPE=$(perfpipe_type "${GPU_TYPE:-$SMI_NAME}"); then
    echo "gpu-check: no perfpipe GPU type for '${GPU_TYPE:-$SMI_NAME}' (nvidia-smi says '$SMI_NAME');" \
        "set GPU_TYPE to one of src/gpu.rs's names" >&2
    exit 2
fi
# An experiment for another GPU type, which this machine must refuse.
OTHER_TYPE=nvidia-a100-sxm4-80gb
[ "$GPU_TYPE" = "$OTHER_TYPE" ] && OTHER_TYPE=nvidia-h200-sxm-141gb
export DEVICE_OUT=$O GPU_TYPE
PP=$(cd "$(dirname "${PERFPIPE_BIN:-target/debug/perfpipe}")" && pwd)/$(basename "${PERFPIPE_BIN:-target/debug/perfpipe}")
export PERFPIPE_BIN=$PP
exec > >(tee "$O/log.txt") 2>&1
echo "== GPU_TYPE=$GPU_TYPE (nvidia-smi: $SMI_NAME), the refused experiment declares $OTHER_TYPE"
Q_GPU=(--query-gpu=index,uuid,name,memory.total,driver_version --format=csv,noheader,nounits)
Q_APPS=(--query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits)
Q_TEL=(--query-gpu=index,power.draw,clocks.sm,temperature.gpu,clocks_throttle_reasons.active,memory.used --format=csv,noheader,nounits -i 0)
Q_TEL2=(--query-gpu=index,power.draw,clocks.sm,temperature.gpu,clocks_event_reasons.active,memory.used,utilization.gpu,memory.total --format=csv,noheader,nounits -i 0)
Q_POWER=(--query-gpu=power.min_limit,power.max_limit,power.limit --format=csv,noheader,nounits -i 0)
smi() { echo "\$ nvidia-smi $*"; nvidia-smi "$@"; echo "rc=$?"; }
echo "== idle"; date -u
smi "${Q_GPU[@]}"; smi "${Q_APPS[@]}"; smi "${Q_POWER[@]}"
nvidia-smi "${Q_POWER[@]}" > "$O/power-limits.csv" 2>&1
echo "== a foreign process loads the GPU"
python3 "$D/gpu_load.py" "$O/foreign-view.txt" 40 4 &
FOREIGN=$!
sleep 12
cat "$O/foreign-view.txt"
smi "${Q_APPS[@]}"; smi "${Q_TEL[@]}"; smi "${Q_TEL2[@]}"
proj=/tmp/gpu-proj; rm -rf "$proj"; mkdir -p "$proj/experiments"; cd "$proj" || exit 1
sed "s/nvidia-h200-sxm-141gb/$GPU_TYPE/" "$D/gpu-check.kdl" > experiments/gpu-check.kdl
sed "s/nvidia-h200-sxm-141gb/$OTHER_TYPE/; s/gpu-check/gpu-check-other/" "$D/gpu-check.kdl" > experiments/gpu-check-other.kdl
export PATH=$D:$PATH PERFPIPE_SIM_TIMING=fixed:ttft_ms=50,itl_ms=20 NO_COLOR=1
echo "== an experiment declaring another GPU on this machine"
timeout 60 "$PP" run experiments/gpu-check-other.kdl; echo "rc=$?"
echo "== run while the foreign process holds the GPU (it ends in ~15 s)"
( sleep 15; kill $FOREIGN; echo "[killed foreign $FOREIGN at $(date -u +%T)]" ) &
# Each line: the unix time, then what nvidia-smi printed.
(while sleep 1; do echo "$(date +%s.%N), $(nvidia-smi "${Q_TEL2[@]}")"; done) > "$O/tel.csv" 2>&1 &
SAMPLER=$!
PERFPIPE_SIM_LOAD_MS=12000 timeout 150 "$PP" run experiments/gpu-check.kdl; echo "rc=$? at $(date -u +%T)"
kill $SAMPLER
echo "== engine's view"; cat "$O/engine-calls.txt" "$O/engine-view.txt"
echo "== results"
find . -name result.json | head -5
r=$(find . -name result.json | head -1)
[ -n "$r" ] && cp "$r" "$O/result.json"
python3 - "$r" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
def walk(o, path=""):
    if isinstance(o, dict):
        for k, v in o.items(): walk(v, f"{path}.{k}")
    elif isinstance(o, list):
        print(f"{path}: list of {len(o)}", (json.dumps(o[0])[:300] if o else ""))
    else:
        if any(w in path for w in ("gpu", "telemetry", "provenance", "machine", "power", "clock", "driver", "cuda")):
            print(f"{path} = {o}")
walk(r)
PY
echo "== the GPU series (telemetry.jsonl) against the run's duration, the load and the GPU's power range"
[ -n "$r" ] && cp "$(dirname "$r")/logs/telemetry.jsonl" "$O/telemetry.jsonl"
python3 "$D/series_check.py" "$r" "$O/power-limits.csv" "$O/tel.csv"; echo "series check rc=$?"
timeout 30 "$PP" report experiments/gpu-check.kdl >/dev/null; echo "report rc=$?"
ls reports/ 2>/dev/null; cp reports/*.md reports/*.gpu-*.svg reports/*.gpu-*.png "$O/" 2>/dev/null
echo "== done"; date -u
