#!/usr/bin/env python3
"""Checks that the Grafana dashboard and the Prometheus rules use only metrics the server exports.

  check-metric-names.py [--spec HTTP-API.md] [--live BIN_DIR] [--promtool]

1. Parses deploy/grafana/bitnet-serve.json (must be valid JSON) and deploy/prometheus/alerts.yaml,
   collects every PromQL expression (panel targets, template-variable queries, rule exprs) and the
   metric names and label names they use.
2. Compares them with the contract: the "Metrics" section of HTTP-API.md (names and labels;
   histograms may be used through their _bucket/_sum/_count series), read from its committed copy
   tests/data/contract/http-api-metrics.md, which must equal the spec wherever the spec is found.
3. --promtool: every dashboard expression, with Grafana's variables replaced, must parse as PromQL
   (they are written into a temporary rule file for `promtool check rules`).
4. --live BIN_DIR: starts BIN_DIR/bitnet-server on 127.0.0.1 with a tiny model made by
   BIN_DIR/bitnet-model, sends a few requests, scrapes /metrics and checks every name against what
   the server really exports (# TYPE families and sample names). Loopback only, bounded waits; the
   server is stopped with SIGTERM (SIGKILL after a bounded wait).
Exit 0 when everything matches; 1 with one line per problem otherwise.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "bitnet-serve.json")
RULES = os.path.join(ROOT, "deploy", "prometheus", "alerts.yaml")

# Series Prometheus makes itself for every target, and labels it attaches to every series.
SYNTHETIC_METRICS = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
TARGET_LABELS = {"job", "instance", "le", "quantile", "__name__"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")

PROMQL_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
    "offset", "inf", "nan", "atan2",
}
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


# The contract's Metrics section, committed so that a clone without the team's shared notes can
# run this check; where the notes are present, the copy must still equal them.
COMMITTED_CONTRACT = os.path.join(ROOT, "tests", "data", "contract", "http-api-metrics.md")


def find_spec(explicit):
    """The full HTTP-API.md: --spec, or shared/spec in or beside the clone; None when absent."""
    candidates = [explicit] if explicit else []
    candidates += [os.path.join(ROOT, "shared", "spec", "HTTP-API.md"),
                   os.path.join(ROOT, "..", "shared", "spec", "HTTP-API.md")]
    for c in candidates:
        if c and os.path.isfile(c):
            return c
    if explicit:
        sys.exit(f"check-metric-names: {explicit} not found")
    return None


def metrics_section(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"^## Metrics.*?(?=^## |\Z)", text, re.S | re.M)
    if not m:
        sys.exit(f"check-metric-names: no '## Metrics' section in {path}")
    return m.group(0).strip()


def contract_path(explicit):
    """The committed copy of the Metrics section, checked against the full spec where one exists."""
    spec = find_spec(explicit)
    if spec is not None and metrics_section(spec) != metrics_section(COMMITTED_CONTRACT):
        sys.exit(f"check-metric-names: {os.path.relpath(COMMITTED_CONTRACT, ROOT)} differs from "
                 f"the Metrics section of {spec}: copy the section again")
    return COMMITTED_CONTRACT


def contract_metrics(spec_path):
    """{metric name: set of labels} from the spec's Metrics section."""
    metrics = {}
    for span in re.findall(r"`([^`]+)`", metrics_section(spec_path)):
        mm = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?", span.strip())
        if not mm:
            continue
        labels = {l.strip() for l in (mm.group(2) or "").split(",") if l.strip()}
        metrics.setdefault(mm.group(1), set()).update(labels)
    if len(metrics) < 5:
        sys.exit(f"check-metric-names: found only {len(metrics)} metric names in {spec_path}")
    return metrics


def dashboard_exprs(path):
    with open(path, encoding="utf-8") as f:
        dash = json.load(f)  # raises on invalid JSON: that is the parse test
    exprs = []

    def walk_panels(panels):
        for p in panels:
            for t in p.get("targets", []):
                if t.get("expr"):
                    exprs.append((f"panel '{p.get('title')}'", t["expr"]))
            walk_panels(p.get("panels", []))

    walk_panels(dash.get("panels", []))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if v.get("type") == "query" and q:
            lv = re.fullmatch(r"\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*", q)
            exprs.append((f"variable '{v.get('name')}'", lv.group(1) if lv else q))
    if not exprs:
        sys.exit("check-metric-names: the dashboard has no PromQL expression")
    return exprs


