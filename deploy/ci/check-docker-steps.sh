#!/usr/bin/env bash
# Runs the Dockerfile's builder step (deploy/docker/build.sh) outside Docker into a temporary
# prefix, then checks the installed binaries against the runtime step (deploy/docker/runtime-deps.sh):
# every shared library they load, other than glibc's own, must resolve and belong (dpkg -S) to a
# package that runtime-deps.sh installs. Packages on the list that no binary needs are reported.
#
#   deploy/ci/check-docker-steps.sh [--build-dir DIR] [--reuse-build DIR] [--keep]
# (--reuse-build: see deploy/docker/build.sh)
# Exit 0 when the lists agree, 1 with one line per problem otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."

build_dir=build/docker
keep=0
reuse=()
while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) build_dir="$2"; shift 2 ;;
        --reuse-build) reuse=(--reuse-build "$2"); shift 2 ;;
        --keep) keep=1; shift ;;
        *) echo "check-docker-steps: unknown argument $1" >&2; exit 2 ;;
    esac
done

prefix=$(mktemp -d "${TMPDIR:-/tmp}/bitnet-docker-prefix.XXXXXX")
[ "$keep" -eq 1 ] || trap 'rm -rf "$prefix"' EXIT

bash deploy/docker/build.sh --prefix "$prefix" --build-dir "$build_dir" --cuda OFF "${reuse[@]}"
mapfile -t runtime_pkgs < <(bash deploy/docker/runtime-deps.sh --list)

# Packages glibc's own libraries come from: in every Debian image, never listed.
base_pkgs=(libc6)

# dpkg records paths as shipped (/usr/lib/... on bookworm's merged /usr, /lib/... for older
# packages); ldd may print either. Try the path, its canonical form, and the other spelling.
owner_of() {
    local p="$1" real cand
    real=$(readlink -f "$p")
    for cand in "$p" "$real" "${p#/usr}" "/usr$p" "${real#/usr}" "/usr$real"; do
        [ -n "$cand" ] || continue
        if out=$(dpkg -S "$cand" 2>/dev/null); then
            # "pkg:arch: /path" (possibly several owners, comma-separated: take them all)
            sed -n 's/^\(.*\): \/.*$/\1/p' <<<"$out" | head -1 | tr ',' '\n' | sed 's/^ *//; s/:.*$//'
            return 0
        fi
    done
    return 1
}

fail=0
declare -A used=()
shopt -s nullglob
bins=("$prefix"/bin/*)
[ ${#bins[@]} -gt 0 ] || { echo "check-docker-steps: no binaries installed" >&2; exit 1; }
for bin in "${bins[@]}"; do
    name=$(basename "$bin")
    while read -r line; do
        # "libfoo.so.1 => /path (0x...)", "libfoo.so.1 => not found", "/lib64/ld-linux... (0x...)"
        case "$line" in
            *"=> not found"*) echo "FAIL $name: ${line%% *} is not found"; fail=1; continue ;;
            *"=>"*) path=$(awk '{print $3}' <<<"$line") ;;
            /*) path=$(awk '{print $1}' <<<"$line") ;;
            *) continue ;;   # linux-vdso.so.1
        esac
        if ! pkgs=$(owner_of "$path"); then
            echo "FAIL $name: $path belongs to no Debian package"; fail=1; continue
        fi
        ok=0
        for pkg in $pkgs; do
            for b in "${base_pkgs[@]}"; do [ "$pkg" = "$b" ] && ok=1; done
            for r in "${runtime_pkgs[@]}"; do
                if [ "$pkg" = "$r" ]; then ok=1; used[$r]=1; fi
            done
        done
        if [ "$ok" -eq 1 ]; then
            echo "ok   $name: $path ($pkgs)"
        else
            echo "FAIL $name: $path comes from $pkgs, which deploy/docker/runtime-deps.sh does not install"
            fail=1
        fi
    done < <(ldd "$bin")
done

for r in "${runtime_pkgs[@]}"; do
    # A misspelt name would only break the image build: every listed package must exist.
    if ! dpkg-query -W "$r" >/dev/null 2>&1 && ! apt-cache show "$r" >/dev/null 2>&1; then
        echo "FAIL runtime-deps.sh lists $r, which is no Debian package here"; fail=1
    fi
    [ -n "${used[$r]:-}" ] || echo "note runtime-deps.sh installs $r, which no installed binary loads directly (needed by a binary not built yet, or by another library)"
done

if [ "$fail" -ne 0 ]; then
    echo "check-docker-steps: FAILED (add the packages to deploy/docker/runtime-deps.sh)"
    exit 1
fi
echo "check-docker-steps: ${#bins[@]} binaries, every library provided by the runtime package list"
