#!/usr/bin/env python3
"""Write datasets/sharegpt-sample.json: a SYNTHETIC stand-in for ShareGPT.

    python3 scripts/make-sharegpt-sample.py            # (re)write the sample
    python3 scripts/make-sharegpt-sample.py --check    # verify it is up to date

The file has the format of ShareGPT_V3_unfiltered_cleaned_split.json (a JSON list
of {"id", "conversations": [{"from": "human"|"gpt", "value"}, ...]}) but none of
its text: every turn is words drawn from a fixed vocabulary of common English
words, joined by single spaces, so that a whitespace tokenizer counts one token
per word. The output is deterministic (seeded `random`, no network).

Shape, in words (= tokens for a whitespace tokenizer):
  - 1100 conversations;
  - 88 (8%) have a single turn, which `vllm bench serve` drops (it needs a
    prompt and a reply);
  - 12 have a first exchange that vLLM's length filter drops (prompt < 4,
    reply < 4, prompt > 1024, or prompt + reply > 2048), so the filter has work;
  - the other 1000 pass the filter, with 2 to 6 turns: first human turn
    log-normal, clipped to 4..1000, 217,393 words in all (217.4 a prompt, as the
    real dataset's 1000 sampled prompts have tokens); first gpt reply
    log-normal, clipped to 4..1000, 201,605 words in all (the published vLLM
    baseline's generated tokens); later turns shorter.
So whatever order a benchmark shuffles them in, 1000 prompts of the sample are
exactly the 1000 valid conversations, with the real run's total input tokens.
"""

import argparse
import hashlib
import json
import math
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "datasets" / "sharegpt-sample.json"

SEED = 20251121
CONVERSATIONS = 1100
SINGLE_TURN = 88
VALID = 1000
PROMPT_WORDS = 217_393      # total over the valid conversations' first human turns
REPLY_WORDS = 201_605       # total over their first gpt replies
CLIP = (4, 1000)

# vLLM's sample filter (vllm/benchmarks/datasets.py, is_valid_sequence).
MIN_LEN, MAX_PROMPT, MAX_TOTAL = 4, 1024, 2048

VOCABULARY = """
the of and to a in is it you that he was for on are with as his they be at one
have this from or had by hot word but what some we can out other were all there
when up use your how said an each she which do their time if will way about many
then them write would like so these her long make thing see him two has look
more day could go come did number sound no most people my over know water than
call first who may down side been now find any new work part take get place made
live where after back little only round man year came show every good me give
our under name very through just form sentence great think say help low line
differ turn cause much mean before move right boy old too same tell does set
three want air well also play small end put home read hand port large spell add
even land here must big high such follow act why ask men change went light kind
off need house picture try us again animal point mother world near build self
earth father head stand own page should country found answer school grow study
still learn plant cover food sun four between state keep eye never last let
thought city tree cross farm hard start might story saw far sea draw left late
run while press close night real life few north open seem together next white
children begin got walk example ease paper group always music those both mark
often letter until mile river car feet care second book carry took science eat
room friend began idea fish mountain stop once base hear horse cut sure watch
color face wood main enough plain girl usual young ready above ever red list
though feel talk bird soon body dog family direct pose leave song measure door
product black short numeral class wind question happen complete ship area half
rock order fire south problem piece told knew pass since top whole king space
heard best hour better true during hundred five remember step early hold west
ground interest reach fast verb sing listen six table travel less morning ten
simple several vowel toward war lay against pattern slow center love person
money serve appear road map rain rule govern pull cold notice voice unit power
town fine certain fly fall lead cry dark machine note wait plan figure star box
noun field rest correct able pound done beauty drive stood contain front teach
week final gave green oh quick develop ocean warm free minute strong special
mind behind clear tail produce fact street inch multiply nothing course stay
wheel full force blue object decide surface deep moon island foot system busy
test record boat common gold possible plane stead dry wonder laugh thousand ago
ran check game shape equate miss brought heat snow tire bring yes distant fill
east paint language among grand ball yet
""".split()


