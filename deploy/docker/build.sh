#!/usr/bin/env bash
# Builder step of deploy/Dockerfile, also run by CI outside Docker (deploy/ci/check-docker-steps.sh),
# so the image and CI cannot drift: configure (release preset, own build tree), build the
# executables, install them into a prefix.
#
#   deploy/docker/build.sh [--prefix DIR] [--build-dir DIR] [--cuda AUTO|ON|OFF] [--jobs N]
#                          [--reuse-build DIR]
#
# --reuse-build DIR skips the configure step and builds (usually: finds built) the executables in
# an existing tree of another preset: CI passes its dev tree, whose executables load the same
# libraries, instead of compiling the whole project a third time for the library check.
#
# Installs into PREFIX:
#   bin/bitnet-server (when the target exists), bin/bitnet-cli, bin/bitnet-model  (stripped)
#   etc/bitnet-serve/server.json   the default configuration (conf/*.json) or '{}' until one exists
#   libexec/bitnet-serve/healthcheck.sh
# Expects the build dependencies to be present (deploy/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

prefix=/opt/bitnet-serve
build_dir=build/docker
cuda="${BITNET_CUDA:-OFF}"
jobs="$(nproc)"
reuse=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --build-dir) build_dir="$2"; shift 2 ;;
        --cuda) cuda="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --reuse-build) reuse="$2"; shift 2 ;;
        *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$cuda" in AUTO|ON|OFF) ;; *) echo "build.sh: --cuda must be AUTO, ON or OFF" >&2; exit 2 ;; esac

# The release preset (-O3 -DNDEBUG, Ninja, ccache), in a tree of its own so a developer's
# build/release keeps its options; no benchmarks in an image.
if [ -n "$reuse" ]; then
    [ -f "$reuse/build.ninja" ] || { echo "build.sh: $reuse is not a configured build tree" >&2; exit 2; }
    build_dir="$reuse"
else
    cmake --preset release -B "$build_dir" -DBITNET_BUILD_BENCH=OFF -DBITNET_CUDA="$cuda" >/dev/null
fi

wanted=(bitnet-server bitnet-cli bitnet-model)
available=$(ninja -C "$build_dir" -t targets all | sed -n 's/^\(bitnet-[a-z]*\): .*/\1/p' | sort -u)
targets=()
for t in "${wanted[@]}"; do
    if grep -qx "$t" <<<"$available"; then
        targets+=("$t")
    else
        echo "build.sh: target $t does not exist (yet); skipped" >&2
    fi
done
[ ${#targets[@]} -gt 0 ] || { echo "build.sh: nothing to build" >&2; exit 1; }
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"

install -d "$prefix/bin" "$prefix/etc/bitnet-serve" "$prefix/libexec/bitnet-serve"
for t in "${targets[@]}"; do
    install -m 0755 -s "$build_dir/tools/$t" "$prefix/bin/$t"
done

# Default configuration: the one conf/ ships (a single conf/*.json), else an empty object (every key
# then comes from the server's defaults and BITNET_* variables).
shopt -s nullglob
confs=(conf/*.json)
if [ ${#confs[@]} -eq 1 ]; then
    install -m 0644 "${confs[0]}" "$prefix/etc/bitnet-serve/server.json"
elif [ ${#confs[@]} -gt 1 ]; then
    for c in "${confs[@]}"; do install -m 0644 "$c" "$prefix/etc/bitnet-serve/"; done
    [ -e "$prefix/etc/bitnet-serve/server.json" ] || echo '{}' >"$prefix/etc/bitnet-serve/server.json"
else
    echo '{}' >"$prefix/etc/bitnet-serve/server.json"
fi
install -m 0755 deploy/docker/healthcheck.sh "$prefix/libexec/bitnet-serve/healthcheck.sh"

echo "build.sh: installed ${targets[*]} into $prefix"
