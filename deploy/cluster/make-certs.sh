#!/usr/bin/env bash
# Makes the certificates of a bitnet-server cluster's mutual TLS (cluster_cert, cluster_key,
# cluster_ca; conf/README.md) with the openssl command, nothing else:
#   DIR/ca.crt, DIR/ca.key        a cluster CA (EC P-256, 10 years), made once and then reused
#   DIR/NODE.crt, DIR/NODE.key    per NODE, signed by that CA (EC P-256, 825 days); common
#                                 name NODE (peers check a node's name against it);
#                                 subjectAltName DNS:NODE, DNS:localhost, IP:127.0.0.1 (plus
#                                 EXTRA_SANS, e.g. EXTRA_SANS='DNS:*.bitnet-serve-peers.ns.svc');
#                                 NODE:ROLES (e.g. a:replica,router,admin or r:router) adds one
#                                 URI:urn:bitnet-serve:role:ROLE per role; a certificate with no
#                                 role is trusted as replica and router, never admin (README,
#                                 "Scaling out");
#                                 extendedKeyUsage serverAuth + clientAuth, since every peer
#                                 both accepts links and opens them
# Idempotent: an existing CA is kept, and so is a node's pair that still verifies against it and
# whose key matches its certificate; anything else is (re)made. Keys are mode 600.
# On Kubernetes, one pair shared by every pod (a wildcard SAN over the peers' headless Service)
# goes into the Secret as tls.crt / tls.key / ca.crt: see deploy/k8s/overlays/cluster.
set -euo pipefail

usage() {
    echo "usage: $0 DIR NODE[:ROLES] [NODE[:ROLES]...]   (NODE: 1..64 of letters, digits, '.', '_', '-';" >&2
    echo "       ROLES: replica, router, admin, comma-separated)" >&2
    exit 2
}
[ $# -ge 2 ] || usage
dir=$1
shift
for spec in "$@"; do
    node=${spec%%:*}
    # The node_name rule of conf/host_port.hpp; "ca" would overwrite the CA's files.
    if ! [[ $node =~ ^[A-Za-z0-9._-]{1,64}$ ]] || [ "$node" = ca ]; then
        echo "make-certs: '$node' is not a node name" >&2
        usage
    fi
    if [ "$spec" != "$node" ] && ! [[ ${spec#*:} =~ ^(replica|router|admin)(,(replica|router|admin))*$ ]]; then
        echo "make-certs: '${spec#*:}' is not a list of roles (replica, router, admin)" >&2
        usage
    fi
done

# The role URIs of a NODE[:ROLES] spec, sorted, one per line.
role_uris() {
    [ "$1" = "${1%%:*}" ] && return 0
    tr ',' '\n' <<<"${1#*:}" | sort -u | sed 's/^/URI:urn:bitnet-serve:role:/'
}
command -v openssl >/dev/null || { echo "make-certs: the openssl command is missing" >&2; exit 1; }

mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
# A minimal config, so the system's openssl.cnf adds no default extensions of its own.
printf '[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n' >"$work/req.cnf"

if [ ! -s "$dir/ca.crt" ] || [ ! -s "$dir/ca.key" ]; then
    new_key "$dir/ca.key"
    openssl req -new -x509 -config "$work/req.cnf" -key "$dir/ca.key" -sha256 -days 3650 \
        -subj "/CN=bitnet-serve cluster CA" -addext "subjectKeyIdentifier = hash" \
        -addext "basicConstraints = critical, CA:TRUE, pathlen:0" \
        -addext "keyUsage = critical, keyCertSign, cRLSign" -out "$dir/ca.crt"
    chmod 644 "$dir/ca.crt"
    echo "make-certs: made the CA $dir/ca.crt"
fi

# True when DIR/NODE.{crt,key} exist, the certificate verifies against the CA, the key is its and
# it carries exactly the roles asked for ($2: role_uris' lines).
node_ok() {
    local crt="$dir/$1.crt" key="$dir/$1.key"
    [ -s "$crt" ] && [ -s "$key" ] || return 1
    local have
    have=$(openssl x509 -in "$crt" -noout -ext subjectAltName 2>/dev/null |
        grep -o 'URI:urn:bitnet-serve:role:[a-z]*' | sort -u || true)
    [ "$have" = "$2" ] || return 1
    openssl verify -CAfile "$dir/ca.crt" -purpose sslclient "$crt" >/dev/null 2>&1 || return 1
    openssl verify -CAfile "$dir/ca.crt" -purpose sslserver "$crt" >/dev/null 2>&1 || return 1
    [ "$(openssl x509 -in "$crt" -noout -pubkey)" = "$(openssl pkey -in "$key" -pubout)" ]
}

for spec in "$@"; do
    node=${spec%%:*}
    roles=$(role_uris "$spec")
    if node_ok "$node" "$roles"; then
        echo "make-certs: $dir/$node.crt is valid, kept"
        continue
    fi
    san="DNS:$node,DNS:localhost,IP:127.0.0.1${EXTRA_SANS:+,$EXTRA_SANS}"
    [ -z "$roles" ] || san="$san,$(paste -sd, <<<"$roles")"
    cat >"$work/node.ext" <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = $san
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
EOF
    new_key "$dir/$node.key"
    openssl req -new -config "$work/req.cnf" -key "$dir/$node.key" -subj "/CN=$node" \
        -out "$work/$node.csr"
    openssl x509 -req -in "$work/$node.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
        -set_serial "0x$(openssl rand -hex 16)" -sha256 -days 825 -extfile "$work/node.ext" \
        -out "$dir/$node.crt" 2>/dev/null
    chmod 644 "$dir/$node.crt"
    node_ok "$node" "$roles" || { echo "make-certs: $dir/$node.crt does not verify" >&2; exit 1; }
    echo "make-certs: made $dir/$node.crt ($san)"
done
