// Validates rendered Kubernetes manifests offline, against the API's OpenAPI schemas as the npm
// package kubernetes-models ships them (5.1.0: a recent release, with resource.k8s.io/v1 of 1.34):
//   1. schema: every object's apiVersion/kind must be a known built-in type, and the object must
//      pass that type's JSON-schema validator (required fields, types, formats, enums);
//   2. policy: a Deployment or StatefulSet of bitnet-serve keeps the kit's operational contract
//      (probes on the health endpoints, grace period above preStop sleep + drain timeout, the
//      hardened securityContext); a cluster StatefulSet also agrees with its headless Service, its
//      TLS Secret mount and (when rendered) its cert-manager Certificate (clusterPolicy below);
//      any other workload of the kit (deploy/otel's collector) has liveness and readiness probes,
//      a memory limit, and the same hardened securityContext (otherPolicy);
//   3. strict: the same objects are written as TypeScript object literals typed with the package's
//      interfaces and type-checked with tsc, which rejects unknown fields (a misspelt
//      `livenesProbe` passes the JSON schema, which allows additional properties, but not tsc).
// Custom resources are validated the same way from their own kubernetes-models package (crdModels).
// Usage: node validate-k8s.mjs LABEL=FILE.yaml ...   (multi-document YAML; exit 1 on any problem)
import { readFileSync, writeFileSync, mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const here = dirname(fileURLToPath(import.meta.url));
let problems = 0;

// API groups of custom resources the kit renders, and the package with their schemas and types.
const crdModels = { "cert-manager.io": "@kubernetes-models/cert-manager" };

const workloads = new Set(["Deployment", "StatefulSet"]);

// The hardened container every workload of the kit runs with.
function hardening(pod, c) {
  const out = [];
  const sc = c.securityContext || {};
  if (sc.allowPrivilegeEscalation !== false) out.push("allowPrivilegeEscalation must be false");
  if (sc.readOnlyRootFilesystem !== true) out.push("readOnlyRootFilesystem must be true");
  if (!(sc.capabilities?.drop || []).includes("ALL")) out.push("capabilities must drop ALL");
  if (pod.securityContext?.runAsNonRoot !== true && sc.runAsNonRoot !== true) out.push("runAsNonRoot must be true");
  return out;
}

// A bitnet-serve workload: its pods are labelled app.kubernetes.io/name=bitnet-serve (kustomize
// and the chart alike) or run a container named bitnet-server.
const isServer = (obj) =>
  obj.spec.template.metadata?.labels?.["app.kubernetes.io/name"] === "bitnet-serve" ||
  obj.spec.template.spec.containers.some((x) => x.name === "bitnet-server");

// Any other workload of the kit (deploy/otel's collector): probed, memory-limited, hardened.
function otherPolicy(obj) {
  const out = [];
  const pod = obj.spec.template.spec;
  for (const c of pod.containers) {
    if (!c.livenessProbe) out.push(`container ${c.name} needs a livenessProbe`);
    if (!c.readinessProbe) out.push(`container ${c.name} needs a readinessProbe`);
    if (!c.resources?.limits?.memory) out.push(`container ${c.name} needs a memory limit`);
    out.push(...hardening(pod, c).map((p) => `container ${c.name}: ${p}`));
  }
  return out;
}

// The deployment contract of bitnet-serve pods (README, "Deploy").
function policy(obj) {
  if (!workloads.has(obj.kind)) return [];
  if (!isServer(obj)) return otherPolicy(obj);
  const out = [];
  const pod = obj.spec.template.spec;
  const c = pod.containers.find((x) => x.name === "bitnet-server");
  if (!c) return ["no container named bitnet-server"];
  const path = (probe) => probe?.httpGet?.path;
  if (path(c.livenessProbe) !== "/health/live") out.push("livenessProbe must GET /health/live");
  if (path(c.readinessProbe) !== "/health/ready") out.push("readinessProbe must GET /health/ready");
  if (!c.startupProbe) out.push("a startupProbe must cover the model load");
  const env = Object.fromEntries((c.env || []).map((e) => [e.name, e.value]));
  out.push(...httpsPolicy(pod, c, env));
  const drain = Number(env.BITNET_DRAIN_TIMEOUT_MS) / 1000;
  const cmd = c.lifecycle?.preStop?.exec?.command || [];
  const sleep = cmd[0] === "sleep" ? Number(cmd[1]) : NaN;
  const grace = pod.terminationGracePeriodSeconds;
  if (!(drain > 0)) out.push("BITNET_DRAIN_TIMEOUT_MS must be set");
  if (!(sleep >= 0)) out.push("preStop must be ['sleep', N]");
  if (!(grace > sleep + drain)) {
    out.push(`terminationGracePeriodSeconds (${grace}) must exceed preStop sleep (${sleep}) + drain timeout (${drain})`);
  }
  out.push(...hardening(pod, c));
  if (obj.kind === "StatefulSet" && obj.spec.podManagementPolicy !== "Parallel") {
    out.push("podManagementPolicy must be Parallel (pods load their models at the same time)");
  }
  return out;
}

// HTTPS on the server's port (README, "HTTPS"): with BITNET_TLS_CERT set the port speaks only
// HTTPS, so every probe must use scheme HTTPS (a plain probe gets 400 https_required and would
// kill or unready every pod), both files must come from a read-only Secret mount; without it no
// probe may use HTTPS.
function httpsPolicy(pod, c, env) {
  const out = [];
  const probes = { startupProbe: c.startupProbe, livenessProbe: c.livenessProbe, readinessProbe: c.readinessProbe };
  const scheme = (p) => p?.httpGet?.scheme || "HTTP";
  if (!env.BITNET_TLS_CERT) {
    for (const [name, p] of Object.entries(probes)) {
      if (scheme(p) === "HTTPS") out.push(`${name} uses scheme HTTPS but BITNET_TLS_CERT is not set`);
    }
    return out;
  }
  for (const [name, p] of Object.entries(probes)) {
    if (scheme(p) !== "HTTPS") out.push(`${name} must use scheme HTTPS: BITNET_TLS_CERT makes the port HTTPS only`);
  }
  if (!env.BITNET_TLS_KEY) out.push("BITNET_TLS_CERT needs BITNET_TLS_KEY");
  for (const file of [env.BITNET_TLS_CERT, env.BITNET_TLS_KEY].filter(Boolean)) {
    const mount = (c.volumeMounts || []).find((m) => file.startsWith(`${m.mountPath}/`));
    const vol = mount && (pod.volumes || []).find((v) => v.name === mount.name);
    if (!vol?.secret || mount.readOnly !== true) out.push(`${file} must be in a read-only Secret mount`);
  }
  return out;
}

const selects = (selector, labels) =>
  Object.entries(selector || {}).every(([k, v]) => (labels || {})[k] === v);

// A cluster StatefulSet against the other objects of its rendering (conf/README.md, "Cluster
// keys"): stable peer addresses from a headless Service, the join list naming every pod, the
// peer listener on the container's cluster port, TLS files from a read-only Secret mount, and the
// Certificate (if rendered) issuing that Secret for both TLS roles. Returns [where, problem] pairs.
function clusterPolicy(objs, label) {
  const out = [];
  for (const sts of objs.filter((o) => o.kind === "StatefulSet")) {
    const where = `${label}: StatefulSet/${sts.metadata.name}`;
    const bad = (msg) => out.push([where, msg]);
    const pod = sts.spec.template.spec;
    const podLabels = sts.spec.template.metadata?.labels;
    const c = pod.containers.find((x) => x.name === "bitnet-server");
    if (!c) continue;
    const env = new Map((c.env || []).map((e, i) => [e.name, { ...e, index: i }]));
    const value = (name) => env.get(name)?.value;
    const port = (c.ports || []).find((p) => p.name === "cluster")?.containerPort;
    if (!port) bad("the bitnet-server container needs a port named cluster");
    const listen = value("BITNET_CLUSTER_LISTEN") || "";
    if (listen !== `0.0.0.0:${port}`) bad(`BITNET_CLUSTER_LISTEN ${listen} != 0.0.0.0:<cluster port ${port}>`);
    if (env.get("BITNET_NODE_NAME")?.valueFrom?.fieldRef?.fieldPath !== "metadata.name") {
      bad("BITNET_NODE_NAME must come from the pod's metadata.name");
    }
    const ns = env.get("POD_NAMESPACE");
    if (ns?.valueFrom?.fieldRef?.fieldPath !== "metadata.namespace") bad("POD_NAMESPACE must come from metadata.namespace");

    const svc = objs.find((o) => o.kind === "Service" && o.metadata.name === sts.spec.serviceName);
    if (!svc) {
      bad(`serviceName ${sts.spec.serviceName} is not a rendered Service`);
    } else {
      if (svc.spec.clusterIP !== "None") bad(`Service ${svc.metadata.name} must be headless (clusterIP: None)`);
      if (svc.spec.publishNotReadyAddresses !== true) bad(`Service ${svc.metadata.name} must publish not-ready addresses`);
      if (!selects(svc.spec.selector, podLabels)) bad(`Service ${svc.metadata.name} does not select the pods`);
      const sp = (svc.spec.ports || []).find((p) => p.targetPort === "cluster" || p.targetPort === port);
      if (!sp || sp.port !== port) bad(`Service ${svc.metadata.name} must expose the cluster port ${port}`);
    }
    // Kubernetes expands $(POD_NAMESPACE) only when it is defined earlier in the list.
    const join = env.get("BITNET_CLUSTER_JOIN");
    if (join && ns && ns.index > join.index) bad("POD_NAMESPACE must come before BITNET_CLUSTER_JOIN");
    const want = Array.from({ length: sts.spec.replicas ?? 1 }, (_, i) =>
      `${sts.metadata.name}-${i}.${sts.spec.serviceName}.$(POD_NAMESPACE).svc.cluster.local:${port}`);
    const got = (join?.value || "").split(",");
    if (got.join(",") !== want.join(",")) bad(`BITNET_CLUSTER_JOIN must name every pod: ${want.join(",")}, got ${join?.value}`);

    const http = objs.find((o) => o.kind === "Service" && o.spec.clusterIP !== "None" &&
      selects(o.spec.selector, podLabels) && (o.spec.ports || []).some((p) => p.targetPort === "http"));
    if (!http) bad("no Service sends HTTP to the pods");
    if (!objs.some((o) => o.kind === "PodDisruptionBudget" && selects(o.spec.selector?.matchLabels, podLabels))) {
      bad("no PodDisruptionBudget covers the pods");
    }
    if (objs.some((o) => o.kind === "Deployment" && selects(o.spec.selector?.matchLabels, podLabels))) {
      bad("a Deployment selects the same pods");
    }
    if (objs.some((o) => o.kind === "HorizontalPodAutoscaler")) bad("an autoscaler would change replicas behind the join list");

    const files = ["BITNET_CLUSTER_CERT", "BITNET_CLUSTER_KEY", "BITNET_CLUSTER_CA"].map(value);
    const mount = (c.volumeMounts || []).find((m) => files[0]?.startsWith(`${m.mountPath}/`));
    const vol = mount && (pod.volumes || []).find((v) => v.name === mount.name);
    // A Secret (one certificate for every pod), or cert-manager's CSI driver (each pod its own,
    // named for the pod: the pod's name as common name and in its peer DNS name).
    const perPod = vol?.csi?.driver === "csi.cert-manager.io";
    if (!vol?.secret && !perPod) {
      bad("the TLS files must come from a mounted Secret or cert-manager's CSI driver");
      continue;
    }
    if (mount.readOnly !== true) bad("the TLS volume must be mounted read-only");
    if (perPod) {
      const at = vol.csi.volumeAttributes || {};
      if (vol.csi.readOnly !== true) bad("the CSI TLS volume must be read-only");
      if (at["csi.cert-manager.io/common-name"] !== "${POD_NAME}") bad("each pod's certificate must name the pod (common-name ${POD_NAME})");
      if (!(at["csi.cert-manager.io/dns-names"] || "").startsWith(`\${POD_NAME}.${sts.spec.serviceName}.`)) bad(`each pod's certificate must hold its peer DNS name (\${POD_NAME}.${sts.spec.serviceName}...)`);
      for (const u of ["server auth", "client auth"]) {
        if (!(at["csi.cert-manager.io/key-usages"] || "").includes(u)) bad(`the CSI certificate lacks usage ${u}`);
      }
      if (!at["csi.cert-manager.io/issuer-name"]) bad("the CSI certificate names no issuer");
      if (objs.some((o) => o.kind === "Certificate")) bad("a shared Certificate beside per-pod certificates");
    }
    const keys = ["tls.crt", "tls.key", "ca.crt"].map((k) => `${mount.mountPath}/${k}`);
    if (files.join() !== keys.join()) bad(`TLS files ${files.join()} != ${keys.join()} (cert-manager's key names)`);
    const cert = objs.find((o) => o.kind === "Certificate");
    if (cert && vol.secret) {
      if (cert.spec.secretName !== vol.secret.secretName) bad(`Certificate ${cert.metadata.name} writes ${cert.spec.secretName}, the pods mount ${vol.secret.secretName}`);
      for (const u of ["server auth", "client auth"]) {
        if (!(cert.spec.usages || []).includes(u)) bad(`Certificate ${cert.metadata.name} lacks usage ${u}`);
      }
      if (!(cert.spec.dnsNames || []).some((d) => d.startsWith(`*.${sts.spec.serviceName}.`))) {
        bad(`Certificate ${cert.metadata.name} does not cover *.${sts.spec.serviceName}.*`);
      }
    }
  }
  return out;
}
const typed = []; // [label, index, module, kind, object]

for (const arg of process.argv.slice(2)) {
  const eq = arg.indexOf("=");
  const [label, file] = eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, arg];
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  const objs = [];
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
    objs.push(obj);
    const where = `${label}: ${obj.kind ?? "?"}/${obj.metadata?.name ?? "?"}`;
    if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
      console.log(`FAIL ${where}: no apiVersion/kind`);
      problems++;
      continue;
    }
    // kubernetes-models lays its classes out as <group>/<version>/<Kind>, core types under v1/.
    const pkg = crdModels[obj.apiVersion.split("/")[0]] ?? "kubernetes-models";
    const mod = `${pkg}/${obj.apiVersion}/${obj.kind}`;
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
  for (const [where, p] of clusterPolicy(objs, label)) {
    console.log(`FAIL ${where}: ${p}`);
    problems++;
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
