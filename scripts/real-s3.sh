#!/usr/bin/env bash
# A real S3-compatible server for the tests of the `s3://` result cache:
# s3s-fs 0.14.1 from crates.io (an S3 server on a directory, checking AWS
# Signature Version 4), built with `cargo install --locked` into its own
# root outside the clone, beside the real vLLM and guidellm. 0.14.1 is the
# newest that builds with the project's Rust 1.95. Idempotent: a marker file
# with the version skips the install when it is done. Prints nothing on
# success when everything is in place; an install says how long it took (a
# figure for the notes).
set -euo pipefail

S3S_FS_VERSION=0.14.1

cache="${PERFPIPE_TEST_CACHE:-$HOME/.cache/perfpipe-test}"
root="$cache/s3s-fs-$S3S_FS_VERSION"
marker="$root/.perfpipe-installed"
stamp="s3s-fs@$S3S_FS_VERSION"

mkdir -p "$cache"
if [ "$(cat "$marker" 2>/dev/null)" != "$stamp" ] || [ ! -x "$root/bin/s3s-fs" ]; then
    echo "real-s3: installing s3s-fs $S3S_FS_VERSION into $root" >&2
    start=$(date +%s)
    rm -rf "$root"
    # Its own target dir (removed after), not the project's: the server is
    # built once per machine, not per clone.
    CARGO_TARGET_DIR="$cache/s3s-fs-build" cargo install -q --locked \
        "s3s-fs@$S3S_FS_VERSION" --features binary --root "$root"
    rm -rf "$cache/s3s-fs-build"
    echo "$stamp" >"$marker"
    echo "real-s3: install s3s-fs $S3S_FS_VERSION took $(($(date +%s) - start)) s" >&2
fi
