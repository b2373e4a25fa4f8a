# Sourced by the install scripts (deploy/install-deps.sh, deploy/install-deploy-tools.sh,
# tools/train/install-train-deps.sh): which Debian packages are missing, getting root for apt,
# and installing them. Nothing here touches apt when every package is present.

# apt_missing PKG...: sets the array `missing` to the packages dpkg does not list as installed.
apt_missing() {
    missing=()
    local p
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$p")
        fi
    done
}

# apt_become_root NAME COMMAND...: when not root, re-runs COMMAND (the calling script and its
# arguments) through sudo, or stops with a message naming the missing packages.
apt_become_root() {
    local name=$1
    shift
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then
            exec sudo -E "$@"
        fi
        echo "$name: missing ${missing[*]}; run this script as root" >&2
        exit 1
    fi
}

# apt_install_missing NAME: installs the packages of `missing`, quietly and without recommends.
apt_install_missing() {
    echo "$1: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
