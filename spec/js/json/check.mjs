// The real peer for csrc/remote/json.c: Node's JSON.parse, made as strict as
// RFC 8259 asks (input must be UTF-8, strings well-formed Unicode) plus our
// one documented limit (nesting up to 128). Reads [{in, out}] on stdin: in
// is the case (base64), out our answer (base64 of the canonical form, or
// "!" and our error). Prints "ok N" or each disagreement; exits 1 on any.
import { readFileSync } from "node:fs";

const MAX_DEPTH = 128;
const cases = JSON.parse(readFileSync(0, "utf8"));
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }) // a BOM is not JSON;

// Over the text, not the parsed value: a duplicate key's lost value counts
// too. Every string literal is well-formed Unicode; brackets nest <= 128.
function strictText(text) {
  const strings = /"(?:[^"\\]|\\.)*"/g;
  for (const lit of text.match(strings) || []) if (!JSON.parse(lit).isWellFormed()) return false;
  let depth = 0;
  for (const ch of text.replace(strings, "")) {
    if (ch === "[" || ch === "{") depth++;
    else if (ch === "]" || ch === "}") depth--;
    if (depth > MAX_DEPTH) return false;
  }
  return true;
}

function nodeParse(bytes) {
  try {
    const text = strict.decode(bytes);
    const v = JSON.parse(text);
    return strictText(text) ? { ok: true, v } : { ok: false };
  } catch {
    return { ok: false };
  }
}

const bad = [];
for (const [k, c] of cases.entries()) {
  const input = Buffer.from(c.in, "hex");
  if (c.mode === "b64e" || c.mode === "b64d") {
    // b64e: our encoding is Node's; b64d: the case is Node's base64 or
    // base64url of `bytes`, and we decode it back to them
    const want = c.mode === "b64e" ? Buffer.from(input.toString("base64")) : Buffer.from(c.bytes, "hex");
    if (c.out !== want.toString("hex")) bad.push(`case ${k} (${c.mode}) ${input.toString("latin1").slice(0, 40)}: ours ${c.out.slice(0, 40)}`);
    continue;
  }
  const want = nodeParse(input);
  const refused = c.out.startsWith("!");
  if (want.ok === refused) {
    bad.push(`case ${k} ${JSON.stringify(input.toString("latin1").slice(0, 80))}: node ${want.ok ? "accepts" : "refuses"}, ours ${refused ? "refuses (" + c.out.slice(1) + ")" : "accepts"}`);
    continue;
  }
  if (!want.ok) continue;
  const ours = Buffer.from(c.out, "hex");
  const back = nodeParse(ours);
  if (!back.ok || JSON.stringify(back.v) !== JSON.stringify(want.v))
    bad.push(`case ${k}: the canonical form ${JSON.stringify(ours.toString("latin1").slice(0, 80))} means something else`);
  else if (/[\s]/.test(ours.toString("latin1").replace(/"(?:[^"\\]|\\.)*"/g, "")))
    bad.push(`case ${k}: white space outside strings in the canonical form`);
}
for (const b of bad.slice(0, 20)) console.log(b);
console.log(bad.length ? `${bad.length} disagreements` : `ok ${cases.length}`);
process.exit(bad.length ? 1 : 0);
