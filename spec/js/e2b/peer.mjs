// A test peer for the RemoteSandbox: E2B's REST control plane and envd's
// Connect services (the reference Connect server, @connectrpc/connect-node)
// over a temporary directory per sandbox, with real child processes. It
// counts only for what E2B's official SDK accepts (spec/js/e2b/sdk_check.mjs
// runs the SDK's own calls against it first).
//   node peer.mjs [--key KEY] [--parent PID] [--envd-version 0.5.1|0.5.6|0.6.13] [--own-tmpdir]
// prints {"api": URL, "envd": URL} once listening; exits on SIGTERM, or
// when the process PID is gone.
import http from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { isUtf8 } from "node:buffer";
import { resolve } from "node:path";

// the test peers' packages live in build/npm (scripts/npm-deps.sh)
const require = createRequire(resolve(process.env.NPM_DIR || "build/npm") + "/");
const { connectNodeAdapter } = require("@connectrpc/connect-node");
const { ConnectError, Code } = require("@connectrpc/connect");
const { Timestamp } = require("@bufbuild/protobuf");
import { Process, Filesystem, FILE, DIRECTORY } from "./schema.mjs";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const KEY = opt("--key", "test-key");
const OWN_TMPDIR = args.includes("--own-tmpdir"); // TMPDIR is the peer's alone: removed as it exits
const HOST = opt("--host", "127.0.0.1"); // another address when the peer runs in its own network namespace
const LATENCY = Number(opt("--latency", 0)); // ms every request waits, as across a far engine's link
const PAGE_SIZE = Number(opt("--page-size", 100)); // a listing's largest page (the API's is 100)
const later = (f) => (req, res) => (LATENCY > 0 ? setTimeout(() => f(req, res), LATENCY) : f(req, res));
const HOME = "/home/user";
// the envd it stands for: what older ones lack is lacking here too (atLeast)
const ENVD_VERSION = opt("--envd-version", "0.6.13");
const atLeast = (v) => {
  const [a, b] = [ENVD_VERSION, v].map((x) => x.split(".").map(Number));
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return true;
};

const sandboxes = new Map(); // id -> sandbox

// ---- paths: the sandbox's absolute paths inside its root -------------------
function hostPath(sb, p) {
  if (typeof p !== "string" || p === "") p = HOME;
  const abs = path.posix.resolve(HOME, p); // relative paths are the user's home's
  const host = path.join(sb.root, abs);
  if (host !== sb.root && !host.startsWith(sb.root + path.sep)) throw new ConnectError("path escapes", Code.InvalidArgument);
  return { abs, host };
}

// Go's os.FileMode.String() (io/fs/fs.go): a letter for each type bit set,
// in the order "dalTLDpSugct?", or "-"; then rwx for the nine permissions
function goMode(st) {
  const m = st.mode;
  let t = (st.isDirectory() ? "d" : "") + (st.isSymbolicLink() ? "L" : "") + (st.isFIFO() ? "p" : "") +
    (st.isSocket() ? "S" : "") + (m & 0o4000 ? "u" : "") + (m & 0o2000 ? "g" : "") +
    (st.isCharacterDevice() ? "c" : "") + (m & 0o1000 ? "t" : "");
  if (!t) t = "-";
  for (let i = 8; i >= 0; i--) t += m & (1 << i) ? "rwx"[(8 - i) % 3] : "-";
  return t;
}
const goType = (st) => (st.isDirectory() ? DIRECTORY : st.isFile() ? FILE : 0); // 0: FILE_TYPE_UNSPECIFIED

// A host path as the sandbox names it (its root cut off); outside the root, as it is.
function sandboxPath(sb, host) {
  const r = sb.realRoot ??= fs.realpathSync(sb.root);
  return host === r ? "/" : host.startsWith(r + "/") ? host.slice(r.length) : host;
}

