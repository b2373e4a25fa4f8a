#!/usr/bin/env python3
"""Checks the OpenTelemetry Collector configuration of deploy/otel, offline (no collector binary).

  check-otel-collector.py COLLECTOR.yaml
  check-otel-collector.py --rendered RENDERED.yaml

COLLECTOR.yaml (deploy/otel/collector.yaml) is checked for what the collector would refuse at
start or what would lose spans silently:
  - only the collector's top-level sections; service.pipelines not empty, each named
    traces|metrics|logs[/NAME] with at least one receiver and one exporter;
  - every receiver, processor, exporter (connectors included) a pipeline names is defined, every
    defined one is used by a pipeline, every extension in service.extensions is defined and every
    defined one is enabled;
  - memory_limiter, when a pipeline has it, is its first processor and batch comes after it;
  - endpoints present: each otlp receiver has a grpc or http protocol, each with an endpoint
    HOST:PORT that listens on every interface (0.0.0.0 or [::]; the default localhost is out of
    reach from other containers), on distinct ports; each otlp exporter has an endpoint (HOST:PORT
    or a URL), each otlphttp exporter an http(s) URL; health_check an endpoint HOST:PORT.
    ${env:NAME:-default} is checked as its default; ${env:NAME} alone only as present.
--rendered RENDERED.yaml (kubectl kustomize deploy/k8s/overlays/tracing) checks the collector as
deployed: the ConfigMap holding collector.yaml passes the checks above; the Deployment that mounts
it runs it (--config is that file in the mount), has a container port for every receiver port and
probes the health_check port; a Service selects its pods and exposes every receiver port; and
bitnet-serve's otlp_endpoint (BITNET_OTLP_ENDPOINT, else server.json of its ConfigMap) names that
Service and the port of the OTLP/HTTP receiver.
Exit 0 when all hold; 1 with one line per problem.
"""
import json
import re
import sys
import urllib.parse

import yaml

SECTIONS = ("receivers", "processors", "exporters", "connectors", "extensions", "service")
ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def resolve(value):
    """A value with ${env:NAME:-default} as its default; None where a variable has no default."""
    if not isinstance(value, str):
        return value
    unresolved = False

    def sub(m):
        nonlocal unresolved
        if m.group(2) is None:
            unresolved = True
            return ""
        return m.group(2)
    out = ENV.sub(sub, value)
    return None if unresolved else out


def host_port(value):
    """(host, port) of HOST:PORT or [V6]:PORT, else None."""
    m = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]*):([0-9]{1,5})", value or "")
    return (m.group(1), int(m.group(2))) if m else None


def ctype(component_id):
    return component_id.split("/", 1)[0]


