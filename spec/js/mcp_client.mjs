// The official MCP TypeScript SDK's Client over StdioClientTransport,
// driving agent-sandbox mcp for spec/mcp_spec.lua. Usage:
//   node mcp_client.mjs SCENARIO DIR -- SERVER-COMMAND ARGS...
// Prints one JSON report on stdout; the spec asserts on it. Each scenario
// does what a real client does; nothing here knows the server's internals.
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { execFileSync } from "node:child_process";
import { pathToFileURL } from "node:url";

const require = createRequire(resolve(process.env.NPM_DIR || "build/npm") + "/");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const T = require("@modelcontextprotocol/sdk/types.js");

const [scenario, dir, sep, command, ...args] = process.argv.slice(2);
if (sep !== "--" || !command) throw new Error("usage: mcp_client.mjs SCENARIO DIR -- CMD ARGS...");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (r) => (r.content || []).map((c) => c.text || "").join("");
const count = (pattern) => {
  try {
    return execFileSync("pgrep", ["-f", pattern]).toString().trim().split("\n").filter(Boolean).length;
  } catch {
    return 0; // pgrep exits 1 when nothing matches
  }
};

function connect(capabilities = {}) {
  const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d) => { stderr += d; report.stderr = stderr; });
  const client = new Client({ name: "spec-client", version: "1.0.0" }, { capabilities });
  return { client, transport, stderr: () => stderr };
}

const report = {};
const scenarios = {};

// initialize, list, one call of every tool kind, a refused traversal, an
// unknown method and an unknown tool
scenarios.tools = async () => {
  const { client, transport } = connect();
  await client.connect(transport);
  report.server = client.getServerVersion();
  report.capabilities = client.getServerCapabilities();
  report.instructions = client.getInstructions();
  const { tools } = await client.listTools();
  report.tools = tools.map((t) => t.name);
  report.annotations = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
  const call = async (name, a) => {
    const r = await client.callTool({ name, arguments: a });
    return { isError: r.isError === true, text: text(r) };
  };
  const c = (report.calls = {});
  c.write_file = await call("write_file", { path: "src/hello.txt", content: "hello\nworld\n" });
  c.read_file = await call("read_file", { path: "src/hello.txt" });
  c.edit_file = await call("edit_file", { path: "src/hello.txt", old_string: "world", new_string: "there" });
  c.list_files = await call("list_files", { path: "." });
  c.find_files = await call("find_files", { pattern: "**/*.txt" });
  c.search_code = await call("search_code", { pattern: "there" });
  c.file_exists = await call("file_exists", { path: "src/hello.txt" });
  c.create_directory = await call("create_directory", { path: "made/deep" });
  c.move_file = await call("move_file", { source: "src/hello.txt", destination: "made/hello.txt" });
  c.generate_from_template = await call("generate_from_template",
    { path: "made/gen.txt", template: "v={{ v }}", variables: [{ name: "v", value: "7" }] });
  c.generated = await call("read_file", { path: "made/gen.txt" });
  const img = await client.callTool({ name: "read_file", arguments: { path: "dot.png" } });
  report.image = img.content.map((x) => (x.type === "text" ? { type: x.type } : { type: x.type, mimeType: x.mimeType, data: x.data }));
  report.pdf = await call("read_file", { path: "paper.pdf", pages: "1" }); // (not among calls: a remote run has no PDF)
  const page = await client.callTool({ name: "read_file", arguments: { path: "paper.pdf", page_image: 1 } });
  report.page_image = page.content.map((x) => (x.type === "text" ? { type: x.type, text: x.text } : { type: x.type, mimeType: x.mimeType }));
  c.run_command = await call("run_command", { command: ["cat", "made/hello.txt"] });
  c.run_shell = await call("run_shell", { script: "echo $((6*7)) > answer.txt; cat answer.txt" });
  c.background = await call("run_command", { command: ["sh", "-c", "echo started; sleep 0.2; echo done"], background: true });
  c.process_list = await call("process_list", {});
  const id = Number((c.background.text.match(/Started process (\d+)/) || [])[1]);
  c.process_output = await call("process_output", { id, wait_seconds: 2 });
  for (let i = 0; i < 20 && !/exited/.test(c.process_output.text); i++) {
    const more = await call("process_output", { id, wait_seconds: 1 });
    c.process_output.text += "\n" + more.text;
  }
  c.delete_file = await call("delete_file", { path: "made", recursive: true });
  c.traversal = await call("read_file", { path: "../../../../etc/passwd" });
  c.absolute = await call("read_file", { path: "/etc/passwd" });
  c.bad_args = await call("read_file", { nope: 1 });
  try {
    await client.callTool({ name: "no_such_tool", arguments: {} });
    report.unknown_tool = "no error";
  } catch (e) {
    report.unknown_tool = { code: e.code, message: e.message };
  }
  try {
    await client.request({ method: "prompts/list", params: {} }, T.ListPromptsResultSchema);
    report.unknown_method = "no error";
  } catch (e) {
    report.unknown_method = { code: e.code, message: e.message };
  }
  report.ping = await client.ping();
  await client.close();
};