def lognormal_lengths(rng, n, target_total, sigma, lo, hi):
    """n lengths, log-normal-ish, clipped to lo..hi, summing exactly to target_total."""
    raw = [rng.lognormvariate(0.0, sigma) for _ in range(n)]

    def lengths(scale):
        return [min(hi, max(lo, round(x * scale))) for x in raw]

    a, b = 1e-3, 1e6                       # bisect the scale for the total
    for _ in range(200):
        mid = math.sqrt(a * b)
        if sum(lengths(mid)) < target_total:
            a = mid
        else:
            b = mid
    out = lengths(a)
    diff = target_total - sum(out)          # a few words: nudge random entries
    while diff:
        i = rng.randrange(n)
        step = 1 if diff > 0 else -1
        if lo <= out[i] + step <= hi:
            out[i] += step
            diff -= step
    return out


def text(rng, words):
    return " ".join(rng.choice(VOCABULARY) for _ in range(words))


def later_turns(rng):
    """Lengths of the turns after the first exchange: 0 to 4 more."""
    extra = rng.randint(2, 6) - 2
    return [min(600, max(1, round(rng.lognormvariate(math.log(28), 0.9)))) for _ in range(extra)]


def build():
    rng = random.Random(SEED)
    assert len(set(VOCABULARY)) == len(VOCABULARY), "duplicate vocabulary word"

    prompts = lognormal_lengths(rng, VALID, PROMPT_WORDS, 1.0, *CLIP)
    replies = lognormal_lengths(rng, VALID, REPLY_WORDS, 0.85, *CLIP)
    # (kind, [turn lengths]) for every conversation, in no particular order yet.
    plans = [("valid", [p, r] + later_turns(rng)) for p, r in zip(prompts, replies)]
    for _ in range(SINGLE_TURN):
        plans.append(("single-turn", [min(1000, max(4, round(rng.lognormvariate(math.log(130), 1.0))))]))
    invalid = (
        [[rng.randint(1, 3), rng.randint(20, 300)] for _ in range(3)]            # prompt < 4
        + [[rng.randint(20, 300), rng.randint(1, 3)] for _ in range(3)]          # reply < 4
        + [[rng.randint(1025, 1600), rng.randint(20, 300)] for _ in range(4)]    # prompt > 1024
        + [[rng.randint(950, 1024), rng.randint(1100, 1200)] for _ in range(2)]  # total > 2048
    )
    plans += [("filtered", t + later_turns(rng)) for t in invalid]
    assert len(plans) == CONVERSATIONS
    rng.shuffle(plans)

    data = []
    for i, (_, turns) in enumerate(plans):
        conversation = [
            {"from": "human" if k % 2 == 0 else "gpt", "value": text(rng, n)}
            for k, n in enumerate(turns)
        ]
        data.append({"id": f"synthetic-{i:04d}", "conversations": conversation})
    # One conversation a line: small diffs, still a plain JSON list.
    body = ",\n".join(json.dumps(c, ensure_ascii=False) for c in data)
    return data, "[\n" + body + "\n]\n"


def vllm_filter(data):
    """(prompt_len, reply_len) of the conversations `vllm bench serve` keeps."""
    kept = []
    for entry in data:
        conv = entry["conversations"]
        if len(conv) < 2:
            continue
        p, r = len(conv[0]["value"].split()), len(conv[1]["value"].split())
        if p < MIN_LEN or r < MIN_LEN or p > MAX_PROMPT or p + r > MAX_TOTAL:
            continue
        kept.append((p, r))
    return kept


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="verify the file, write nothing")
    args = ap.parse_args()
    data, out = build()
    kept = vllm_filter(data)
    n = len(kept)
    p = sum(k[0] for k in kept)
    r = sum(k[1] for k in kept)
    print(f"{len(data)} conversations, {sum(len(c['conversations']) < 2 for c in data)} single-turn, "
          f"{n} kept by vLLM's filter: {p} prompt words (mean {p / n:.1f}), "
          f"{r} reply words (mean {r / n:.1f}); {len(out.encode())} bytes, "
          f"sha256 {hashlib.sha256(out.encode()).hexdigest()[:16]}")
    if args.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != out:
            sys.exit(f"out of date: {OUT.relative_to(ROOT)} (run {Path(__file__).name})")
        print("up to date")
        return
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(out, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
