#!/usr/bin/env bash
# Installs the client suite's pinned npm packages (package-lock.json) into tests/clients/
# node_modules: one `npm ci`, skipped while the lock file is unchanged since the last install.
# Run by `make deps` (and so by `make test`); Node.js and npm come from deploy/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")"
stamp=node_modules/.bitnet-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "client tests: npm packages up to date"
    exit 0
fi
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
echo "$want" >"$stamp"
echo "client tests: npm packages installed"
