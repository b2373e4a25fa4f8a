#!/usr/bin/env bash
# CTest's entry to one file of the client suite: node's test runner over FILE against the server
# binary and model that CTest passes in the environment (BITNET_SERVER, BITNET_MODEL).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -f "$here/node_modules/.bitnet-lock.sha256" ]; then
    echo "the client suite's npm packages are not installed: run 'make deps'" \
         "(or bash tests/clients/install.sh)" >&2
    exit 1
fi
cd "$here"
exec node --test --test-reporter=spec "$1"
