#!/usr/bin/env python3
"""Fill the `expect` blocks of the experiments from the published study pages.

    python3 scripts/published-to-expectations.py           # rewrite the .kdl files
    python3 scripts/published-to-expectations.py --check   # verify, write nothing

The experiment files are written by hand; this script owns only the metric lines
inside their `expect <workload> [at=<value>] { ... }` blocks. It parses every
"Serving Benchmark Result" block of a page, finds the step it belongs to (from the
serving script above it and the block's `# label` comment), and writes the numbers
exactly as printed (trailing zeros kept) into the matching `expect` block.

It fails, writing nothing, when a published block has no `expect` block to go to,
an `expect` block has no published numbers, a published failure has no matching
`expect-failure`, or the page's conclusion table disagrees with the expectations
of the conclusion's baseline and optimized steps. Numbers that only the conclusion
table publishes (the 14B optimized ShareGPT run) are taken from the table.

Only the Python standard library is used; no network.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# One entry per published page: where it is, which experiment file it fills, and
# which step each page serving command is.
PAGES = [
    {
        "page": "tests/fixtures/published/qwen3-14b-a100.md",
        "kdl": "experiments/qwen3-14b-a100.kdl",
        "steps": {
            "vllm serve Qwen/Qwen3-14B": "vllm",
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3-14B": "sglang",
            "trtllm-serve Qwen/Qwen3-14B": "trtllm",
            "trtllm-serve Qwen/Qwen3-14B-FP8": "trtllm-fp8",
            "trtllm-serve Qwen/Qwen3-14B-AWQ": "trtllm-awq",
            "vllm serve Qwen/Qwen3-14B-FP8": "vllm-fp8",
            "vllm serve Qwen/Qwen3-14B-AWQ": "vllm-awq",
            "trtllm-serve Qwen/Qwen3-14B --max_num_tokens=16384": "trtllm-mnt",
            "trtllm-serve Qwen/Qwen3-14B --max_seq_len=40960 --enable_chunked_prefill": "trtllm-optimized",
        },
    },
    {
        "page": "tests/fixtures/published/qwen3-235b-a100.md",
        "kdl": "experiments/qwen3-235b-a100.kdl",
        "steps": {
            "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507 -tp 8": "vllm-tp8",
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B-Instruct-2507 --tp-size 8": "sglang-tp8",
            "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 8 --enable-expert-parallel": "vllm-fp8-tp8-ep",
            "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 4": "vllm-fp8-tp4",
            "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 4 --enable-expert-parallel": "vllm-fp8-tp4-ep4",
            "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 4 --max-num-batched-tokens 4096": "vllm-fp8-tp4-mbt",
        },
    },
]

# The `# label` of a result block in "Other Benchmark Cases" -> workload.
LABEL_WORKLOADS = {
    "random 32K input": "very-long",
    "random 4K input": "long",
    "random 2K input": "medium",
    "random 128 input": "short",
}
# A sweep's `# --flag=value` / `# --flag value` label -> that value (workload: sharegpt).
SWEEP_LABEL = re.compile(r"^--[\w-]+(?:=|\s+)(\S+)$")
DEFAULT_WORKLOAD = "sharegpt"

# Conclusion-table rows -> workload.
CASE_WORKLOADS = {
    "ShareGPT": "sharegpt",
    "Short Prompt": "short",
    "Medium Prompt": "medium",
    "Long Prompt": "long",
    "Very Long Prompt": "very-long",
}

# "Serving Benchmark Result" rows -> `vllm bench serve --save-result` keys.
ROWS = {
    "Successful requests": "completed",
    "Benchmark duration (s)": "duration",
    "Total input tokens": "total_input_tokens",
    "Total generated tokens": "total_output_tokens",
    "Request throughput (req/s)": "request_throughput",
    "Output token throughput (tok/s)": "output_throughput",
    "Peak output token throughput (tok/s)": "max_output_tokens_per_s",
    "Peak concurrent requests": "max_concurrent_requests",
    "Total Token throughput (tok/s)": "total_token_throughput",
    "Mean TTFT (ms)": "mean_ttft_ms",
    "Median TTFT (ms)": "median_ttft_ms",
    "P99 TTFT (ms)": "p99_ttft_ms",
    "Mean TPOT (ms)": "mean_tpot_ms",
    "Median TPOT (ms)": "median_tpot_ms",
    "P99 TPOT (ms)": "p99_tpot_ms",
    "Mean ITL (ms)": "mean_itl_ms",
    "Median ITL (ms)": "median_itl_ms",
    "P99 ITL (ms)": "p99_itl_ms",
}
NUMBER = re.compile(r"^\d+(?:\.\d+)?$")


class Error(Exception):
    pass


# ---------------------------------------------------------------- the page

def parse_page(text, steps):
    """Return (results, failures, conclusion).

    results:    {(step, workload, at): [(metric, "number as printed"), ...]}
    failures:   {(step, workload, at): "error message"}
    conclusion: {workload: {"baseline": (tps, tpot, x), "optimized": (tps, tpot, x)}}
    """
    results, failures = {}, {}
    info = None          # title of the last `??? info "..."` admonition
    serving = None       # command of the last serving script
    fence = None         # lines of the fenced code block being read, or None
    conclusion = {}
    for line in text.splitlines():
        s = line.strip()
        if fence is None:
            m = re.match(r'^\?\?\?\+? info "(.*)"$', s)
            if m:
                info = m.group(1)
            elif s.startswith("```"):
                fence = []
            elif s.startswith("| **"):
                parse_conclusion_row(s, conclusion)
            continue
        if not s.startswith("```"):
            fence.append(s)
            continue
        body, fence = fence, None
        title = (info or "").lower()
        info = None
        if "serving script" in title:
            commands = [l for l in body if l and not l.startswith("#")]
            if len(commands) != 1:
                raise Error(f"serving script with {len(commands)} commands: {body}")
            serving = commands[0]
        elif "benchmark result" in title:
            if serving not in steps:
                raise Error(f"no step for serving command {serving!r}")
            parse_results(body, steps[serving], results, failures)
    return results, failures, conclusion


def parse_results(body, step, results, failures):
    label, block, labels_used = None, None, 0
    for s in body:
        if block is None:
            if s.startswith("# "):
                label = s[2:].strip()
            elif s.startswith("=") and "Serving Benchmark Result" in s:
                block = []
            elif s:
                raise Error(f"unexpected line in a result block: {s!r}")
            continue
        if re.fullmatch(r"=+", s):
            key = (step, *label_target(label))
            if key in results:
                raise Error(f"two result blocks for {key}")
            results[key] = block
            label, block = None, None
            labels_used += 1
            continue
        if re.fullmatch(r"-{3,}.*-{3,}", s):   # ----Time to First Token----
            continue
        m = re.match(r"^(.*?):\s+(\S+)$", s)
        if not m or m.group(1) not in ROWS:
            raise Error(f"unknown result row {s!r}")
        if not NUMBER.match(m.group(2)):
            raise Error(f"not a number in {s!r}")
        block.append((ROWS[m.group(1)], m.group(2)))
    if block is not None:
        raise Error(f"unterminated result block for {step}")
    if labels_used == 0:
        # No result: the published run failed; the block is `# <error message>`.
        if label is None:
            raise Error(f"empty result for {step}")
        failures[(step, DEFAULT_WORKLOAD, None)] = label


def label_target(label):
    """(workload, at) of a result block from its `# label` comment."""
    if label is None:
        return DEFAULT_WORKLOAD, None
    if label in LABEL_WORKLOADS:
        return LABEL_WORKLOADS[label], None
    m = SWEEP_LABEL.match(label)
    if m:
        return DEFAULT_WORKLOAD, m.group(1)
    raise Error(f"unknown result label {label!r}")


def parse_conclusion_row(s, conclusion):
    cells = [c.strip() for c in s.strip("|").split("|")]
    case = cells[0].strip("*")
    if case not in CASE_WORKLOADS or len(cells) != 3:
        return

    def cell(c):
        m = re.search(r"Total TPS: ([\d.]+)(?:x(\d+))?.*Mean TPOT\(ms\): ([\d.]+)", c)
        if not m:
            raise Error(f"cannot read conclusion cell {c!r}")
        return m.group(1), m.group(3), int(m.group(2) or 1)

    conclusion[CASE_WORKLOADS[case]] = {"baseline": cell(cells[1]), "optimized": cell(cells[2])}


# ---------------------------------------------------------------- the experiment

STEP = re.compile(r"^\s*(step|sweep)\s+([\w-]+)(.*?)\{\s*$")
EXPECT = re.compile(r"^(\s*)expect\s+([\w-]+)(?:\s+at=(\S+))?\s*\{\s*(?://.*)?$")
FAILURE = re.compile(r'^\s*expect-failure\s+([\w-]+)(?:\s+at=(\S+))?\s+"((?:[^"\\]|\\.)*)"\s*$')
CONCLUSION = re.compile(r"^\s*conclusion\s+baseline=([\w-]+)\s+optimized=([\w-]+)\s*$")


def fill(kdl, results, failures, conclusion, name):
    lines = kdl.split("\n")
    out, i = [], 0
    step, replicas = None, {}
    filled, failures_seen, ours = set(), set(), []
    baseline = optimized = None
    # Numbers published only in the conclusion table, for the optimized step.
    extra = {}
    for line in lines:
        m = CONCLUSION.match(line)
        if m:
            baseline, optimized = m.groups()
    if conclusion and not (baseline and optimized):
        raise Error(f"{name}: the page has a conclusion table but the file no `conclusion`")
    for wl, row in conclusion.items():
        tps, tpot, _ = row["optimized"]
        key = (optimized, wl, None)
        if key not in results:
            extra[key] = [("total_token_throughput", tps), ("mean_tpot_ms", tpot)]
    published = {**results, **extra}

    while i < len(lines):
        line = lines[i]
        m = STEP.match(line)
        if m:
            step = m.group(2)
            r = re.search(r"\breplicas=(\d+)", m.group(3))
            replicas[step] = int(r.group(1)) if r else 1
        m = FAILURE.match(line)
        if m:
            key = (step, m.group(1), m.group(2))
            if key in failures:
                if failures[key] != m.group(3):
                    raise Error(f"{name}: {key}: the page's error is {failures[key]!r}, the file says {m.group(3)!r}")
                failures_seen.add(key)
            else:
                ours.append(key)
        m = EXPECT.match(line)
        if not m:
            out.append(line)
            i += 1
            continue
        indent, wl, at = m.groups()
        key = (step, wl, at)
        j = i + 1
        while not re.match(r"^\s*\}\s*$", lines[j]):
            if "{" in lines[j]:
                raise Error(f"{name}: unterminated expect block at line {i + 1}")
            j += 1
        if key not in published:
            raise Error(f"{name}:{i + 1}: no published numbers for expect {key}")
        if key in filled:
            raise Error(f"{name}:{i + 1}: two expect blocks for {key}")
        filled.add(key)
        out.append(line)
        width = max(len(metric) for metric, _ in published[key])
        for metric, value in published[key]:
            out.append(f"{indent}    {metric.ljust(width)} {value}")
        out.append(lines[j])
        i = j + 1

    missing = [k for k in published if k not in filled]
    if missing:
        raise Error(f"{name}: published numbers with no expect block: {missing}")
    missing = [k for k in failures if k not in failures_seen]
    if missing:
        raise Error(f"{name}: published failures with no expect-failure: {missing}")

    # The conclusion table must agree with the expectations it summarizes.
    for wl, row in conclusion.items():
        for role, st in (("baseline", baseline), ("optimized", optimized)):
            tps, tpot, times = row[role]
            got = dict(published[(st, wl, None)])
            if got.get("total_token_throughput") != tps or got.get("mean_tpot_ms") != tpot:
                raise Error(f"{name}: conclusion {role} {wl}: table {tps}/{tpot}, expectations "
                            f"{got.get('total_token_throughput')}/{got.get('mean_tpot_ms')}")
            if times != replicas.get(st):
                raise Error(f"{name}: conclusion {role} {wl}: table x{times}, step {st} replicas={replicas.get(st)}")
    stats = {
        "expect": len(filled),
        "numbers": sum(len(published[k]) for k in filled),
        "from-table": sorted(extra),
        "failures": len(failures_seen),
        "failures-not-published": ours,
    }
    return "\n".join(out), stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="verify the files, write nothing")
    args = ap.parse_args()
    pending, stale = [], []
    try:
        for p in PAGES:
            page = (ROOT / p["page"]).read_text(encoding="utf-8")
            kdl_path = ROOT / p["kdl"]
            kdl = kdl_path.read_text(encoding="utf-8")
            results, failures, conclusion = parse_page(page, p["steps"])
            new, stats = fill(kdl, results, failures, conclusion, p["kdl"])
            print(f"{p['kdl']}: {stats['expect']} expect blocks, {stats['numbers']} numbers, "
                  f"{stats['failures']} published failures")
            for k in stats["from-table"]:
                print(f"    {k}: from the conclusion table only")
            for k in stats["failures-not-published"]:
                print(f"    {k}: expect-failure whose message is not on the page")
            if new != kdl:
                stale.append(p["kdl"])
                pending.append((kdl_path, new))
    except Error as e:
        sys.exit(f"error: {e}")
    if args.check:
        if stale:
            sys.exit(f"out of date: {', '.join(stale)} (run {Path(__file__).name})")
        print("up to date")
        return
    for path, text in pending:
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