// As envd (infra shared/pkg/filesystem/entry.go, GetEntryInfo; envd's
// services/filesystem/utils.go, entryInfo): Lstat, and for a symbolic link
// the TARGET's type and permission bits, symlinkTarget = EvalSymlinks(path)
// (the fully resolved absolute path, never the link's text), and no
// FILE_TYPE_SYMLINK ever; a dangling link has no type (UNSPECIFIED, left
// out of the JSON), mode 0 and, from 0.5.4 (926ced602), its own path as
// symlinkTarget (before: none; then its mode is the link's, 0777). size and
// permissions ("Lrwxrwxrwx", Go's FileMode.String()) are the Lstat's.
// Mode is Perm(): the nine bits.
function entryInfo(sb, abs, host) {
  const st = fs.lstatSync(host);
  const e = {
    name: path.posix.basename(abs) || "/", path: abs, size: BigInt(st.size), permissions: goMode(st),
    owner: "user", group: "user", modifiedTime: Timestamp.fromDate(st.mtime),
  };
  let type = goType(st), mode = st.mode & 0o777;
  if (st.isSymbolicLink()) {
    let real = null;
    try { real = fs.realpathSync(host); } catch { /* dangling or a loop */ }
    if (real !== null) e.symlinkTarget = sandboxPath(sb, real);
    else if (atLeast("0.5.4")) e.symlinkTarget = abs;
    if (e.symlinkTarget !== undefined) {
      try { const t = fs.statSync(host); [type, mode] = [goType(t), t.mode & 0o777]; } catch { [type, mode] = [0, 0]; }
    } else {
      type = 0;
    }
  }
  if (type) e.type = type;
  if (mode) e.mode = mode;
  return e;
}

// envd's JSON codec (protojson) refuses a string that is not UTF-8: the
// whole reply fails (connect-go: "internal", the marshal error's text)
function utf8Name(hostDir, name) {
  if (Buffer.from(name, "utf8").includes(Buffer.from("\uFFFD", "utf8"))) {
    const raw = fs.readdirSync(hostDir, { encoding: "buffer" }).find((b) => b.toString() === name);
    if (raw && !raw.equals(Buffer.from(raw.toString(), "utf8")))
      throw new ConnectError("proto: field filesystem.EntryInfo.name contains invalid UTF-8", Code.Internal);
  }
  return name;
}

function fsError(err) {
  if (err instanceof ConnectError) return err;
  const map = { ENOENT: Code.NotFound, EEXIST: Code.AlreadyExists, ENOTDIR: Code.InvalidArgument, EISDIR: Code.InvalidArgument,
                ENOTEMPTY: Code.FailedPrecondition, EACCES: Code.PermissionDenied, ENOSPC: Code.ResourceExhausted };
  return new ConnectError(err.message, map[err.code] ?? Code.Internal);
}

// ---- who is asking --------------------------------------------------------
function sandboxOf(headers) {
  const id = headers.get ? headers.get("e2b-sandbox-id") : headers["e2b-sandbox-id"];
  const sb = sandboxes.get(id);
  if (!sb) throw new ConnectError("sandbox not found", Code.NotFound);
  // as envd (envd/internal/api/auth.go, WithAuthorization): with no access
  // token set every request passes; with one, a request must carry it
  const token = headers.get ? headers.get("x-access-token") : headers["x-access-token"];
  if (sb.token && token !== sb.token) throw new ConnectError("invalid access token", Code.Unauthenticated);
  return sb;
}

// ---- processes ------------------------------------------------------------
let nextPid = 1000;

