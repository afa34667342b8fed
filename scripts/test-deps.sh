#!/usr/bin/env bash
# What the tests need besides the Rust toolchain, from Debian where missing:
# python3 (the stand-in guidellm), openssl (signs the test registry's tokens),
# docker-registry (the OCI registry `perfpipe lock` is tested against),
# apache2-utils (htpasswd: the bcrypt logins of the authenticated registry),
# slurm-wlm and munge (the two-node cluster of the Slurm tests), chromium
# (loads the HTML report headless) and util-linux (setpriv: a root test drops
# to nobody where permissions must bind). Then scripts/real-vllm.sh: vLLM's
# CPU build and a tiny model, outside the clone, for the real-engine tests,
# and scripts/real-guidellm.sh: guidellm 0.5.3 beside them, and
# scripts/real-s3.sh: s3s-fs, the S3-compatible server of the s3:// cache tests.
set -euo pipefail
here="$(dirname "$0")"

missing=()
[ -x /usr/bin/python3 ] || missing+=(python3)
command -v openssl >/dev/null || missing+=(openssl)
[ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
command -v htpasswd >/dev/null || missing+=(apache2-utils)
[ -x /usr/sbin/slurmctld ] || missing+=(slurm-wlm)
[ -x /usr/sbin/munged ] || missing+=(munge)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/setpriv ] || missing+=(util-linux)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing ${missing[*]} (Debian packages the tests use)" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

"$here/real-vllm.sh"
"$here/real-guidellm.sh"
"$here/real-s3.sh"
