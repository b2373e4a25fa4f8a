#!/usr/bin/env python3
"""The Dockerfile's RUN steps may only call the kit's scripts (so CI, which runs those scripts
without Docker, checks what the image does): every `&&`-separated command of every RUN is
`bash deploy/<script>`, `bash /tmp/bitnet-setup/<script>` (a script COPYed from deploy/docker/),
or an `rm` of what was copied. Also: each COPYed script exists, USER is non-root, a HEALTHCHECK
asks /health/live through a script that exists.   check-dockerfile.py [Dockerfile]
"""
import os
import re
import shlex
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "deploy", "Dockerfile")
text = open(path, encoding="utf-8").read()
# Join continuation lines, drop comments.
lines = re.sub(r"\\\n", " ", "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#")))
problems = []
copied = {}
for line in lines.splitlines():
    parts = line.split(None, 1)
    if not parts:
        continue
    instr, rest = parts[0].upper(), (parts[1] if len(parts) > 1 else "")
    if instr == "COPY" and not rest.startswith("--from"):
        args = shlex.split(rest)
        for src in args[:-1]:
            if src != "." and not os.path.exists(os.path.join(ROOT, src)):
                problems.append(f"COPY {src}: no such file")
            copied[os.path.join(args[-1], os.path.basename(src))] = src
    elif instr == "RUN":
        for cmd in (c.strip() for c in rest.split("&&")):
            words = shlex.split(cmd)
            if words[:1] == ["rm"]:
                continue
            if len(words) >= 2 and words[0] == "bash":
                script = words[1]
                if script.startswith("deploy/") and os.path.isfile(os.path.join(ROOT, script)):
                    continue
                if script in copied and copied[script].startswith("deploy/"):
                    continue
            problems.append(f"RUN step is not a deploy/ script: {cmd}")
    elif instr == "USER":
        if rest.split(":")[0] in ("root", "0"):
            problems.append("USER is root")
    elif instr == "HEALTHCHECK":
        m = re.search(r'CMD\s+\["([^"]+)"', rest)
        if not m or not m.group(1).endswith("healthcheck.sh"):
            problems.append("HEALTHCHECK must run healthcheck.sh")
        elif "/health/live" not in open(os.path.join(ROOT, "deploy", "docker", "healthcheck.sh")).read():
            problems.append("healthcheck.sh does not ask /health/live")
for needed in ("USER", "HEALTHCHECK"):
    if not re.search(rf"^{needed}\s", lines, re.M):
        problems.append(f"no {needed}")
for p in problems:
    print("FAIL " + p)
if problems:
    sys.exit(1)
print("check-dockerfile: every RUN step is a deploy/ script; non-root USER; HEALTHCHECK on /health/live")
