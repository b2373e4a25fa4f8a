#!/usr/bin/env python3
"""Hot-swap figures for bench/RESULTS.md: swap time (load request to flip) and the latency of
requests that overlap a swap versus those that do not.

Starts bitnet-server on loopback with model A, keeps CLIENTS streaming requests going, and swaps
the alias between files A and B SWAPS times (waiting PAUSE seconds between swaps, so there are
requests far from any swap too). Each operation's swap time is the server's own figure
(GET /v1/models/{alias} -> operations[].swap_ms: load request received to admission flipped).
A request "overlaps" a swap when its [sent, ended] interval intersects [load posted, load
reported ended] of any swap. Standard library only.

  bench/bench_swap.py --server build/release/tools/bitnet-server --a A.gguf --b B.gguf \
      --clients 8 --swaps 5 --max-tokens 32
"""
import argparse
import http.client
import json
import re
import statistics
import subprocess
import sys
import threading
import time


def request(port, method, path, body=None, timeout=600):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def stream(port, body):
    """One streamed request: (sent, ended, ok, version)."""
    sent = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/inference/stream", body=json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode("utf-8", "replace")
    c.close()
    ended = time.monotonic()
    m = re.search(r'event: done\ndata: (\{.*\})\n', data)
    ok = r.status == 200 and m is not None and "event: error" not in data
    version = json.loads(m.group(1))["model_version"] if m else None
    return sent, ended, ok, version


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--port", type=int, default=18299)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--swaps", type=int, default=5)
    ap.add_argument("--pause", type=float, default=3.0)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv-budget-bytes", type=int, default=268435456)
    args = ap.parse_args()

    log = open("bench_swap.server.log", "w")
    srv = subprocess.Popen([args.server, "--model", "m=" + args.a, "--port", str(args.port),
                            "--threads", str(args.threads), "--kv-budget-bytes",
                            str(args.kv_budget_bytes), "--log-level", "warn",
                            "--admin-open", "1"],
                           stdout=log, stderr=log)
    try:
        for _ in range(6000):
            try:
                if request(args.port, "GET", "/health/ready", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            sys.exit("server not ready")

        stop = threading.Event()
        records = []
        lock = threading.Lock()

        def client(i):
            n = 0
            while not stop.is_set():
                body = {"model": "m", "prompt": f"client {i} request {n}",
                        "max_tokens": args.max_tokens, "temperature": 0}
                rec = stream(args.port, body)
                with lock:
                    records.append(rec)
                n += 1

        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        for t in threads:
            t.start()
        time.sleep(args.pause)
        windows, swap_ms = [], []
        for k in range(args.swaps):
            path = args.b if k % 2 == 0 else args.a
            posted = time.monotonic()
            st, data = request(args.port, "POST", "/v1/models/load", {"alias": "m", "path": path})
            assert st == 202, data
            op_id = json.loads(data)["operation_id"]
            op = None
            while op is None:
                st, data = request(args.port, "GET", "/v1/models/m")
                for o in json.loads(data)["operations"]:
                    if o["id"] == op_id and o["finished_ms"] is not None:
                        op = o
                time.sleep(0.005)
            ended = time.monotonic()
            assert op["state"] == "ready", op
            windows.append((posted, ended))
            swap_ms.append(float(op["swap_ms"]))
            time.sleep(args.pause)
        stop.set()
        for t in threads:
            t.join()

        failed = sum(1 for r in records if not r[2])
        over, clear = [], []
        for sent, end, ok, _ in records:
            if not ok:
                continue
            lat = (end - sent) * 1000.0
            if any(sent <= w1 and end >= w0 for w0, w1 in windows):
                over.append(lat)
            else:
                clear.append(lat)
        out = {
            "swap_ms": swap_ms,
            "swap_ms_median": statistics.median(swap_ms),
            "requests": len(records),
            "failed": failed,
            "overlapping": {"n": len(over), "p50_ms": pct(over, 50), "p99_ms": pct(over, 99)},
            "not_overlapping": {"n": len(clear), "p50_ms": pct(clear, 50),
                                "p99_ms": pct(clear, 99)},
        }
        print(json.dumps(out, indent=1))
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
