#!/usr/bin/env bash
# Checks deploy/cluster/make-certs.sh: into a fresh directory it makes a CA and two node pairs
# that `openssl verify` accepts for both TLS roles (each peer is server and client), with the
# SANs and key usages the cluster needs; a second run changes nothing; a node pair whose key no
# longer matches is remade; a bad node name is refused. Exit 0 when all hold.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-make-certs: $*" >&2; exit 1; }

bash deploy/cluster/make-certs.sh "$tmp/certs" node-a node-b.peers >/dev/null
for node in node-a node-b.peers; do
    crt="$tmp/certs/$node.crt"
    for purpose in sslserver sslclient; do
        openssl verify -CAfile "$tmp/certs/ca.crt" -purpose "$purpose" "$crt" >/dev/null ||
            fail "$node.crt does not verify as $purpose"
    done
    text=$(openssl x509 -in "$crt" -noout -text)
    for want in "DNS:$node" "DNS:localhost" "IP Address:127.0.0.1" \
        "TLS Web Server Authentication, TLS Web Client Authentication" "CA:FALSE"; do
        grep -qF "$want" <<<"$text" || fail "$node.crt lacks '$want'"
    done
    [ "$(stat -c %a "$tmp/certs/$node.key")" = 600 ] || fail "$node.key is not mode 600"
done

before=$(sha256sum "$tmp"/certs/*)
bash deploy/cluster/make-certs.sh "$tmp/certs" node-a node-b.peers >/dev/null
[ "$before" = "$(sha256sum "$tmp"/certs/*)" ] || fail "a second run changed the files"

cp "$tmp/certs/node-a.key" "$tmp/certs/node-b.peers.key"
bash deploy/cluster/make-certs.sh "$tmp/certs" node-b.peers >/dev/null
[ "$(openssl x509 -in "$tmp/certs/node-b.peers.crt" -noout -pubkey)" = \
    "$(openssl pkey -in "$tmp/certs/node-b.peers.key" -pubout)" ] ||
    fail "a pair whose key does not match was not remade"

if bash deploy/cluster/make-certs.sh "$tmp/certs" "bad/name" >/dev/null 2>&1; then
    fail "a node name with '/' was accepted"
fi

# Roles: NODE:ROLES puts one role URI per role in the certificate; other roles remake it.
uris() { openssl x509 -in "$tmp/certs/$1.crt" -noout -ext subjectAltName | grep -o 'role:[a-z]*' | sort | paste -sd,; }
bash deploy/cluster/make-certs.sh "$tmp/certs" node-r:router,admin >/dev/null
[ "$(uris node-r)" = "role:admin,role:router" ] || fail "node-r:router,admin gave roles '$(uris node-r)'"
[ -z "$(uris node-a)" ] || fail "node-a without roles has '$(uris node-a)'"
bash deploy/cluster/make-certs.sh "$tmp/certs" node-r:replica >/dev/null
[ "$(uris node-r)" = "role:replica" ] || fail "other roles did not remake node-r: '$(uris node-r)'"
if bash deploy/cluster/make-certs.sh "$tmp/certs" node-r:root >/dev/null 2>&1; then
    fail "an unknown role was accepted"
fi
echo "check-make-certs: CA and node certificates verify for server and client auth; idempotent; roles"
