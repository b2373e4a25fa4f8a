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
    libssl-dev                       # SHA-256 of model files, HTTPS (Beast SSL streams)
    libcli11-dev                     # command-line parsing of the tools
    # tests and benchmarks
    doctest-dev libbenchmark-dev
    python3                          # small helper scripts in tests
    openssl curl                     # HTTPS and cluster TLS tests: certificates made at test
                                     # time, curl --cacert as the client
    json-schema-test-suite           # the official JSON Schema cases (tests/constrain)
    python3-jsonschema               # the schema fuzzer's independent validator (tests/fuzz)
    python3-rfc3987                  # its `uri` format checker
    python3-jinja2                   # test only: the reference renderer of chat templates
                                     # (tests/model/render_chat_template.py)
    chromium                         # the web page's browser tests (tests/clients/web-ui.test.mjs,
                                     # driven by puppeteer-core)
    nodejs npm                       # the npm client suite (tests/clients; its packages:
                                     # tests/clients/install.sh, run by make deps)
)

source "$(dirname "${BASH_SOURCE[0]}")/apt-missing.sh"
apt_missing "${packages[@]}"
# A Node.js/npm installed from elsewhere (e.g. a nodesource nodejs that bundles npm) is fine too.
if command -v node >/dev/null && command -v npm >/dev/null; then
    filtered=()
    for p in "${missing[@]}"; do case "$p" in nodejs|npm) ;; *) filtered+=("$p") ;; esac; done
    missing=("${filtered[@]}")
fi

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages present"
    exit 0
fi

apt_become_root install-deps "$0" "$@"

apt_install_missing install-deps