function startProcess(sb, req, deadlineMs) {
  const cfg = req.process ?? {};
  const cwd = hostPath(sb, cfg.cwd ?? HOME).host;
  // E2B_PEER_SANDBOX marks what runs in the sandbox, so that killing the
  // sandbox takes all of it, as a microVM's end does
  // as envd (process/handler/handler.go, New): its own PATH, HOME, then the
  // sandbox's defaults (the template's, the create call's envVars), then the
  // request's envs; the last value of a name wins
  // TMPDIR is the peer's, not envd's (which sets none): a microVM's /tmp is
  // its own and ends with it; the peer's processes share the host's, so what
  // a sandbox leaves in its temporary directory (the helper a dead host could
  // not remove) goes with its root here
  const env = { PATH: process.env.PATH, HOME: path.join(sb.root, HOME), TMPDIR: path.join(sb.root, "tmp"),
                ...(TEMPLATE_ENVS[sb.template] ?? {}),
                ...sb.envs, ...(cfg.envs ?? {}), E2B_PEER_SANDBOX: sb.id };
  // templates that stand for one without a tool (FAKES): the sandbox's
  // processes see a stand-in over it (a mount; needs root)
  let [cmd, cmdArgs] = [cfg.cmd, cfg.args ?? []];
  const fake = FAKES[sb.template];
  if (fake) {
    const setup = fake.noexec ? `mount -t tmpfs -o noexec,mode=1777 tmpfs "$0"` : `mount --bind "$0" ${fake.bin}`;
    [cmd, cmdArgs] = ["unshare", ["-m", "--propagation", "private", "sh", "-c", `${setup} && exec "$@"`,
                                  fake.noexec ? NOEXEC_TMP : fakeBin(sb.template), cmd, ...cmdArgs]];
  }
  // as envd (handler.go, New): the program through /bin/sh -c '... exec "${@}"' -- cmd args,
  // so a program not found is that shell's exit 127 ("exec: X: not found"), not a failed start
  if (!fake) [cmd, cmdArgs] = ["/bin/sh", ["-c", 'exec "${@}"', "--", cmd, ...cmdArgs]];
  // as envd: no process group of its own (envd sets none)
  const child = spawn(cmd, cmdArgs, { cwd, env, stdio: [req.stdin === false ? "ignore" : "pipe", "pipe", "pipe"] });
  const p = { pid: nextPid++, tag: req.tag, config: cfg, child, events: [], waiters: new Set(), end: null };
  sb.procs.set(p.pid, p);
  const push = (ev) => {
    p.events.push(ev);
    for (const w of p.waiters) w();
  };
  // as envd: the start event once the program runs; a program that cannot
  // be started fails the Start call itself ("error starting process: ...")
  p.spawned = new Promise((resolve, reject) => {
    child.once("spawn", () => { push({ case: "start", value: { pid: p.pid } }); resolve(); });
    child.once("error", (err) => {
      if (p.events.length) return; // after the start: its end says so
      sb.procs.delete(p.pid);
      p.end = { failed: true };
      reject(new ConnectError(`error starting process: ${err.message}`, Code.Internal));
    });
  });
  // as envd: after a SIGTERM or SIGKILL through SendSignal, output is no longer forwarded
  const out = (k) => (b) => {
    if (p.outCancelled) return;
    push({ case: "data", value: { output: { case: k, value: new Uint8Array(b) } } });
    throttle(p);
  };
  child.stdout.on("data", out("stdout"));
  child.stderr.on("data", out("stderr"));
  let timer = null;
  if (deadlineMs > 0) timer = setTimeout(() => kill(p, "SIGKILL"), deadlineMs); // the deadline is the process's lifetime
  // as envd (envd/internal/services/process/handler/handler.go, Handler.Wait):
  // the end event is cmd.Wait()'s outcome: ExitCode() (-1 after a signal),
  // Exited(), ProcessState.String() ("exit status 3", "signal: terminated",
  // Go's words for the signal), and `error` = Wait's error, which is that
  // same text for ANY non-zero exit or signal (an *exec.ExitError), absent
  // only for exit 0. It never means "did not start": that fails Start.
  const finish = (code, signal, error) => {
    if (p.end) return;
    if (timer) clearTimeout(timer);
    const status = signal ? `signal: ${GO_SIGNAL[signal] || signal}` : `exit status ${code}`;
    p.end = { exitCode: signal ? -1 : code ?? -1, exited: !signal && code !== null && code !== undefined, status,
              error: error ?? (signal || code !== 0 ? status : undefined) };
    push({ case: "end", value: p.end });
    setTimeout(() => sb.procs.delete(p.pid), 30000).unref(); // a late Connect still finds the result
  };
  child.on("error", (err) => finish(-1, null, err.message));
  child.on("close", (code, signal) => finish(code, signal));
  return p;
}

// Go's names of the signals (syscall.Signal.String(), zerrors_linux_amd64.go),
// which ProcessState.String() prints after "signal: "
const GO_SIGNAL = {
  SIGHUP: "hangup", SIGINT: "interrupt", SIGQUIT: "quit", SIGILL: "illegal instruction",
  SIGTRAP: "trace/breakpoint trap", SIGABRT: "aborted", SIGBUS: "bus error", SIGFPE: "floating point exception",
  SIGKILL: "killed", SIGUSR1: "user defined signal 1", SIGSEGV: "segmentation fault", SIGUSR2: "user defined signal 2",
  SIGPIPE: "broken pipe", SIGALRM: "alarm clock", SIGTERM: "terminated", SIGXCPU: "CPU time limit exceeded",
  SIGXFSZ: "file size limit exceeded", SIGVTALRM: "virtual timer expired", SIGPROF: "profiling timer expired",
  SIGSYS: "bad system call",
};

