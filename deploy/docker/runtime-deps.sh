#!/usr/bin/env bash
# Runtime step of deploy/Dockerfile: installs exactly the Debian 12 packages whose shared libraries
# the installed binaries load, and nothing else (no compilers, no -dev packages, no curl: the
# health check uses bash's /dev/tcp). deploy/ci/check-docker-steps.sh compares this list with the
# `ldd` of the built binaries, so a new library dependency fails CI until it is added here.
#
#   deploy/docker/runtime-deps.sh            install the packages (as root; apt is not touched when
#                                            they are all present)
#   deploy/docker/runtime-deps.sh --list     print the package names, one a line
#   deploy/docker/runtime-deps.sh --clean    also drop apt's package lists afterwards (images)
#   --cuda ON adds nothing from Debian: CMake links the CUDA runtime statically and the driver's
#   libcuda.so.1 is mounted into the container by the NVIDIA container toolkit at run time.
set -euo pipefail

packages=(
    libstdc++6 libgcc-s1             # C++ runtime
    libcaf-core0.17 libcaf-io0.17 libcaf-openssl0.17   # CAF 0.17.6 actors
    libboost-json1.81.0 libboost-container1.81.0       # Boost.JSON (and its allocator library)
    libspdlog1.10 libfmt9            # logging
    libprometheus-cpp-core1.0        # metrics registry and text serializer
    libpcre2-8-0                     # BPE pre-tokenizer regexes
    libssl3                          # SHA-256 of model files (libcrypto), CAF openssl, HTTPS
)

list=0
clean=0
while [ $# -gt 0 ]; do
    case "$1" in
        --list) list=1; shift ;;
        --clean) clean=1; shift ;;
        --cuda) shift 2 ;;   # see the header: nothing to add from Debian
        *) echo "runtime-deps.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ "$list" -eq 1 ]; then
    printf '%s\n' "${packages[@]}"
    exit 0
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "runtime-deps: all ${#packages[@]} packages present"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "runtime-deps: missing ${missing[*]}; run this script as root" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [ "$clean" -eq 1 ]; then apt-get clean; rm -rf /var/lib/apt/lists/*; fi
