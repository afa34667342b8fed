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

who=real-guidellm
# shellcheck source=scripts/python-env.sh
. "$(dirname "$0")/python-env.sh"

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