// templates with an environment of their own (a tool on the template's PATH, as nvm or conda put one)
const TEMPLATE_ENVS = {
  "custom-path": { PATH: `/opt/peer-tool/bin:${process.env.PATH}`, LANG: "en_US.UTF-8" },
};

const FAKES = {
  "no-grep-z": { bin: "/usr/bin/grep", say: "grep: invalid option -- z", exit: 2 }, // a grep without -z
  "no-tar": { bin: "/usr/bin/tar", say: "sh: 1: tar: not found", exit: 127 },       // no tar at all
  "noexec-tmp": { noexec: true }, // a hardened template: its TMPDIR takes no programs (a noexec tmpfs)
};
const fakeDir = fs.mkdtempSync(path.join(os.tmpdir(), "e2b-peer-fakes-"));
const NOEXEC_TMP = path.join(fakeDir, "noexec-tmp.d");
fs.mkdirSync(NOEXEC_TMP);
TEMPLATE_ENVS["noexec-tmp"] = { TMPDIR: NOEXEC_TMP };
function fakeBin(template) {
  const f = path.join(fakeDir, template);
  if (!fs.existsSync(f)) {
    const { say, exit } = FAKES[template];
    fs.writeFileSync(f, `#!/bin/sh\necho '${say}' >&2\nexit ${exit}\n`, { mode: 0o755 });
  }
  return f;
}

// as envd's SendSignal and its deadline: the process itself, nothing it started
function kill(p, sig) {
  try { p.child.kill(sig); } catch { /* gone */ }
}

// Everything that runs in the sandbox (by its mark), until nothing is left.
function killAll(sb) {
  const mark = Buffer.from(`E2B_PEER_SANDBOX=${sb.id}\0`);
  for (let pass = 0; pass < 20; pass++) {
    let found = false;
    for (const d of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
      let env;
      try { env = fs.readFileSync(`/proc/${d}/environ`); } catch { continue; }
      const at = env.indexOf(mark);
      if (at < 0 || (at > 0 && env[at - 1] !== 0)) continue;
      try { process.kill(Number(d), "SIGKILL"); found = true; } catch { /* gone */ }
    }
    if (!found) return;
  }
}

function findProcess(sb, sel) {
  const c = sel?.selector;
  for (const p of sb.procs.values()) {
    if ((c?.case === "pid" && p.pid === c.value) || (c?.case === "tag" && p.tag === c.value)) return p;
  }
  throw new ConnectError("process not found", Code.NotFound);
}

// As envd: its output channel holds 64 events; past that its pipe reader,
// and so the process, wait for the stream's reader.
const BEHIND_MAX = 64;
function throttle(p) {
  const behind = p.following ? p.events.length - p.sent : 0;
  const pause = behind > BEHIND_MAX;
  if (pause === !!p.paused) return;
  p.paused = pause;
  for (const s of [p.child.stdout, p.child.stderr]) pause ? s.pause() : s.resume();
}

// Events of p from index `from` on, then keepalives while waiting, until the end.
async function* follow(p, from, ctx, wrap) {
  const ping = Number(ctx.requestHeader.get("keepalive-ping-interval") || 0) * 1000;
  let i = from;
  p.following = true;
  p.sent = i;
  try {
    yield* events();
  } finally {
    p.following = false; // nobody follows: nothing to wait for
    throttle(p);
  }
  async function* events() {
  for (;;) {
    while (i < p.events.length) {
      const ev = p.events[i++];
      yield wrap({ event: ev });
      p.sent = i;
      throttle(p);
      if (ev.case === "end") return;
    }
    if (ctx.signal.aborted) return; // the stream closed; the process goes on
    await new Promise((resolve) => {
      const done = () => { p.waiters.delete(done); clearTimeout(t); resolve(); };
      const t = ping > 0 ? setTimeout(() => { p.events.length === i && (p._ping = true); done(); }, ping) : null;
      p.waiters.add(done);
      ctx.signal.addEventListener("abort", done, { once: true });
    });
    if (p._ping && i === p.events.length) {
      p._ping = false;
      yield wrap({ event: { case: "keepalive", value: {} } });
    }
  }
  }
}

