#!/usr/bin/env bash
# Runtime stage of deploy/Dockerfile (also run by deploy/ci/check-runtime-rootfs.sh in a plain
# Debian 12 root): the runtime packages, the unprivileged user, the directories the server uses.
#   runtime-setup.sh [--cuda AUTO|ON|OFF]      (as root)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cuda=OFF
while [ $# -gt 0 ]; do
    case "$1" in
        --cuda) cuda="$2"; shift 2 ;;
        *) echo "runtime-setup.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

bash "$here/runtime-deps.sh" --clean --cuda "$cuda"

# uid/gid 10001: the Kubernetes manifests' runAsUser/runAsGroup/fsGroup.
getent group bitnet >/dev/null || groupadd --system --gid 10001 bitnet
getent passwd bitnet >/dev/null || useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent \
    --no-create-home --shell /usr/sbin/nologin bitnet
# The only writable place besides /tmp (the root filesystem is read-only at run time), and the
# mount point of the models.
install -d -o 10001 -g 10001 -m 0750 /var/cache/bitnet-serve
install -d -m 0755 /models
