#!/usr/bin/env bash
# The Dockerfile's runtime stage without Docker, closer than check-docker-steps.sh's dpkg check:
# a minimal Debian 12 root filesystem (debootstrap --variant=minbase, the same release as
# debian:bookworm-slim), deploy/docker/runtime-setup.sh run inside it (runtime packages, user
# bitnet = 10001, directories), the builder's prefix copied in, then every installed binary must
# load all its libraries (ldd inside the root, no "not found") and run as that user.
#
#   deploy/ci/check-runtime-rootfs.sh [--rootfs DIR] [--prefix DIR] [--reuse-build DIR]
#     --rootfs DIR   reuse/create the root filesystem there (default: a temporary one, removed)
#     --prefix DIR   an existing build.sh prefix (default: run deploy/docker/build.sh into a temp one)
#     --reuse-build DIR  passed to deploy/docker/build.sh when it runs (an existing build tree)
# Needs root, debootstrap (apt-get install debootstrap) and Debian's package mirror; about 1 min.
# Where one of them is missing (an unprivileged or offline CI runner) it says SKIP and exits 0:
# check-docker-steps.sh still checks the runtime package list there.
set -euo pipefail
cd "$(dirname "$0")/../.."

rootfs="" prefix=""
reuse=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rootfs) rootfs="$2"; shift 2 ;;
        --prefix) prefix="$2"; shift 2 ;;
        --reuse-build) reuse=(--reuse-build "$2"); shift 2 ;;
        *) echo "check-runtime-rootfs: unknown argument $1" >&2; exit 2 ;;
    esac
done
skip() { echo "check-runtime-rootfs: SKIP ($*)"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip "needs root for chroot"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bitnet-rootfs-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[ -n "$rootfs" ] || rootfs="$tmp/rootfs"
if [ -z "$prefix" ]; then
    prefix="$tmp/prefix"
    bash deploy/docker/build.sh --prefix "$prefix" --cuda OFF "${reuse[@]}"
fi

if [ ! -x "$rootfs/usr/bin/apt-get" ]; then
    if ! debootstrap --variant=minbase bookworm "$rootfs" >"$tmp/debootstrap.log" 2>&1; then
        tail -5 "$tmp/debootstrap.log"
        # No mirror reachable is the runner's limit, not the kit's; anything else is a failure.
        if grep -qiE "could not resolve|failed to download|temporary failure|unable to fetch|connection (refused|timed out)" "$tmp/debootstrap.log"; then
            skip "Debian's package mirror is not reachable"
        fi
        exit 1
    fi
fi
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
install -d "$rootfs/tmp/bitnet-setup"
install -m 0755 deploy/docker/runtime-deps.sh deploy/docker/runtime-setup.sh "$rootfs/tmp/bitnet-setup/"
chroot "$rootfs" bash /tmp/bitnet-setup/runtime-setup.sh --cuda OFF
rm -rf "$rootfs/tmp/bitnet-setup"
rm -rf "$rootfs/opt/bitnet-serve"
cp -a "$prefix" "$rootfs/opt/bitnet-serve"

fail=0
for bin in "$rootfs"/opt/bitnet-serve/bin/*; do
    name=$(basename "$bin")
    if chroot "$rootfs" ldd "/opt/bitnet-serve/bin/$name" | grep "not found"; then
        echo "FAIL $name: libraries missing in the runtime root"; fail=1; continue
    fi
    if chroot --userspec=bitnet:bitnet "$rootfs" "/opt/bitnet-serve/bin/$name" --help >/dev/null 2>&1; then
        echo "ok   $name runs as user bitnet with only the runtime packages"
    else
        echo "FAIL $name --help fails in the runtime root"; fail=1
    fi
done
# Real work with the runtime libraries: make a tiny model, verify it (the tools write to /tmp only).
if [ -x "$rootfs/opt/bitnet-serve/bin/bitnet-model" ] && [ -x "$rootfs/opt/bitnet-serve/bin/bitnet-cli" ]; then
    install -d -m 1777 "$rootfs/tmp"
    if chroot --userspec=bitnet:bitnet "$rootfs" /opt/bitnet-serve/bin/bitnet-model make --shape tiny --seed 1 \
            -o /tmp/tiny.gguf >/dev/null \
        && chroot --userspec=bitnet:bitnet "$rootfs" /opt/bitnet-serve/bin/bitnet-cli verify /tmp/tiny.gguf; then
        echo "ok   bitnet-model make + bitnet-cli verify in the runtime root"
    else
        echo "FAIL bitnet-model make / bitnet-cli verify in the runtime root"; fail=1
    fi
    rm -f "$rootfs/tmp/tiny.gguf"
fi
if chroot --userspec=bitnet:bitnet "$rootfs" sh -c 'touch /var/cache/bitnet-serve/.w && rm /var/cache/bitnet-serve/.w'; then
    echo "ok   /var/cache/bitnet-serve is writable by user bitnet"
else
    echo "FAIL /var/cache/bitnet-serve is not writable by user bitnet"; fail=1
fi
bash -n "$rootfs/opt/bitnet-serve/libexec/bitnet-serve/healthcheck.sh" || fail=1
[ "$fail" -eq 0 ] && echo "check-runtime-rootfs: runtime stage OK" || { echo "check-runtime-rootfs: FAILED"; exit 1; }
