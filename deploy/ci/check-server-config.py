#!/usr/bin/env python3
"""Checks the kit's server configuration with the server's own config loader.

  check-server-config.py [--secret NAME/KEY=VALUE ...] BIN_DIR RENDERED.yaml [RENDERED.yaml ...]

For every Deployment and StatefulSet of bitnet-serve in the rendered manifests (a container named
bitnet-server; other workloads, such as deploy/otel's collector, are not the server's): takes its
bitnet-server container's `env` as the kubelet would resolve it (plain values with $(VAR)
references to earlier entries expanded; fieldRef metadata.name / metadata.namespace as the first
pod's name and "default"; secretKeyRef entries as the stand-in value given by --secret for that
Secret and key, else left out: the API keys' are optional) and the `server.json` of the
ConfigMap it mounts, runs `BIN_DIR/bitnet-server --config server.json --print-config` with that
environment (the loader refuses unknown keys and out-of-range values, naming them), then checks the
effective configuration against the workload: the port is the container's http port, the drain
timeout fits the grace period (grace > preStop sleep + drain), a model is configured and it sits
under the /models mount. Files a value names under a mounted Secret (the cluster's TLS files) exist
in a pod; here they are empty stand-ins at the same relative path, since the loader checks that
they can be read. For a cluster (cluster_listen set): the node name is the pod's name and the peer
listener binds every interface on the container's cluster port. With tracing (otlp_endpoint set):
the endpoint is an http(s) base URL without /v1/traces (the server appends it), the sample ratio
is in 0..1, and the server reads as many otlp_headers as the rendering gives (a Secret's
BITNET_OTLP_HEADERS "name=value,name=value" included). Exit 0 when all agree; 1 with one line per
problem.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

import yaml


def pod_env(workload, container, stand_in_dir, secrets):
    """The container's BITNET_* environment as the kubelet resolves it in the first pod."""
    pod = workload["spec"]["template"]["spec"]
    fields = {"metadata.name": f"{workload['metadata']['name']}-0", "metadata.namespace": "default"}
    # Files the kubelet puts there at start: a Secret's keys, or what a CSI driver writes
    # (cert-manager's csi.cert-manager.io: each pod's own tls.crt, tls.key, ca.crt).
    secret_mounts = [m["mountPath"].rstrip("/") + "/" for m in container.get("volumeMounts", [])
                     if any(v["name"] == m["name"] and ("secret" in v or "csi" in v)
                            for v in pod.get("volumes", []))]
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            # $(NAME) expands to an earlier entry; an unknown one stays as written (kubelet does so).
            env[e["name"]] = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                                    lambda m: env.get(m.group(1), m.group(0)), e["value"])
        elif "fieldRef" in e.get("valueFrom", {}):
            env[e["name"]] = fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
        elif "secretKeyRef" in e.get("valueFrom", {}):
            ref = e["valueFrom"]["secretKeyRef"]
            if f"{ref['name']}/{ref['key']}" in secrets:
                env[e["name"]] = secrets[f"{ref['name']}/{ref['key']}"]
    for name, value in env.items():
        for mount in secret_mounts:
            if value.startswith(mount):
                stand_in = os.path.join(stand_in_dir, value.lstrip("/"))
                os.makedirs(os.path.dirname(stand_in), exist_ok=True)
                open(stand_in, "w").close()
                env[name] = stand_in
    return {k: v for k, v in env.items() if k.startswith("BITNET_")}, fields["metadata.name"]


def tracing_problems(eff, given_headers):
    """The tracing keys of an effective configuration, beyond the loader's own range checks.
    given_headers: the otlp_headers the rendering gives (BITNET_OTLP_HEADERS split at commas, else
    server.json's list); --print-config shows each header as <redacted>, so only their number is
    compared: the loader must read the documented forms as that many name=value headers."""
    endpoint = eff.get("otlp_endpoint") or ""
    if not endpoint:
        return []
    out = []
    url = urllib.parse.urlsplit(endpoint)
    if url.scheme not in ("http", "https") or not url.hostname:
        out.append(f"otlp_endpoint {endpoint!r} is not an http:// or https:// URL")
    if url.path.rstrip("/").endswith("/v1/traces"):
        out.append(f"otlp_endpoint {endpoint!r} ends in /v1/traces: the server appends it to the base URL")
    ratio = eff.get("otlp_sample_ratio", 1)
    if not 0 <= ratio <= 1:
        out.append(f"otlp_sample_ratio {ratio} is not in 0..1")
    got = len(eff.get("otlp_headers", []))
    if got != len(given_headers):
        out.append(f"otlp_headers: the rendering gives {len(given_headers)} header(s), the server reads {got}")
    return out