def rule_exprs(path):
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    exprs = []
    for g in doc.get("groups", []):
        for r in g.get("rules", []):
            exprs.append((f"rule '{r.get('alert') or r.get('record')}'", r["expr"]))
    return exprs


def substitute_grafana(expr):
    for k, v in GRAFANA_VARS.items():
        expr = expr.replace(k, v)
    return re.sub(r"\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?", ".*", expr)


def analyse(expr):
    """(metric names, {metric: labels in its selector}, labels in by/without/on/ignoring clauses)."""
    e = substitute_grafana(expr)
    selectors = {}
    # metric{matchers}
    for name, body in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}", e):
        labs = set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", body))
        selectors.setdefault(name, set()).update(labs)
    clause_labels = set()
    for body in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", e):
        clause_labels.update(l.strip() for l in body.split(",") if l.strip())
    # Remove what is not a metric name: strings, matchers, ranges, clauses, numbers, functions.
    s = re.sub(r'"(?:[^"\\]|\\.)*"', " ", e)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for m in re.finditer(r"(?<![a-zA-Z0-9_:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", s):
        tok, call = m.group(1), m.group(2)
        if call or tok.lower() in PROMQL_KEYWORDS:
            continue
        names.add(tok)
    names.update(k for k in selectors if k not in ("",))
    return names, selectors, clause_labels


def base_name(name, known):
    if name in known:
        return name
    for suf in HISTOGRAM_SUFFIXES:
        if name.endswith(suf) and name[: -len(suf)] in known and not name[: -len(suf)].endswith("_total"):
            return name[: -len(suf)]
    return None


def check_against_contract(exprs, contract):
    problems = []
    all_labels = set().union(*contract.values()) | TARGET_LABELS
    for where, expr in exprs:
        names, selectors, clause_labels = analyse(expr)
        for n in sorted(names):
            if n in SYNTHETIC_METRICS:
                continue
            if base_name(n, contract) is None:
                problems.append(f"{where}: metric '{n}' is not in the contract (HTTP-API.md, Metrics)")
        for n, labs in selectors.items():
            b = base_name(n, contract)
            if b is None:
                continue
            allowed = contract[b] | TARGET_LABELS if contract[b] else all_labels
            for l in sorted(labs - allowed):
                problems.append(f"{where}: label '{l}' is not a label of '{b}' in the contract")
        for l in sorted(clause_labels - all_labels):
            problems.append(f"{where}: label '{l}' (by/on clause) is in no metric of the contract")
    return problems


