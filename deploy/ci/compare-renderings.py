#!/usr/bin/env python3
"""Checks that the Helm chart and kustomize render the same objects: the default values against
the base, cluster.enabled=true against overlays/cluster.

  compare-renderings.py [--skip LABEL=VALUE ...] KUSTOMIZE.yaml HELM.yaml

--skip leaves out the objects labelled so in either rendering: what an overlay adds beside the
server and the chart does not render (overlays/tracing's collector from deploy/otel, labelled
app.kubernetes.io/name=otel-collector).

Compared: the set of (kind, name); each object's spec (data for a ConfigMap, server.json parsed),
ignoring what only one of them sets by design: Helm's extra labels (instance, version, chart,
managed-by) in metadata and selectors, its config-checksum annotation, and the image reference.
Exit 0 when equal, 1 with a line per difference.
"""
import json
import sys

import yaml

HELM_ONLY_LABELS = {"app.kubernetes.io/instance", "app.kubernetes.io/version",
                    "app.kubernetes.io/managed-by", "helm.sh/chart"}


def strip(node):
    """Drop Helm-only labels and annotations anywhere in the object."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in HELM_ONLY_LABELS or k == "checksum/config":
                continue
            out[k] = strip(v)
        return out
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def load(path, skip=()):
    objs = {}
    with open(path, encoding="utf-8") as f:
        for doc in yaml.safe_load_all(f):
            if not doc:
                continue
            labels = doc["metadata"].get("labels") or {}
            if any(labels.get(k) == v for k, v in skip):
                continue
            doc = strip(doc)
            body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata")}
            if doc["kind"] == "ConfigMap":
                body = {"data": {k: json.loads(v) if k.endswith(".json") else v
                                 for k, v in doc.get("data", {}).items()}}
            if doc["kind"] in ("Deployment", "StatefulSet"):
                for c in body["spec"]["template"]["spec"]["containers"]:
                    c.pop("image", None)
            body["labels"] = doc["metadata"].get("labels", {})
            objs[(doc["kind"], doc["metadata"]["name"])] = body
    return objs


def diff(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                yield f"{path}.{k}: only in helm ({json.dumps(b[k])[:100]})"
            elif k not in b:
                yield f"{path}.{k}: only in kustomize ({json.dumps(a[k])[:100]})"
            else:
                yield from diff(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from diff(x, y, f"{path}[{i}]")
    elif a != b:
        yield f"{path}: kustomize {json.dumps(a)[:100]} != helm {json.dumps(b)[:100]}"


def main():
    args, skip = sys.argv[1:], []
    while args and args[0] == "--skip":
        skip.append(tuple(args[1].split("=", 1)))
        args = args[2:]
    if len(args) != 2:
        sys.exit(__doc__)
    k, h = load(args[0], skip), load(args[1], skip)
    problems = [f"{kind}/{name}: only in kustomize" for kind, name in sorted(set(k) - set(h))]
    problems += [f"{kind}/{name}: only in helm" for kind, name in sorted(set(h) - set(k))]
    for key in sorted(set(k) & set(h)):
        problems += [f"{key[0]}/{key[1]}{d}" for d in diff(k[key], h[key])]
    for p in problems:
        print("FAIL " + p)
    if problems:
        return 1
    left_out = f" ({', '.join('='.join(x) for x in skip)} left out)" if skip else ""
    print(f"compare-renderings: {len(k)} objects{left_out}, {args[1]} (Helm) == {args[0]} (kustomize)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