const processService = {
  async *start(req, ctx) {
    const sb = sandboxOf(ctx.requestHeader);
    const deadline = Number(ctx.requestHeader.get("connect-timeout-ms") || 0);
    const p = startProcess(sb, req, deadline);
    await p.spawned;
    yield* follow(p, 0, ctx, (e) => ({ event: e }));
  },
  async *connect(req, ctx) {
    const sb = sandboxOf(ctx.requestHeader);
    const p = findProcess(sb, req.process);
    // a reconnect sees the start and whatever comes next, not the past output again
    yield { event: { event: { case: "start", value: { pid: p.pid } } } };
    yield* follow(p, p.events.length, ctx, (e) => ({ event: e }));
  },
  list(_req, ctx) {
    const sb = sandboxOf(ctx.requestHeader);
    return { processes: [...sb.procs.values()].filter((p) => !p.end).map((p) => ({ config: p.config, pid: p.pid, tag: p.tag })) };
  },
  sendInput(req, ctx) {
    const p = findProcess(sandboxOf(ctx.requestHeader), req.process);
    if (!p.child.stdin) throw new ConnectError("stdin is not open", Code.FailedPrecondition);
    p.child.stdin.write(Buffer.from(req.input?.input?.value ?? []));
    return {};
  },
  closeStdin(req, ctx) {
    // CloseStdin arrived in envd 0.5.2 (infra 01da054ac): before, no such method
    if (!atLeast("0.5.2")) throw new ConnectError("procedure not found", Code.Unimplemented);
    const p = findProcess(sandboxOf(ctx.requestHeader), req.process);
    p.child.stdin?.end();
    return {};
  },
  sendSignal(req, ctx) {
    const p = findProcess(sandboxOf(ctx.requestHeader), req.process);
    p.outCancelled = true;
    kill(p, req.signal === 9 ? "SIGKILL" : "SIGTERM");
    return {};
  },
  update() { return {}; },
};

// ---- filesystem -----------------------------------------------------------
const filesystemService = {
  stat(req, ctx) {
    const sb = sandboxOf(ctx.requestHeader);
    const { abs, host } = hostPath(sb, req.path);
    try { return { entry: entryInfo(sb, abs, host) }; } catch (e) { throw fsError(e); }
  },
  makeDir(req, ctx) {
    const sb = sandboxOf(ctx.requestHeader);
    const { abs, host } = hostPath(sb, req.path);
    if (fs.existsSync(host)) throw new ConnectError("directory already exists", Code.AlreadyExists);
    try { fs.mkdirSync(host, { recursive: true }); return { entry: entryInfo(sb, abs, host) }; } catch (e) { throw fsError(e); }
  },
  move(req, ctx) {
    const sb = sandboxOf(ctx.requestHeader);
    const from = hostPath(sb, req.source), to = hostPath(sb, req.destination);
    try { fs.renameSync(from.host, to.host); return { entry: entryInfo(sb, to.abs, to.host) }; } catch (e) { throw fsError(e); }
  },
  // as envd (services/filesystem/dir.go, ListDir): the requested path's
  // links followed (missing: not_found), it must be a directory
  // (invalid_argument), then filepath.WalkDir below it, which never
  // descends a link; entries named under the path as requested
  listDir(req, ctx) {
    const sb = sandboxOf(ctx.requestHeader);
    const { abs, host } = hostPath(sb, req.path);
    const depth = req.depth || 1;
    let real;
    try { real = fs.realpathSync(host); } catch (e) {
      throw e.code === "ENOENT" ? new ConnectError(`path not found: ${e.message}`, Code.NotFound) : fsError(e);
    }
    if (!fs.statSync(real).isDirectory()) throw new ConnectError(`path is not a directory: ${abs}`, Code.InvalidArgument);
    const out = [];
    const walk = (a, h, d) => {
      for (const name of fs.readdirSync(h).sort()) {
        const ca = path.posix.join(a, utf8Name(h, name)), ch = path.join(h, name);
        out.push(entryInfo(sb, ca, ch));
        if (d < depth && fs.lstatSync(ch).isDirectory()) walk(ca, ch, d + 1);
      }
    };
    try { walk(abs, real, 1); return { entries: out }; } catch (e) { throw fsError(e); }
  },
  remove(req, ctx) {
    const sb = sandboxOf(ctx.requestHeader);
    const { host } = hostPath(sb, req.path);
    // as envd (services/filesystem/remove.go): os.RemoveAll, so a missing path is no error
    try { fs.rmSync(host, { recursive: true, force: true }); } catch (e) { throw fsError(e); }
    return {};
  },
};