def promtool_parse(exprs):
    if not shutil_which("promtool"):
        return ["promtool not found: install it with deploy/install-deploy-tools.sh"]
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:expr_{i}", "expr": substitute_grafana(e)} for i, (_, e) in enumerate(exprs)]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(rules, f)
        path = f.name
    try:
        r = subprocess.run(["promtool", "check", "rules", path], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        return ["dashboard PromQL does not parse:\n" + r.stdout + r.stderr]
    return []


def shutil_which(cmd):
    from shutil import which
    return which(cmd)


# ---- live scrape -------------------------------------------------------------------------------

def free_loopback_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, timeout=10):
    assert url.startswith("http://127.0.0.1:"), url  # loopback only
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def scrape_live(bin_dir, ready_timeout_s=90):
    bin_dir = os.path.abspath(bin_dir)
    server = os.path.join(bin_dir, "bitnet-server")
    model_tool = os.path.join(bin_dir, "bitnet-model")
    for b in (server, model_tool):
        if not os.access(b, os.X_OK):
            sys.exit(f"check-metric-names: {b} not found or not executable")
    with tempfile.TemporaryDirectory(prefix="bitnet-metrics-") as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([model_tool, "make", "--shape", "tiny", "--seed", "1", "-o", model],
                       check=True, timeout=120, stdout=subprocess.DEVNULL)
        confs = [c for c in sorted(os.listdir(os.path.join(ROOT, "conf"))) if c.endswith(".json")]
        config = os.path.join(ROOT, "conf", confs[0]) if len(confs) == 1 else os.path.join(tmp, "server.json")
        if config.startswith(tmp):
            with open(config, "w") as f:
                f.write("{}\n")
        port = free_loopback_port()
        env = dict(os.environ, BITNET_LISTEN_ADDRESS="127.0.0.1", BITNET_PORT=str(port),
                   BITNET_DRAIN_TIMEOUT_MS="5000")
        log_path = os.path.join(tmp, "server.log")
        with open(log_path, "w") as log:
            proc = subprocess.Popen([server, "--config", config, "--model", model, "--port", str(port)],
                                    env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + ready_timeout_s
            while True:
                if proc.poll() is not None:
                    sys.exit(f"check-metric-names: bitnet-server exited ({proc.returncode}):\n" + open(log_path).read()[-3000:])
                try:
                    if http("GET", base + "/health/ready", timeout=2)[0] == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    sys.exit(f"check-metric-names: bitnet-server not ready within {ready_timeout_s} s:\n" + open(log_path).read()[-3000:])
                time.sleep(0.2)
            # A little traffic so that labelled series exist: a completion, a 404, a 400.
            http("POST", base + "/v1/inference", {"prompt": "Hello", "max_tokens": 4, "temperature": 0}, timeout=60)
            http("GET", base + "/no-such-route", timeout=5)
            http("POST", base + "/v1/inference", {"prompt": "x", "max_tokens": -1}, timeout=5)
            status, text = http("GET", base + "/metrics", timeout=10)
            if status != 200:
                sys.exit(f"check-metric-names: GET /metrics answered {status}")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    exported, families = set(), {}
    for line in text.splitlines():
        m = re.match(r"#\s*TYPE\s+(\S+)\s+(\S+)", line)
        if m:
            families[m.group(1)] = m.group(2)
            continue
        if line and not line.startswith("#"):
            exported.add(re.match(r"[^{\s]+", line).group(0))
    for fam, typ in families.items():
        exported.add(fam)
        if typ in ("histogram", "summary"):
            exported.update(fam + s for s in HISTOGRAM_SUFFIXES)
    return exported


def check_against_live(exprs, exported):
    problems = []
    for where, expr in exprs:
        names, _, _ = analyse(expr)
        for n in sorted(names - SYNTHETIC_METRICS):
            if n not in exported:
                problems.append(f"{where}: metric '{n}' is not exported by the running server")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", help="path of HTTP-API.md to compare the committed contract copy with "
                    "(default: shared/spec in or beside the clone, when present)")
    ap.add_argument("--live", metavar="BIN_DIR", help="directory with bitnet-server and bitnet-model")
    ap.add_argument("--promtool", action="store_true", help="parse the dashboard's PromQL with promtool")
    ap.add_argument("--dashboard", default=DASHBOARD, help=argparse.SUPPRESS)
    ap.add_argument("--rules", default=RULES, help=argparse.SUPPRESS)
    args = ap.parse_args()

    contract = contract_metrics(contract_path(args.spec))
    exprs = dashboard_exprs(args.dashboard) + rule_exprs(args.rules)
    used = set()
    for _, e in exprs:
        used |= analyse(e)[0]
    problems = check_against_contract(exprs, contract)
    if args.promtool:
        problems += promtool_parse(dashboard_exprs(args.dashboard))
    print(f"check-metric-names: {len(exprs)} expressions, {len(used)} metric names, "
          f"{len(contract)} metrics in the contract")
    if args.live:
        exported = scrape_live(args.live)
        live = check_against_live(exprs, exported)
        print(f"check-metric-names: live scrape exported {len(exported)} names; {len(live)} missing")
        problems += live
    for p in problems:
        print("FAIL " + p)
    if problems:
        return 1
    print("check-metric-names: every metric and label used is in the contract"
          + (" and exported by the server" if args.live else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
