# Sourced by scripts/real-vllm.sh and scripts/real-guidellm.sh: finding a
# Python the packages support and a `uv` to install with, written once.
# Needs `$cache` (the test cache outside the clone) and `$who` (the script's
# name, for messages).

find_python() { # prints a Python 3.10-3.13 on PATH
    local candidate
    for candidate in python3.12 python3.11 python3.10 python3; do
        if command -v "$candidate" >/dev/null &&
            "$candidate" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; then
            command -v "$candidate"
            return
        fi
    done
    echo "$who: no Python 3.10-3.13 found" >&2
    exit 1
}

find_uv() { # prints uv: the one on PATH, or one installed with pip into the cache
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