def check_config(cfg, where):
    """Problems of one collector configuration; and the receivers' ports by protocol."""
    out, ports = [], {}
    bad = out.append
    if not isinstance(cfg, dict):
        return [f"{where}: not a YAML mapping"], ports
    for key in cfg:
        if key not in SECTIONS:
            bad(f"{where}: unknown top-level section {key!r}")
    sections = {s: (cfg.get(s) or {}) for s in SECTIONS}
    service = sections["service"]
    pipelines = service.get("pipelines") or {}
    if not pipelines:
        bad(f"{where}: service.pipelines is empty: the collector would do nothing")
    used = {"receivers": set(), "processors": set(), "exporters": set()}
    for name, p in pipelines.items():
        at = f"{where}: pipeline {name}"
        if ctype(name) not in ("traces", "metrics", "logs"):
            bad(f"{at}: not a traces, metrics or logs pipeline")
        p = p or {}
        for kind in ("receivers", "exporters"):
            if not p.get(kind):
                bad(f"{at}: no {kind}")
        for kind in ("receivers", "processors", "exporters"):
            for cid in p.get(kind) or []:
                used[kind].add(cid)
                # A connector is an exporter of one pipeline and a receiver of another.
                if cid not in sections[kind] and not (kind != "processors" and cid in sections["connectors"]):
                    bad(f"{at}: {kind[:-1]} {cid!r} is not defined under {kind}")
        procs = [ctype(x) for x in p.get("processors") or []]
        if "memory_limiter" in procs and procs[0] != "memory_limiter":
            bad(f"{at}: memory_limiter must be the first processor (it is number {procs.index('memory_limiter') + 1})")
        if "batch" in procs and "memory_limiter" in procs and procs.index("batch") < procs.index("memory_limiter"):
            bad(f"{at}: batch must come after memory_limiter")
    for kind in ("receivers", "processors", "exporters"):
        for cid in sections[kind]:
            if cid not in used[kind]:
                bad(f"{where}: {kind[:-1]} {cid!r} is defined but in no pipeline")
    for cid in sections["connectors"]:
        if cid not in used["receivers"] or cid not in used["exporters"]:
            bad(f"{where}: connector {cid!r} must be an exporter of one pipeline and a receiver of another")
    enabled = service.get("extensions") or []
    for cid in enabled:
        if cid not in sections["extensions"]:
            bad(f"{where}: service.extensions names {cid!r}, which is not defined under extensions")
    for cid in sections["extensions"]:
        if cid not in enabled:
            bad(f"{where}: extension {cid!r} is defined but not in service.extensions")

    for cid, rc in sections["receivers"].items():
        if ctype(cid) != "otlp":
            continue
        protocols = (rc or {}).get("protocols") or {}
        if not any(p in protocols for p in ("grpc", "http")):
            bad(f"{where}: receiver {cid}: no grpc or http protocol")
        for proto in ("grpc", "http"):
            if proto not in protocols:
                continue
            endpoint = resolve((protocols[proto] or {}).get("endpoint"))
            hp = host_port(endpoint)
            if not hp:
                bad(f"{where}: receiver {cid}: protocols.{proto}.endpoint {endpoint!r} is not HOST:PORT "
                    "(without one it listens on localhost only)")
                continue
            if hp[0] not in ("0.0.0.0", "[::]", ""):
                bad(f"{where}: receiver {cid}: {proto} listens on {hp[0]}, out of reach from other containers")
            if hp[1] in ports.values():
                bad(f"{where}: receiver {cid}: port {hp[1]} is taken twice")
            ports[f"{cid}/{proto}"] = hp[1]
    for cid, ec in sections["exporters"].items():
        ec = ec or {}
        if ctype(cid) not in ("otlp", "otlphttp"):
            continue
        if "endpoint" not in ec and not (ctype(cid) == "otlphttp" and ec.get("traces_endpoint")):
            bad(f"{where}: exporter {cid}: no endpoint")
            continue
        raw = ec.get("endpoint") or ec.get("traces_endpoint")
        endpoint = resolve(raw)
        if endpoint is None:
            continue  # a variable without default: present, its form known only at run time
        url = urllib.parse.urlsplit(endpoint)
        if ctype(cid) == "otlphttp":
            if url.scheme not in ("http", "https") or not url.hostname:
                bad(f"{where}: exporter {cid}: endpoint {endpoint!r} is not an http(s) URL")
        elif not host_port(endpoint) and not (url.scheme in ("http", "https") and url.hostname and url.port):
            bad(f"{where}: exporter {cid}: endpoint {endpoint!r} is not HOST:PORT or a URL with a port")
    hc = sections["extensions"].get("health_check")
    if hc is not None:
        hp = host_port(resolve((hc or {}).get("endpoint")))
        if not hp:
            bad(f"{where}: extension health_check: endpoint is not HOST:PORT")
        else:
            ports["health_check"] = hp[1]
    return out, ports


def selects(selector, labels):
    return bool(selector) and all((labels or {}).get(k) == v for k, v in selector.items())