// ---- HTTP: /files, /health, the Connect routes -----------------------------
const connect = connectNodeAdapter({
  routes(router) {
    router.service(Process, processService);
    router.service(Filesystem, filesystemService);
  },
});

const EDGE = {
  409: (sb) => ({ sandboxId: sb.id, message: "The sandbox is still transitioning. Try again in a moment.", code: 409 }),
  429: (sb) => ({ sandboxId: sb.id, message: "The sandbox has too many concurrent incoming connections (limit: 100)",
                  code: 429, connectionLimit: 100 }),
  502: (sb) => ({ sandboxId: sb.id, message: "The sandbox was not found", code: 502 }),
};

function send(res, status, body, type = "application/json") {
  res.writeHead(status, { "content-type": type });
  res.end(typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body));
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on("data", (c) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts)));
    req.on("error", reject);
  });
}

// The one file of a multipart/form-data body (field "file").
function multipartFile(body, type) {
  const b = /boundary=(?:"([^"]+)"|([^;]+))/.exec(type);
  if (!b) return null;
  const sep = Buffer.from("--" + (b[1] || b[2]));
  let at = body.indexOf(sep);
  while (at >= 0) {
    const next = body.indexOf(sep, at + sep.length);
    if (next < 0) break;
    const part = body.subarray(at + sep.length + 2, next - 2); // CRLF after the boundary, before the next
    const head = part.indexOf("\r\n\r\n");
    if (head >= 0 && /name="file"/.test(part.subarray(0, head).toString())) return part.subarray(head + 4);
    at = next;
  }
  return null;
}

// A query parameter's bytes, percent-decoded, or null.
function rawParam(reqUrl, name) {
  const q = reqUrl.split("?")[1] ?? "";
  for (const kv of q.split("&")) {
    const [k, v = ""] = kv.split("=");
    if (k !== name) continue;
    const out = [];
    for (let i = 0; i < v.length; i++) {
      if (v[i] === "%" && /^[0-9a-fA-F]{2}$/.test(v.slice(i + 1, i + 3))) { out.push(parseInt(v.slice(i + 1, i + 3), 16)); i += 2; }
      else out.push(v[i] === "+" ? 0x20 : v.charCodeAt(i) & 0xff);
    }
    return Buffer.from(out);
  }
  return null;
}

// hostPath for a path that is bytes, not UTF-8 (latin1 keeps each byte as one char)
function hostPathBytes(sb, raw) {
  const abs = path.posix.resolve(HOME, raw.toString("latin1"));
  const host = Buffer.concat([Buffer.from(sb.root), Buffer.from(abs, "latin1")]);
  if (!host.toString("latin1").startsWith(sb.root + "/")) throw new ConnectError("path escapes", Code.InvalidArgument);
  return { abs, host };
}

async function files(req, res, url) {
  let sb;
  try {
    sb = sandboxOf(req.headers);
  } catch (e) {
    return send(res, e.code === Code.NotFound ? 502 : 401, { code: e.code === Code.NotFound ? 502 : 401, message: e.rawMessage });
  }
  let p;
  try {
    // Go's url.Query() decodes %XX to bytes, UTF-8 or not (a file named in
    // bytes is read as such); URLSearchParams would put U+FFFD in their place
    const raw = rawParam(req.url, "path");
    p = raw && !isUtf8(raw) && req.method === "GET" ? hostPathBytes(sb, raw) : hostPath(sb, url.searchParams.get("path"));
  } catch (e) { return send(res, 400, { code: 400, message: e.rawMessage }); }
  if (req.method === "GET") {
    try {
      const st = fs.statSync(p.host);
      if (st.isDirectory()) return send(res, 400, { code: 400, message: "path is a directory" });
      return send(res, 200, fs.readFileSync(p.host), "application/octet-stream");
    } catch (e) {
      return send(res, e.code === "ENOENT" ? 404 : 500, { code: e.code === "ENOENT" ? 404 : 500, message: e.message });
    }
  }
  if (req.method === "POST") {
    const body = await readBody(req);
    const type = req.headers["content-type"] || "";
    // as envd (api/upload.go, PostFiles): raw bodies (application/octet-stream)
    // from 0.5.7 (92011c8af); before, every body went to r.MultipartReader()
    if (!type.startsWith("multipart/") && !atLeast("0.5.7"))
      return send(res, 500, { code: 500, message: "error parsing multipart form: request Content-Type isn't multipart/form-data" });
    if (!type.startsWith("multipart/") && !type.startsWith("application/octet-stream"))
      return send(res, 400, { code: 400, message: `unsupported content type: ${type}, expected multipart/form-data or application/octet-stream` });
    const data = type.startsWith("multipart/") ? multipartFile(body, type) : body;
    if (!data) return send(res, 400, { code: 400, message: "no file in the request" });
    try {
      fs.mkdirSync(path.dirname(p.host), { recursive: true });
      fs.writeFileSync(p.host, data);
      return send(res, 200, [{ name: path.posix.basename(p.abs), type: "file", path: p.abs }]);
    } catch (e) {
      return send(res, e.code === "EISDIR" ? 400 : 500, { code: 400, message: e.message });
    }
  }
  return send(res, 405, { code: 405, message: "method not allowed" });
}

