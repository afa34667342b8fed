"""Checks a run's GPU series (its sample's logs/telemetry.jsonl, see
docs/metrics.md "Telemetry") against the run's duration, the load and the
GPU's power range, and against the summary in its result.json; prints what
it found, a line a check, and exits 1 when a check fails.
    series_check.py RESULT_JSON POWER_LIMITS_CSV [RAW_SAMPLES_CSV]
POWER_LIMITS_CSV: `nvidia-smi --query-gpu=power.min_limit,power.max_limit,power.limit
--format=csv,noheader,nounits -i 0`; RAW_SAMPLES_CSV: lines of `<unix time>,
<the same query as perfpipe's, utilization.gpu 7th>` from a sampler of its own."""
import datetime, json, os, statistics, sys

result_path, limits_path = sys.argv[1], sys.argv[2]
raw_path = sys.argv[3] if len(sys.argv) > 3 else None
result = json.load(open(result_path))
provenance, summary = result["provenance"], result["telemetry"]
series_path = os.path.join(os.path.dirname(result_path), "logs", "telemetry.jsonl")
lines = [json.loads(l) for l in open(series_path) if l.strip()]
problems = []


def check(ok, what):
    print(("ok     " if ok else "CHECK  ") + what)
    if not ok:
        problems.append(what)


def when(iso):
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


start, end = when(provenance["started_at"]), when(provenance["finished_at"])
duration = end - start  # whole seconds each: ±1 s
gpu = [(l["t_s"], l["gpu"]) for l in lines if "gpu" in l]
print(f"run: {provenance.get('gpu')} GPUs {provenance.get('gpu_indices')}, "
      f"{provenance['started_at']} .. {provenance['finished_at']} ({duration:.0f} s); "
      f"{len(lines)} telemetry lines, {len(gpu)} of them GPU lines")
times = [l.get("t_s") for l in lines]
check(all(isinstance(t, (int, float)) for t in times) and times == sorted(times),
      "every line has t_s, in the order read")
by_gpu = {}
for t, g in gpu:
    by_gpu.setdefault(g["index"], []).append((t, g))
check(sorted(by_gpu) == sorted(provenance.get("gpu_indices", [])),
      f"lines of GPUs {sorted(by_gpu)}, the run's {provenance.get('gpu_indices')}")
for index, samples in sorted(by_gpu.items()):
    t = [s[0] for s in samples]
    gaps = [b - a for a, b in zip(t, t[1:])]
    period = statistics.mean(gaps) if gaps else float("nan")
    # A sample a period (1 s) after the last one ended; nvidia-smi's answer adds to it.
    check(0.6 * duration - 1 <= len(samples) <= duration + 1,
          f"GPU {index}: {len(samples)} lines in a {duration:.0f} s run "
          f"(t_s {t[0]:.3f} .. {t[-1]:.3f}, a line every {period:.3f} s)")
    check(t[-1] <= duration + 1, f"GPU {index}: the last line ({t[-1]:.3f} s) within the run")
util = [g["utilization_pct"] for _, g in gpu if g.get("utilization_pct") is not None]
power = [g["power_w"] for _, g in gpu if g.get("power_w") is not None]
if util:
    busy = sum(u > 0 for u in util) / len(util)
    check(statistics.mean(util) > 50 and busy >= 0.8,
          f"utilization under the load: mean {statistics.mean(util):.1f} %, "
          f"min {min(util):.0f}, max {max(util):.0f}, {busy:.0%} of lines > 0")
else:
    check(False, "utilization: no line has one")
limits = open(limits_path).read().strip().splitlines()
try:
    low, high, cap = (float(v) for v in limits[0].split(","))
except (ValueError, IndexError):
    low = high = cap = None
    print(f"(power limits unread: {limits[:1]})")
if power:
    seen = f"power: min {min(power):.1f} W, mean {statistics.mean(power):.1f} W, max {max(power):.1f} W"
    if high is not None:
        # Draw may pass the limit for a moment; 10 % over it is not a reading.
        check(0 < min(power) and max(power) <= 1.1 * high and statistics.mean(power) >= low,
              f"{seen}; the GPU's range {low:.0f}..{high:.0f} W (limit {cap:.0f} W)")
    else:
        check(0 < min(power), seen)
else:
    check(False, "power: no line has one")
names = sorted({n for _, g in gpu for n in g.get("throttle_reason_names", [])})
masks = sorted({g["throttle_reasons"] for _, g in gpu})
check(all("throttle_reason_names" in g for _, g in gpu),
      f"throttle reasons named: {names} (masks {masks})")
near = lambda a, b: a is not None and b is not None and abs(a - b) < 1e-6 * max(1, abs(b))
check(len(gpu) == summary.get("gpu_samples"), f"{len(gpu)} GPU lines, the summary's gpu_samples {summary.get('gpu_samples')}")
check(bool(power) and near(statistics.mean(power), summary.get("mean_power_w")),
      f"the series' mean power is the summary's ({summary.get('mean_power_w')})")
check(bool(util) and near(statistics.mean(util), summary.get("mean_gpu_utilization_pct")),
      f"the series' mean utilization is the summary's ({summary.get('mean_gpu_utilization_pct')})")
if raw_path and os.path.exists(raw_path):
    raw = []
    for line in open(raw_path):
        c = [v.strip() for v in line.split(",")]
        try:
            if start <= float(c[0]) <= end:
                raw.append((float(c[2]), float(c[7])))
        except (ValueError, IndexError):
            pass
    if raw and power and util:
        rp, ru = statistics.mean(p for p, _ in raw), statistics.mean(u for _, u in raw)
        check(abs(rp - statistics.mean(power)) <= 0.1 * rp and abs(ru - statistics.mean(util)) <= 10,
              f"a sampler of this script's own, {len(raw)} lines in the run: "
              f"mean {rp:.1f} W, {ru:.1f} %")
print("SERIES:", "OK" if not problems else f"CHECK ({len(problems)}: {'; '.join(problems)})")
sys.exit(1 if problems else 0)
