// E2B's official SDK (npm "e2b") against the test peer: files, commands,
// background commands, reconnect, kill, sandbox lifecycle. The peer counts
// for the RemoteSandbox's tests only as far as this passes. Prints one line
// per check ("ok <name>" or "FAIL <name>: why") and exits 1 on a failure.
//   node sdk_check.mjs API_URL ENVD_URL KEY
import { createRequire } from "node:module";
import { resolve } from "node:path";

// the test peers' packages live in build/npm (scripts/npm-deps.sh)
const require = createRequire(resolve(process.env.NPM_DIR || "build/npm") + "/");
const { Sandbox, CommandExitError } = require("e2b");

const [apiUrl, sandboxUrl, apiKey] = process.argv.slice(2);
const conn = { apiKey, apiUrl, sandboxUrl };
let failed = 0;

async function check(name, fn) {
  try {
    await fn();
    console.log("ok " + name);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack.split("\n").slice(0, 3).join(" | ") : e}`);
  }
}

function assert(cond, what) {
  if (!cond) throw new Error(what);
}

const sbx = await Sandbox.create("base", { ...conn, timeoutMs: 60000, metadata: { suite: "peer" }, envs: { GREETING: "hi" } });

await check("files: write, read, list, exists, rename, remove, makeDir", async () => {
  await sbx.files.write("notes/a.txt", "alpha\n");
  assert((await sbx.files.read("notes/a.txt")) === "alpha\n", "read back");
  const bytes = await sbx.files.read("notes/a.txt", { format: "bytes" });
  assert(bytes.length === 6, "bytes");
  const list = await sbx.files.list("notes");
  assert(list.length === 1 && list[0].name === "a.txt" && list[0].type === "file", "list " + JSON.stringify(list));
  assert(await sbx.files.exists("notes/a.txt"), "exists");
  assert(!(await sbx.files.exists("notes/none")), "not exists");
  await sbx.files.rename("notes/a.txt", "notes/b.txt");
  assert((await sbx.files.read("notes/b.txt")) === "alpha\n", "renamed");
  assert(await sbx.files.makeDir("dir/sub"), "makeDir");
  assert(!(await sbx.files.makeDir("dir/sub")), "makeDir of an existing directory");
  const info = await sbx.files.getInfo("notes/b.txt");
  assert(info.size === 6 && info.type === "file", "getInfo " + JSON.stringify(info));
  await sbx.files.remove("notes");
  assert(!(await sbx.files.exists("notes/b.txt")), "removed");
  let missing = false;
  try { await sbx.files.read("nope.txt"); } catch (e) { missing = /not found|NotFound/i.test(e.name + e.message); }
  assert(missing, "reading a missing file is NotFound");
});

// as envd reports a link (shared/pkg/filesystem/entry.go): the target's
// type, symlinkTarget the resolved path; the SDK passes both through
await check("files: a link's info, as envd gives it", async () => {
  await sbx.files.write("linked/t.txt", "target\n");
  await sbx.commands.run("ln -s t.txt linked/l && ln -s gone linked/dangling", { cwd: "/home/user" });
  const info = await sbx.files.getInfo("linked/l");
  assert(info.type === "file" && info.symlinkTarget === "/home/user/linked/t.txt" && info.size === 5,
         "getInfo of a link " + JSON.stringify(info));
  assert((await sbx.files.read("linked/l")) === "target\n", "read through a link");
  const names = (await sbx.files.list("linked")).map((e) => `${e.name}:${e.type ?? "none"}`).sort();
  // a dangling link has no type from envd, and the SDK's list leaves such entries out
  assert(JSON.stringify(names) === JSON.stringify(["l:file", "t.txt:file"]), "list " + JSON.stringify(names));
  await sbx.files.remove("linked");
});

await check("commands: run with output, exit codes, env, cwd", async () => {
  const r = await sbx.commands.run("echo out; echo err >&2; echo $GREETING", { cwd: "/home/user" });
  assert(r.exitCode === 0 && r.stdout === "out\nhi\n" && r.stderr === "err\n", JSON.stringify(r));
  let exitErr = null;
  try { await sbx.commands.run("exit 3"); } catch (e) { exitErr = e; }
  assert(exitErr instanceof CommandExitError && exitErr.exitCode === 3, "exit 3 throws CommandExitError");
  const seen = [];
  await sbx.commands.run("printf 'a\\nb\\n'", { onStdout: (d) => seen.push(d) });
  assert(seen.join("") === "a\nb\n", "onStdout " + JSON.stringify(seen));
});

await check("commands: timeout", async () => {
  const t0 = Date.now();
  let timedOut = false;
  try { await sbx.commands.run("sleep 10", { timeoutMs: 500 }); } catch { timedOut = true; }
  assert(timedOut && Date.now() - t0 < 5000, "a 0.5 s timeout ends a 10 s command");
});

await check("commands: background, list, stdin, reconnect, kill", async () => {
  const h = await sbx.commands.run("read line; echo got:$line; sleep 30", { background: true, stdin: true });
  assert(h.pid > 0, "pid");
  const procs = await sbx.commands.list();
  assert(procs.some((p) => p.pid === h.pid), "listed");
  await sbx.commands.sendStdin(h.pid, "x\n");
  for (let i = 0; i < 50 && !h.stdout.includes("got:x"); i++) await new Promise((r) => setTimeout(r, 50));
  assert(h.stdout.includes("got:x"), "stdin reached it: " + JSON.stringify(h.stdout));
  await h.disconnect();
  const again = await sbx.commands.connect(h.pid);
  assert(again.pid === h.pid, "reconnected");
  assert(await sbx.commands.kill(h.pid), "killed");
  let ended = false;
  try { await again.wait(); } catch (e) { ended = e instanceof CommandExitError; }
  assert(ended, "wait ends after the kill");
  assert(!(await sbx.commands.kill(999999)), "killing an unknown pid is false");
});

await check("lifecycle: connect by id, setTimeout, getInfo, list, kill", async () => {
  const same = await Sandbox.connect(sbx.sandboxId, conn);
  assert((await same.commands.run("echo again")).stdout === "again\n", "a reattached sandbox runs commands");
  await sbx.setTimeout(120000);
  const info = await sbx.getInfo();
  assert(info.sandboxId === sbx.sandboxId && info.metadata.suite === "peer", "getInfo " + JSON.stringify(info));
  const paginator = Sandbox.list(conn);
  const items = await paginator.nextItems();
  assert(items.some((s) => s.sandboxId === sbx.sandboxId), "listed");
  await sbx.kill();
  assert(!(await Sandbox.kill(sbx.sandboxId, conn)), "killing it again is false");
});

console.log(failed ? `${failed} failed` : "all passed");
process.exit(failed ? 1 : 0);