def main():
    args, secrets = sys.argv[1:], {}
    while args and args[0] == "--secret":
        ref, _, value = args[1].partition("=")
        secrets[ref] = value
        args = args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    server = os.path.join(args[0], "bitnet-server")
    problems, checked = [], 0
    for path in args[1:]:
        docs = [d for d in yaml.safe_load_all(open(path, encoding="utf-8")) if d]
        configmaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
        for dep in (d for d in docs if d["kind"] in ("Deployment", "StatefulSet")):
            label = f"{os.path.basename(path)}: {dep['kind']} {dep['metadata']['name']}"
            pod = dep["spec"]["template"]["spec"]
            c = next((x for x in pod["containers"] if x["name"] == "bitnet-server"), None)
            if c is None:
                continue  # not a bitnet-serve workload (validate-k8s.mjs checks the kit's own)
            cm_name = next((v["configMap"]["name"] for v in pod.get("volumes", [])
                            if "configMap" in v), None)
            if cm_name not in configmaps:
                problems.append(f"{label}: mounts no rendered ConfigMap ({cm_name})")
                continue
            with tempfile.TemporaryDirectory() as tmp:
                cfg_path = os.path.join(tmp, "server.json")
                with open(cfg_path, "w") as f:
                    f.write(configmaps[cm_name]["data"]["server.json"])
                env, pod_name = pod_env(dep, c, os.path.join(tmp, "pod"), secrets)
                given_headers = (env["BITNET_OTLP_HEADERS"].split(",") if "BITNET_OTLP_HEADERS" in env else
                                 json.loads(configmaps[cm_name]["data"]["server.json"]).get("otlp_headers", []))
                run_env = {k: v for k, v in os.environ.items() if not k.startswith("BITNET_")}
                run_env.update(env)
                r = subprocess.run([server, "--config", cfg_path, "--print-config"], env=run_env,
                                   capture_output=True, text=True, timeout=30)
            if r.returncode != 0:
                problems.append(f"{label}: bitnet-server refuses the configuration: {r.stderr.strip()}")
                continue
            eff = json.loads(r.stdout)
            checked += 1
            port = next(p["containerPort"] for p in c["ports"] if p["name"] == "http")
            if eff["port"] != port:
                problems.append(f"{label}: server port {eff['port']} != container port {port}")
            if eff["listen_address"] not in ("0.0.0.0", "::"):
                problems.append(f"{label}: listen_address {eff['listen_address']} is not reachable from the Service")
            cmd = (c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command") or [])
            sleep = int(cmd[1]) if len(cmd) == 2 and cmd[0] == "sleep" else 0
            grace = pod.get("terminationGracePeriodSeconds", 30)
            if not grace > sleep + eff["drain_timeout_ms"] / 1000:
                problems.append(f"{label}: grace {grace} s <= preStop {sleep} s + drain {eff['drain_timeout_ms']} ms")
            if not eff["models"]:
                problems.append(f"{label}: no model configured")
            for m in eff["models"]:
                if not m["path"].startswith("/models/"):
                    problems.append(f"{label}: model {m['path']} is not under the /models mount")
                draft = m.get("draft_model", eff.get("draft_model", ""))
                if draft and not draft.startswith("/models/"):
                    problems.append(f"{label}: draft model {draft} is not under the /models mount")
            if eff["cluster_listen"]:
                cport = next((p["containerPort"] for p in c["ports"] if p["name"] == "cluster"), None)
                if eff["cluster_listen"] != f"0.0.0.0:{cport}":
                    problems.append(f"{label}: cluster_listen {eff['cluster_listen']} is not 0.0.0.0:<cluster port {cport}>")
                if eff["node_name"] != pod_name:
                    problems.append(f"{label}: node_name {eff['node_name']!r} is not the pod's name {pod_name}")
                if not eff["cluster_join"]:
                    problems.append(f"{label}: a cluster node with nothing to join")
            elif dep["kind"] == "StatefulSet":
                problems.append(f"{label}: a StatefulSet without cluster_listen")
            problems += [f"{label}: {p}" for p in tracing_problems(eff, given_headers)]
    for p in problems:
        print("FAIL " + p)
    if problems:
        sys.exit(1)
    print(f"check-server-config: {checked} workloads, configuration accepted by bitnet-server")


if __name__ == "__main__":
    main()
