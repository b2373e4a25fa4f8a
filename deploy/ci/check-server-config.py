#!/usr/bin/env python3
"""Checks the kit's server configuration with the server's own config loader.

  check-server-config.py BIN_DIR RENDERED.yaml [RENDERED.yaml ...]

For every Deployment in the rendered manifests: takes its bitnet-server container's plain `env`
values (BITNET_*) and the `server.json` of the ConfigMap it mounts, runs
`BIN_DIR/bitnet-server --config server.json --print-config` with that environment (the loader
refuses unknown keys and out-of-range values, naming them), then checks the effective
configuration against the Deployment: the port is the container's http port, the drain timeout
fits the grace period (grace > preStop sleep + drain), a model is configured and it sits under the
/models mount. Exit 0 when all agree; 1 with one line per problem.
"""
import json
import os
import subprocess
import sys
import tempfile

import yaml


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    server = os.path.join(sys.argv[1], "bitnet-server")
    problems, checked = [], 0
    for path in sys.argv[2:]:
        docs = [d for d in yaml.safe_load_all(open(path, encoding="utf-8")) if d]
        configmaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
        for dep in (d for d in docs if d["kind"] == "Deployment"):
            label = f"{os.path.basename(path)}: Deployment {dep['metadata']['name']}"
            pod = dep["spec"]["template"]["spec"]
            c = next(x for x in pod["containers"] if x["name"] == "bitnet-server")
            env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
            cm_name = next((v["configMap"]["name"] for v in pod.get("volumes", [])
                            if "configMap" in v), None)
            if cm_name not in configmaps:
                problems.append(f"{label}: mounts no rendered ConfigMap ({cm_name})")
                continue
            with tempfile.TemporaryDirectory() as tmp:
                cfg_path = os.path.join(tmp, "server.json")
                with open(cfg_path, "w") as f:
                    f.write(configmaps[cm_name]["data"]["server.json"])
                run_env = {k: v for k, v in os.environ.items() if not k.startswith("BITNET_")}
                run_env.update({k: v for k, v in env.items() if k.startswith("BITNET_")})
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
    for p in problems:
        print("FAIL " + p)
    if problems:
        sys.exit(1)
    print(f"check-server-config: {checked} Deployments, configuration accepted by bitnet-server")


if __name__ == "__main__":
    main()
