// Checks exported tool definitions against the rules each API applies, with
// real validators: ajv (strict mode) for JSON Schema, the MCP SDK's own
// ListToolsResultSchema. Input: a JSON file {chat, chat_strict, responses,
// responses_strict, anthropic, mcp, samples}. Output: one JSON report
// {checked, errors: [...]} on stdout.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";

const require = createRequire(resolve(process.env.NPM_DIR || "build/npm") + "/");
const Ajv = require("ajv");
const { ListToolsResultSchema } = require("@modelcontextprotocol/sdk/types.js");

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const errors = [];
let checked = 0;
const fail = (where, msg) => errors.push(`${where}: ${msg}`);

function compile(schema, where) {
  // strict: unknown keywords, required names without properties, ignored
  // keywords are errors; union types (["string","null"]) are strict mode's own
  const ajv = new Ajv({ strict: true, allowUnionTypes: true });
  try {
    return ajv.compile(schema);
  } catch (e) {
    fail(where, "ajv refuses the schema: " + e.message);
    return null;
  }
}

const types = (n) => (n.type === undefined ? [] : Array.isArray(n.type) ? n.type : [n.type]);

// OpenAI strict mode: every object closed and all its properties required,
// every property typed, nullable enums listing null, at every level.
function strictRules(node, where) {
  if (typeof node !== "object" || node === null) return fail(where, "not a schema");
  if (node.anyOf) node.anyOf.forEach((b, i) => strictRules(b, `${where}.anyOf[${i}]`));
  else if (node.type === undefined && node.enum === undefined) fail(where, "no type");
  if (types(node).includes("object") || node.properties) {
    if (node.additionalProperties !== false) fail(where, "additionalProperties is not false");
    const props = Object.keys(node.properties || {}).sort();
    const req = [...(node.required || [])].sort();
    if (JSON.stringify(props) !== JSON.stringify(req)) fail(where, `required ${req} is not every property ${props}`);
    for (const k of props) strictRules(node.properties[k], `${where}.properties.${k}`);
  }
  if (node.items) strictRules(node.items, `${where}.items`);
  if (node.enum && types(node).includes("null") && !node.enum.includes(null))
    fail(where, "nullable enum without null");
}

function each(list, name, fn) {
  if (!Array.isArray(list)) return fail(name, "is not an array");
  list.forEach((t, i) => { checked++; fn(t, `${name}[${i}] ${t.name || (t.function && t.function.name)}`); });
}

each(input.chat, "chat", (t, w) => {
  if (t.type !== "function" || typeof t.function !== "object") fail(w, "not {type: 'function', function: {...}}");
  if (typeof t.function.strict !== "boolean") fail(w, "strict is not sent");
  compile(t.function.parameters, w);
});
each(input.chat_strict, "chat_strict", (t, w) => {
  if (t.function.strict !== true) fail(w, "strict is not true");
  if (compile(t.function.parameters, w)) strictRules(t.function.parameters, w);
});
each(input.responses, "responses", (t, w) => {
  if (t.type !== "function" || typeof t.name !== "string") fail(w, "not a flat function tool");
  if (t.strict !== false) fail(w, "strict must be sent as false (a missing one means strict)");
  compile(t.parameters, w);
});
each(input.responses_strict, "responses_strict", (t, w) => {
  if (t.strict !== true) fail(w, "strict is not true");
  if (compile(t.parameters, w)) strictRules(t.parameters, w);
});
each(input.anthropic, "anthropic", (t, w) => {
  const keys = Object.keys(t).sort().join(",");
  if (keys !== "description,input_schema,name") fail(w, "fields are " + keys);
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(t.name)) fail(w, "bad name");
  if (t.input_schema.type !== "object") fail(w, "input_schema is not an object schema");
  compile(t.input_schema, w);
});
if (Array.isArray(input.mcp)) {
  checked += input.mcp.length;
  const r = ListToolsResultSchema.safeParse({ tools: input.mcp });
  if (!r.success) fail("mcp", "ListToolsResultSchema: " + JSON.stringify(r.error.issues));
  input.mcp.forEach((t, i) => compile(t.inputSchema, `mcp[${i}] ${t.name}`));
} else fail("mcp", "is not an array");

// What a strict-mode model sends (every field, null where optional) must be
// valid for the strict schema: {tool, args} pairs.
for (const s of input.samples || []) {
  checked++;
  const tool = input.chat_strict.find((t) => t.function.name === s.tool);
  const v = tool && compile(tool.function.parameters, "sample " + s.tool);
  if (v && !v(s.args)) fail("sample " + s.tool, "rejected: " + JSON.stringify(v.errors));
}
for (const [name, list] of Object.entries(input.empty || {})) {
  checked++;
  if (!Array.isArray(list) || list.length !== 0) fail("empty " + name, "zero tools is not []");
}

process.stdout.write(JSON.stringify({ checked, errors }) + "\n");
