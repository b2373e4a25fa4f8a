#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing bitnet-serve need, and only those.
# Idempotent: packages already present are left alone, and apt is not touched at all when nothing
# is missing. Run as root (or through sudo) on Debian 12 "bookworm".
set -euo pipefail

packages=(
    # toolchain and build
    g++ cmake ninja-build ccache make pkg-config
    # runtime/serving libraries
    libcaf-dev                       # actors (CAF 0.17.6: core, io, openssl)
    libboost1.81-dev                 # Beast, Asio, system::result
    libboost-json1.81-dev            # Boost.JSON
    libspdlog-dev libfmt-dev         # logging
    prometheus-cpp-dev               # metrics registry and text serializer
    libpcre2-dev                     # Unicode-class regexes of the BPE pre-tokenizers
    libssl-dev                       # SHA-256 of model files
    libcli11-dev                     # command-line parsing of the tools
    # tests and benchmarks
    doctest-dev libbenchmark-dev
    python3                          # small helper scripts in tests
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages present"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
        exec sudo -E "$0" "$@"
    fi
    echo "install-deps: missing ${missing[*]}; run this script as root" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
