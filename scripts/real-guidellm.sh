#!/usr/bin/env bash
# A real guidellm for the tests of the `guidellm` harness: guidellm 0.5.3 (the
# version the lab's pages used) from PyPI, in its own virtual environment
# outside the clone, beside the real vLLM of scripts/real-vllm.sh. Idempotent:
# a marker file with the version skips the install when it is done. Prints
# nothing on success when everything is in place; an install says how long it
# took (a figure for the notes).
set -euo pipefail

GUIDELLM_VERSION=0.5.3

cache="${PERFPIPE_TEST_CACHE:-$HOME/.cache/perfpipe-test}"
venv="$cache/guidellm-$GUIDELLM_VERSION"
marker="$venv/.perfpipe-installed"
stamp="guidellm==$GUIDELLM_VERSION"

find_python() {
    local candidate
    for candidate in python3.12 python3.11 python3.10 python3; do
        if command -v "$candidate" >/dev/null &&
            "$candidate" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; then
            command -v "$candidate"
            return
        fi
    done
    echo "real-guidellm: no Python 3.10-3.13 found (guidellm $GUIDELLM_VERSION needs one)" >&2
    exit 1
}

find_uv() {
    if command -v uv >/dev/null; then
        command -v uv
        return
    fi
    if [ ! -x "$cache/uv/bin/uv" ]; then
        "$(find_python)" -m venv "$cache/uv"
        "$cache/uv/bin/pip" install -q uv
    fi
    echo "$cache/uv/bin/uv"
}

install_guidellm() {
    local uv
    uv="$(find_uv)"
    rm -rf "$venv"
    "$uv" venv -q --python "$(find_python)" "$venv"
    VIRTUAL_ENV="$venv" "$uv" pip install -q --python "$venv/bin/python" "guidellm==$GUIDELLM_VERSION"
    echo "$stamp" >"$marker"
}

mkdir -p "$cache"
if [ "$(cat "$marker" 2>/dev/null)" != "$stamp" ]; then
    echo "real-guidellm: installing guidellm $GUIDELLM_VERSION into $venv" >&2
    start=$(date +%s)
    install_guidellm
    echo "real-guidellm: install guidellm $GUIDELLM_VERSION took $(($(date +%s) - start)) s" >&2
fi