// a long command sends progress; a cancelled one loses its whole tree
scenarios.progress = async () => {
  const { client, transport } = connect();
  await client.connect(transport);
  const seen = [];
  const r = await client.callTool({ name: "run_command", arguments: { command: ["sleep", "2.6"] } },
    T.CallToolResultSchema, { onprogress: (p) => seen.push(p), timeout: 30000 });
  report.progress = seen;
  report.result = { isError: r.isError === true, text: text(r) };
  const marker = process.env.MARKER;
  const ac = new AbortController();
  const t0 = Date.now();
  const pending = client.callTool({ name: "run_shell",
    arguments: { script: `sleep ${marker} & sleep ${marker} & (sleep ${marker}; true) & wait` } },
    T.CallToolResultSchema, { signal: ac.signal, timeout: 60000 });
  await sleep(800);
  report.running_before = count(`sleep ${marker}`);
  ac.abort("the user pressed stop");
  try {
    await pending;
    report.cancel = "completed";
  } catch (e) {
    report.cancel = String(e.name || e);
  }
  // the server must stay usable, and the tree must go (SIGTERM, then SIGKILL after kill_grace)
  report.after = text(await client.callTool({ name: "run_command", arguments: { command: ["echo", "still here"] } }));
  for (let i = 0; i < 50 && count(`sleep ${marker}`) > 0; i++) await sleep(100);
  report.running_after = count(`sleep ${marker}`);
  report.cancel_ms = Date.now() - t0;
  await client.close();
};

// files as resources: list, read text and binary, subscribe to changes
scenarios.resources = async () => {
  const { client, transport } = connect();
  const updates = [];
  client.setNotificationHandler(T.ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
  await client.connect(transport);
  const list = await client.listResources();
  report.list = list.resources.map((r) => ({ uri: r.uri, mimeType: r.mimeType, size: r.size }));
  report.templates = (await client.listResourceTemplates()).resourceTemplates;
  const read = async (uri) => {
    try {
      const r = await client.readResource({ uri });
      return r.contents[0];
    } catch (e) {
      return { error: e.code, message: e.message };
    }
  };
  report.text = await read("sandbox:///notes.md");
  report.binary = await read("sandbox:///bin.dat");
  report.spaced = await read("sandbox:///with%20space.txt");
  report.latin1 = await read("sandbox:///latin1.txt");
  report.missing = await read("sandbox:///nope.txt");
  report.escape = await read("sandbox:///../../etc/passwd");
  report.foreign = await read("file:///etc/passwd");
  await client.subscribeResource({ uri: "sandbox:///notes.md" });
  await client.subscribeResource({ uri: "sandbox:///later.txt" });
  await client.callTool({ name: "read_file", arguments: { path: "notes.md" } }); // a write needs a read first
  await client.callTool({ name: "write_file", arguments: { path: "notes.md", content: "# changed\n" } });
  await sleep(100);
  report.after_tool = [...updates];
  await client.callTool({ name: "run_shell", arguments: { script: "echo made by a command > later.txt" } });
  await sleep(100);
  report.after_command = [...updates];
  await client.unsubscribeResource({ uri: "sandbox:///notes.md" });
  await client.callTool({ name: "write_file", arguments: { path: "notes.md", content: "# again\n" } });
  await sleep(100);
  report.after_unsubscribe = [...updates];
  await client.close();
};

// --approve ask: elicitation where the client can answer, refusal where not
scenarios.approve = async () => {
  const answers = ["accept", "decline"];
  const asked = [];
  const { client, transport } = connect({ elicitation: {} });
  client.setRequestHandler(T.ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: answers.shift() || "cancel" };
  });
  await client.connect(transport);
  const w = async (p) => {
    const r = await client.callTool({ name: "write_file", arguments: { path: p, content: "x" } });
    return { isError: r.isError === true, text: text(r) };
  };
  report.accepted = await w("yes.txt");
  report.declined = await w("no.txt");
  report.read_only_not_asked = text(await client.callTool({ name: "file_exists", arguments: { path: "yes.txt" } }));
  report.asked = asked;
  await client.close();
  const plain = connect(); // no elicitation capability
  await plain.client.connect(plain.transport);
  const r = await plain.client.callTool({ name: "write_file", arguments: { path: "plain.txt", content: "x" } });
  report.no_capability = { isError: r.isError === true, text: text(r) };
  await plain.client.close();
};