const serveEnvd = (req, res) => {
  const url = new URL(req.url, "http://envd");
  const counted = sandboxes.get(req.headers["e2b-sandbox-id"]); // what a test may ask of GET /sandboxes/{id}/calls
  if (counted) counted.calls[url.pathname] = (counted.calls[url.pathname] ?? 0) + 1;
  // as the edge proxy (infra shared/pkg/proxy/template/*.go): its own
  // HTTP status and JSON, not a Connect error, for every call: 409 while a
  // sandbox pauses or resumes (sandbox_still_transitioning.go), 429 past
  // its connection limit (sandbox_too_many_connections.go), 502 for a
  // sandbox it cannot find (sandbox_not_found.go)
  if (counted && Date.now() < (counted.edgeUntil ?? 0)) return send(res, counted.edgeStatus, EDGE[counted.edgeStatus](counted));
  if (url.pathname === "/health") return send(res, 204, "");
  if (url.pathname === "/files") return files(req, res, url).catch((e) => send(res, 500, { code: 500, message: String(e) }));
  return connect(req, res);
};
const envd = http.createServer(later(serveEnvd));
// with a latency, envd also near (no delay) on a port of its own: the same
// sandboxes, for a spec's calls whose round trips are not what it measures
const envdNear = LATENCY > 0 ? http.createServer(serveEnvd) : null;

// ---- the control plane ----------------------------------------------------
function newSandbox(body) {
  const id = "sbx" + randomBytes(6).toString("hex");
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "e2b-peer-"));
  fs.mkdirSync(path.join(root, HOME), { recursive: true });
  fs.mkdirSync(path.join(root, "tmp"));
  fs.chmodSync(path.join(root, "tmp"), 0o1777); // as /tmp
  const sb = {
    // as the API (api/internal/handlers/sandbox_create.go): an envd access
    // token only for `secure: true` (the SDK sends it by default)
    id, root, token: body.secure === true ? randomBytes(16).toString("hex") : undefined,
    template: body.templateID || "base", metadata: body.metadata || {},
    envs: body.envVars || {}, procs: new Map(), started: new Date(), calls: {},
  };
  sb.timeoutAt = Date.now() + (body.timeout ?? 15) * 1000;
  sandboxes.set(id, sb);
  return sb;
}

function destroy(sb) {
  killAll(sb);
  sandboxes.delete(sb.id);
  fs.rmSync(sb.root, { recursive: true, force: true });
}

setInterval(() => { // a sandbox past its timeout is killed, as the engine does
  for (const sb of sandboxes.values()) if (Date.now() > sb.timeoutAt) destroy(sb);
}, 250).unref();

function info(sb) {
  return {
    sandboxID: sb.id, templateID: sb.template, clientID: "peer", envdVersion: ENVD_VERSION, envdAccessToken: sb.token,
    trafficAccessToken: null, domain: null, alias: sb.template, metadata: sb.metadata, startedAt: sb.started.toISOString(),
    endAt: new Date(sb.timeoutAt).toISOString(), state: "running", cpuCount: 2, memoryMB: 512, diskSizeMB: 1024,
  };
}

