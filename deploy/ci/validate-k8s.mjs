// Validates rendered Kubernetes manifests offline, against the API's OpenAPI schemas as the npm
// package kubernetes-models ships them (5.1.0: a recent release, with resource.k8s.io/v1 of 1.34):
//   1. schema: every object's apiVersion/kind must be a known built-in type, and the object must
//      pass that type's JSON-schema validator (required fields, types, formats, enums);
//   2. policy: a Deployment keeps the kit's operational contract (probes on the health endpoints,
//      grace period above preStop sleep + drain timeout, the hardened securityContext);
//   3. strict: the same objects are written as TypeScript object literals typed with the package's
//      interfaces and type-checked with tsc, which rejects unknown fields (a misspelt
//      `livenesProbe` passes the JSON schema, which allows additional properties, but not tsc).
// Usage: node validate-k8s.mjs LABEL=FILE.yaml ...   (multi-document YAML; exit 1 on any problem)
import { readFileSync, writeFileSync, mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const here = dirname(fileURLToPath(import.meta.url));
let problems = 0;

// The deployment contract of bitnet-serve pods (README, "Deploy").
function policy(obj) {
  if (obj.kind !== "Deployment") return [];
  const out = [];
  const pod = obj.spec.template.spec;
  const c = pod.containers.find((x) => x.name === "bitnet-server");
  if (!c) return ["no container named bitnet-server"];
  const path = (probe) => probe?.httpGet?.path;
  if (path(c.livenessProbe) !== "/health/live") out.push("livenessProbe must GET /health/live");
  if (path(c.readinessProbe) !== "/health/ready") out.push("readinessProbe must GET /health/ready");
  if (!c.startupProbe) out.push("a startupProbe must cover the model load");
  const env = Object.fromEntries((c.env || []).map((e) => [e.name, e.value]));
  const drain = Number(env.BITNET_DRAIN_TIMEOUT_MS) / 1000;
  const cmd = c.lifecycle?.preStop?.exec?.command || [];
  const sleep = cmd[0] === "sleep" ? Number(cmd[1]) : NaN;
  const grace = pod.terminationGracePeriodSeconds;
  if (!(drain > 0)) out.push("BITNET_DRAIN_TIMEOUT_MS must be set");
  if (!(sleep >= 0)) out.push("preStop must be ['sleep', N]");
  if (!(grace > sleep + drain)) {
    out.push(`terminationGracePeriodSeconds (${grace}) must exceed preStop sleep (${sleep}) + drain timeout (${drain})`);
  }
  const sc = c.securityContext || {};
  if (sc.allowPrivilegeEscalation !== false) out.push("allowPrivilegeEscalation must be false");
  if (sc.readOnlyRootFilesystem !== true) out.push("readOnlyRootFilesystem must be true");
  if (!(sc.capabilities?.drop || []).includes("ALL")) out.push("capabilities must drop ALL");
  if (pod.securityContext?.runAsNonRoot !== true && sc.runAsNonRoot !== true) out.push("runAsNonRoot must be true");
  return out;
}
const typed = []; // [label, index, module, kind, object]

for (const arg of process.argv.slice(2)) {
  const eq = arg.indexOf("=");
  const [label, file] = eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, arg];
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  let count = 0;
  for (const doc of docs) {
    if (doc.errors.length) {
      console.log(`FAIL ${label}: YAML: ${doc.errors[0].message}`);
      problems++;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    count++;
    const where = `${label}: ${obj.kind ?? "?"}/${obj.metadata?.name ?? "?"}`;
    if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
      console.log(`FAIL ${where}: no apiVersion/kind`);
      problems++;
      continue;
    }
    // kubernetes-models lays its classes out as <group>/<version>/<Kind>, core types under v1/.
    const mod = `kubernetes-models/${obj.apiVersion}/${obj.kind}`;
    let cls;
    try {
      cls = (await import(mod))[obj.kind];
    } catch {
      cls = undefined;
    }
    if (!cls) {
      console.log(`FAIL ${where}: ${obj.apiVersion} ${obj.kind} is not a built-in Kubernetes type`);
      problems++;
      continue;
    }
    try {
      new cls(obj).validate();
    } catch (e) {
      console.log(`FAIL ${where}: ${e.message}`);
      problems++;
      continue;
    }
    for (const p of policy(obj)) {
      console.log(`FAIL ${where}: ${p}`);
      problems++;
    }
    typed.push([where, typed.length, mod, obj.kind, obj]);
  }
  console.log(`${label}: ${count} objects`);
}

// Strict pass: unknown fields, through TypeScript's excess-property checks.
if (typed.length) {
  // Inside deploy/ci so that `import "kubernetes-models/..."` resolves to deploy/ci/node_modules.
  mkdirSync(join(here, ".tools"), { recursive: true });
  const dir = mkdtempSync(join(here, ".tools", "k8s-"));
  try {
    const lines = [];
    const imported = new Map();
    for (const [where, i, mod, kind, obj] of typed) {
      if (!imported.has(mod)) {
        imported.set(mod, `T${imported.size}`);
        lines.push(`import type { I${kind} as ${imported.get(mod)} } from "${mod}";`);
      }
      lines.push(`// ${where.replace(/\n/g, " ")}`);
      lines.push(`export const o${i}: ${imported.get(mod)} = ${JSON.stringify(obj)};`);
    }
    const src = join(dir, "manifests.ts");
    writeFileSync(src, lines.join("\n") + "\n");
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext",
        target: "es2022", skipLibCheck: true, types: [],
      },
      files: [src],
    }));
    try {
      execFileSync(join(here, "node_modules", ".bin", "tsc"), ["-p", join(dir, "tsconfig.json")],
                   { stdio: "pipe", encoding: "utf8" });
    } catch (e) {
      const out = (e.stdout || "") + (e.stderr || "");
      const srcLines = lines;
      for (const l of out.split("\n").filter((l) => l.trim())) {
        // manifests.ts(LINE,COL): error ...: name the object the line belongs to.
        const m = l.match(/manifests\.ts\((\d+),\d+\): (.*)$/);
        if (m) {
          const comment = srcLines[Number(m[1]) - 2] || "";
          console.log(`FAIL ${comment.replace(/^\/\/ /, "")}: ${m[2]}`);
        } else {
          console.log(`FAIL tsc: ${l}`);
        }
        problems++;
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (problems) {
  console.log(`validate-k8s: ${problems} problem(s)`);
  process.exit(1);
}
console.log(`validate-k8s: ${typed.length} objects valid (schema and no unknown fields)`);