// logging: the level the client sets decides what it hears
scenarios.logging = async () => {
  const { client, transport } = connect();
  const logs = [];
  client.setNotificationHandler(T.LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  await client.connect(transport);
  await client.callTool({ name: "file_exists", arguments: { path: "." } });
  await sleep(50);
  report.default_level = logs.length;
  await client.setLoggingLevel("info");
  await client.callTool({ name: "file_exists", arguments: { path: "." } });
  await client.callTool({ name: "read_file", arguments: { path: "../x" } });
  await sleep(50);
  report.logs = logs;
  await client.close();
};

// the end: EOF (client.close) and SIGTERM both dispose the sandbox
scenarios.shutdown = async () => {
  const marker = process.env.MARKER;
  for (const how of ["eof", "sigterm"]) {
    const { client, transport } = connect();
    await client.connect(transport);
    await client.callTool({ name: "run_command", arguments: { command: ["sleep", marker], background: true } });
    // a background command is started when the call answers; on a loaded
    // machine its exec may still be on the way: wait for it (up to 10 s)
    let before = count(`sleep ${marker}`);
    for (let i = 0; i < 100 && before === 0; i++) { await sleep(100); before = count(`sleep ${marker}`); }
    const pid = transport.pid;
    const closed = new Promise((r) => (transport.onclose = r));
    if (how === "eof") await client.close();
    else process.kill(pid, "SIGTERM");
    await Promise.race([closed, sleep(15000)]);
    let alive = true;
    for (let i = 0; i < 150 && alive; i++) {
      try { process.kill(pid, 0); await sleep(100); } catch { alive = false; }
    }
    // a tree the server's end kills (dispose, or the kernel's parent-death
    // signal when a slow server was killed first) is gone within moments:
    // what is left 5 s after the server's exit outlived it
    let after = count(`sleep ${marker}`);
    for (let i = 0; i < 50 && after > 0; i++) { await sleep(100); after = count(`sleep ${marker}`); }
    report[how] = { before, after, server_alive: alive, stderr: report.stderr };
  }
};

// a client that offers roots (DIR as its first), started without --dir:
// the server works there, wherever it was started
scenarios.roots = async () => {
  const { client, transport } = connect({ roots: { listChanged: true } });
  let asked = 0;
  client.setRequestHandler(T.ListRootsRequestSchema, async () => {
    asked++;
    return { roots: [{ uri: pathToFileURL(dir).href, name: "project" }] };
  });
  await client.connect(transport);
  const r = await client.callTool({ name: "list_files", arguments: { path: "." } });
  report.list = text(r);
  const p = await client.callTool({ name: "run_command", arguments: { command: ["pwd"] } });
  report.pwd = text(p);
  report.asked = asked;
  await client.close();
};

const timer = setTimeout(() => {
  console.log(JSON.stringify({ ...report, timeout: true }));
  process.exit(3);
}, 90000);
try {
  await scenarios[scenario]();
  clearTimeout(timer);
  console.log(JSON.stringify(report));
  process.exit(0);
} catch (e) {
  clearTimeout(timer);
  console.log(JSON.stringify({ ...report, failed: String(e && e.stack || e) }));
  process.exit(1);
}
