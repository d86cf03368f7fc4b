// Validates Kubernetes manifests offline against the Kubernetes API schema
// that the kubernetes-models package ships (generated from Kubernetes'
// OpenAPI spec), in two passes:
//  1. each object through the package's JSON-schema validator (ajv code
//     compiled from the OpenAPI spec): types, formats, required fields, enums;
//  2. all objects as TypeScript literals of the package's typed interfaces,
//     through the TypeScript compiler: its excess-property check rejects
//     unknown fields (a misspelt key), which the OpenAPI schema allows.
// Usage: node validate.mjs MANIFEST.yaml...   Exit 0 when every object passes.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node validate.mjs MANIFEST.yaml...");
  process.exit(2);
}
const modelsVersion = JSON.parse(readFileSync(path.join(here, "node_modules/kubernetes-models/package.json"))).version;
const tsVersion = require("typescript/package.json").version;
console.log(`validator: kubernetes-models ${modelsVersion} (ajv schemas) + typescript ${tsVersion} (unknown fields)`);

// "apps/v1" -> "kubernetes-models/apps/v1"; "v1" (the core group) -> "kubernetes-models/v1".
const modulePath = (apiVersion) => `kubernetes-models/${apiVersion}`;

let failures = 0;
const objects = [];
for (const file of files) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"), { uniqueKeys: true, strict: true });
  for (const doc of docs) {
    const where = `${path.basename(file)}#${objects.length}`;
    if (doc.errors.length || doc.warnings.length) {
      console.log(`FAIL ${where}: YAML: ${[...doc.errors, ...doc.warnings].map((e) => e.message).join("; ")}`);
      failures++;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null) continue;  // an empty document
    const name = `${where} ${obj.kind}/${obj.metadata?.name}`;
    let mod;
    try {
      mod = await import(modulePath(obj.apiVersion));
    } catch {
      console.log(`FAIL ${name}: unknown apiVersion ${obj.apiVersion}`);
      failures++;
      continue;
    }
    const Model = mod[obj.kind];
    if (typeof Model !== "function") {
      console.log(`FAIL ${name}: ${obj.apiVersion} has no kind ${obj.kind}`);
      failures++;
      continue;
    }
    try {
      new Model(obj).validate();
      console.log(`ok   ${name}: schema`);
    } catch (e) {
      console.log(`FAIL ${name}: ${e.message}`);
      failures++;
    }
    objects.push({ name, obj });
  }
}

// Pass 2: one typed constant per object, checked by tsc.
const gen = path.join(here, ".gen");
rmSync(gen, { recursive: true, force: true });
mkdirSync(gen);
let ts = "";
objects.forEach(({ name, obj }, i) => {
  ts += `// ${name}\nimport type { I${obj.kind} as T${i} } from "${modulePath(obj.apiVersion)}";\n`;
  ts += `export const m${i}: T${i} = ${JSON.stringify(obj, null, 2)};\n`;
});
writeFileSync(path.join(gen, "manifests.ts"), ts);
writeFileSync(path.join(gen, "tsconfig.json"), JSON.stringify({
  compilerOptions: { strict: true, noEmit: true, module: "esnext", moduleResolution: "bundler", target: "es2022",
                     skipLibCheck: true, types: [] },
  files: ["manifests.ts"],
}));
try {
  execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", path.join(gen, "tsconfig.json")],
               { stdio: "pipe" });
  console.log(`ok   ${objects.length} objects: no unknown or mistyped fields`);
} catch (e) {
  // Name the object each error is in: the line's comment above its constant.
  const lines = ts.split("\n");
  for (const m of String(e.stdout).matchAll(/manifests\.ts\((\d+),\d+\): (.*)/g)) {
    let l = Number(m[1]) - 1;
    while (l > 0 && !lines[l].startsWith("// ")) l--;
    console.log(`FAIL ${lines[l].slice(3)}: line ${m[1]} of .gen/manifests.ts: ${m[2]}`);
    failures++;
  }
  if (!failures) {
    console.log(`FAIL tsc: ${e.stdout}${e.stderr}`);
    failures++;
  }
}
console.log(failures ? `${failures} failed` : `all ${objects.length} objects valid`);
process.exit(failures ? 1 : 0);
