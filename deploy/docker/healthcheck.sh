#!/usr/bin/env bash
# Docker HEALTHCHECK: GET /health/live on the container's own loopback, exit 0 on HTTP 200.
# Uses bash's /dev/tcp so the runtime image needs no curl or wget. Bounded by `timeout`.
# With HTTPS on (BITNET_TLS_CERT set) bash cannot speak TLS: the plain request then gets the
# listener's own refusal, "400" with code https_required, which the same io threads that serve
# /health/live write, so that answer counts as alive; anything else (no answer, another status)
# does not.
set -u
port="${BITNET_PORT:-8080}"
tls="${BITNET_TLS_CERT:-}"
exec timeout "${BITNET_HEALTHCHECK_TIMEOUT_S:-3}" bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" >&3
    IFS= read -r status <&3 || exit 1
    case "$status" in "HTTP/1."?" 200"*) exit 0 ;; esac
    if [ -n "$2" ]; then
        case "$status" in "HTTP/1."?" 400"*) grep -q "\"https_required\"" <&3 && exit 0 ;; esac
    fi
    exit 1
' healthcheck "$port" "$tls"