const api = http.createServer(later(async (req, res) => {
  if (req.headers["x-api-key"] !== KEY) return send(res, 401, { code: 401, message: "Invalid API key" });
  const url = new URL(req.url, "http://api");
  url.pathname = url.pathname.replace(/^\/v2\//, "/"); // E2B's v1 and v2 routes take the same bodies here
  const body = req.method === "POST" ? JSON.parse((await readBody(req)).toString() || "{}") : {};
  const m = /^\/sandboxes\/([^/]+)(\/[a-z]+)?$/.exec(url.pathname);
  const sb = m && sandboxes.get(m[1]);
  if (req.method === "POST" && url.pathname === "/sandboxes") return send(res, 201, info(newSandbox(body)));
  if (req.method === "GET" && url.pathname === "/connections") return send(res, 200, { envd: envdConnections });
  if (req.method === "GET" && (url.pathname === "/v2/sandboxes" || url.pathname === "/sandboxes")) {
    // as the API: pages of `limit` (at most 100; --page-size lowers that, for tests), the next
    // one named by X-Next-Token, none after the last (openapi.yml GET /v2/sandboxes)
    const all = [...sandboxes.values()];
    const size = Math.min(Number(url.searchParams.get("limit") ?? 100) || 100, 100, PAGE_SIZE);
    const from = Number(url.searchParams.get("nextToken") ?? 0) || 0;
    if (from + size < all.length) res.setHeader("X-Next-Token", String(from + size));
    return send(res, 200, all.slice(from, from + size).map(info));
  }
  if (m && !sb) return send(res, 404, { code: 404, message: `sandbox "${m[1]}" not found` });
  if (m && req.method === "GET" && !m[2]) return send(res, 200, info(sb));
  if (m && req.method === "DELETE" && !m[2]) { destroy(sb); return send(res, 204, ""); }
  if (m && req.method === "GET" && m[2] === "/calls") return send(res, 200, sb.calls); // the peer's own, for tests
  if (m && req.method === "POST" && m[2] === "/transition") { // the peer's own, for tests: the edge's 409 (or 429, 502) for ms
    if (!EDGE[body.status ?? 409]) return send(res, 400, { code: 400, message: "status: 409, 429 or 502" });
    sb.edgeStatus = body.status ?? 409;
    sb.edgeUntil = Date.now() + (body.ms ?? 1000);
    return send(res, 204, "");
  }
  if (m && req.method === "POST" && m[2] === "/timeout") { sb.timeoutAt = Date.now() + (body.timeout ?? 15) * 1000; return send(res, 204, ""); }
  if (m && req.method === "POST" && m[2] === "/connect") {
    sb.timeoutAt = Math.max(sb.timeoutAt, Date.now() + (body.timeout ?? 15) * 1000);
    return send(res, 200, info(sb));
  }
  return send(res, 404, { code: 404, message: "not found" });
}));

// envd's server (main.go, idleTimeout): an idle kept-alive connection lives
// 640 s, no read or write timeout; the edge's proxies keep theirs 610-620 s.
// Node's own defaults (5 s idle, 300 s a request) are not envd's.
for (const srv of [envd, api, envdNear].filter(Boolean)) {
  srv.keepAliveTimeout = 640_000;
  srv.requestTimeout = 0;
}
let envdConnections = 0; // TCP connections envd accepted (GET /connections, the peer's own, for tests)
envd.on("connection", () => envdConnections++);
const listen = (srv) => new Promise((resolve) => srv.listen(0, HOST, () => resolve(srv.address().port)));
const [apiPort, envdPort, nearPort] = await Promise.all([listen(api), listen(envd), envdNear && listen(envdNear)]);
process.stdout.write(JSON.stringify({ api: `http://${HOST}:${apiPort}`, envd: `http://${HOST}:${envdPort}`,
  envd_near: nearPort ? `http://${HOST}:${nearPort}` : undefined }) + "\n");
const bye = () => {
  for (const sb of [...sandboxes.values()]) destroy(sb);
  fs.rmSync(fakeDir, { recursive: true, force: true });
  if (OWN_TMPDIR) fs.rmSync(os.tmpdir(), { recursive: true, force: true }); // its launcher made it for the peer alone
  process.exit(0);
};
process.on("SIGTERM", bye);
process.on("SIGINT", bye);
const parent = Number(opt("--parent", 0));
if (parent > 0) {
  setInterval(() => { // the test that started it went away
    try { process.kill(parent, 0); } catch { bye(); }
  }, 500).unref();
}