def check_rendered(path):
    docs = [d for d in yaml.safe_load_all(open(path, encoding="utf-8")) if d]
    out = []
    cms = [d for d in docs if d["kind"] == "ConfigMap" and "collector.yaml" in (d.get("data") or {})]
    if len(cms) != 1:
        return [f"{path}: {len(cms)} ConfigMaps hold a collector.yaml, want 1"]
    cm = cms[0]
    problems, ports = check_config(yaml.safe_load(cm["data"]["collector.yaml"]),
                                   f"ConfigMap/{cm['metadata']['name']}")
    out += problems
    deps = [d for d in docs if d["kind"] == "Deployment"
            and any((v.get("configMap") or {}).get("name") == cm["metadata"]["name"]
                    for v in d["spec"]["template"]["spec"].get("volumes") or [])]
    if len(deps) != 1:
        return out + [f"{path}: {len(deps)} Deployments mount ConfigMap/{cm['metadata']['name']}, want 1"]
    dep = deps[0]
    where = f"Deployment/{dep['metadata']['name']}"
    pod = dep["spec"]["template"]["spec"]
    vol = next(v["name"] for v in pod["volumes"] if (v.get("configMap") or {}).get("name") == cm["metadata"]["name"])
    c = next((c for c in pod["containers"] if any(m["name"] == vol for m in c.get("volumeMounts") or [])), None)
    if c is None:
        return out + [f"{where}: no container mounts the collector's ConfigMap"]
    mount = next(m for m in c["volumeMounts"] if m["name"] == vol)
    want = f"{mount['mountPath'].rstrip('/')}/collector.yaml"
    args = (c.get("command") or []) + (c.get("args") or [])
    configs = [a.split("=", 1)[1] for a in args if a.startswith("--config=")]
    configs += [b for a, b in zip(args, args[1:]) if a == "--config"]
    if [x.removeprefix("file:") for x in configs] != [want]:
        out.append(f"{where}: runs --config {configs}, the ConfigMap's file is {want}")
    cports = {p["containerPort"]: p.get("name") for p in c.get("ports") or []}
    for what, port in ports.items():
        if what != "health_check" and port not in cports:
            out.append(f"{where}: receiver {what} listens on {port}, not a container port")
    if "health_check" in ports:
        for probe in ("livenessProbe", "readinessProbe"):
            pp = ((c.get(probe) or {}).get("httpGet") or {}).get("port")
            if pp != ports["health_check"] and cports.get(ports["health_check"]) != pp:
                out.append(f"{where}: {probe} does not ask health_check's port {ports['health_check']}")
    labels = dep["spec"]["template"]["metadata"].get("labels")
    svcs = [d for d in docs if d["kind"] == "Service" and selects(d["spec"].get("selector"), labels)]
    if len(svcs) != 1:
        return out + [f"{path}: {len(svcs)} Services select the collector's pods, want 1"]
    svc = svcs[0]

    def target(sp):  # the container port a Service port sends to
        t = sp.get("targetPort", sp["port"])
        return t if isinstance(t, int) else next((n for n, name in cports.items() if name == t), None)
    exposed = {target(sp): sp["port"] for sp in svc["spec"].get("ports") or []}
    for what, port in ports.items():
        if what != "health_check" and port not in exposed:
            out.append(f"Service/{svc['metadata']['name']}: does not expose receiver {what} (port {port})")

    # bitnet-serve's endpoint: the collector's Service, on the OTLP/HTTP receiver's port.
    http_port = next((p for w, p in ports.items() if w.endswith("/http")), None)
    servers = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")
               and any(x["name"] == "bitnet-server" for x in d["spec"]["template"]["spec"]["containers"])]
    if not servers:
        out.append(f"{path}: no bitnet-serve workload to send traces")
    for srv in servers:
        at = f"{srv['kind']}/{srv['metadata']['name']}"
        spod = srv["spec"]["template"]["spec"]
        sc = next(x for x in spod["containers"] if x["name"] == "bitnet-server")
        endpoint = next((e.get("value") for e in sc.get("env") or [] if e["name"] == "BITNET_OTLP_ENDPOINT"), None)
        if endpoint is None:
            cm_name = next((v["configMap"]["name"] for v in spod.get("volumes") or [] if "configMap" in v), None)
            scm = next((d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == cm_name), None)
            endpoint = json.loads(scm["data"]["server.json"]).get("otlp_endpoint") if scm else None
        if not endpoint:
            out.append(f"{at}: no otlp_endpoint (BITNET_OTLP_ENDPOINT or server.json): tracing is off")
            continue
        url = urllib.parse.urlsplit(endpoint)
        host = (url.hostname or "").split(".")
        port = url.port or {"http": 80, "https": 443}.get(url.scheme)
        if host[0] != svc["metadata"]["name"] or (len(host) > 2 and host[2] != "svc"):
            out.append(f"{at}: otlp_endpoint {endpoint} is not the collector's Service {svc['metadata']['name']}")
        elif http_port is None or exposed.get(http_port) != port:
            out.append(f"{at}: otlp_endpoint {endpoint}: port {port} is not the Service's port of the "
                       f"OTLP/HTTP receiver ({exposed.get(http_port)})")
        elif url.scheme != "http":
            out.append(f"{at}: otlp_endpoint {endpoint}: the receiver speaks plain HTTP")
        elif url.path.rstrip("/"):
            out.append(f"{at}: otlp_endpoint {endpoint} has a path; the receiver takes /v1/traces at the root")
    return out


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--rendered":
        problems = check_rendered(args[1])
        what = f"the collector and bitnet-serve's otlp_endpoint in {args[1]}"
    elif len(args) == 1:
        with open(args[0], encoding="utf-8") as f:
            problems, ports = check_config(yaml.safe_load(f), args[0])
        what = f"{args[0]} (ports {', '.join(f'{k} {v}' for k, v in ports.items())})"
    else:
        sys.exit(__doc__)
    for p in problems:
        print("FAIL " + p)
    if problems:
        return 1
    print(f"check-otel-collector: {what} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
