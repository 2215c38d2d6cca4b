// The same round trips as bench/remote_rt.c through E2B's official SDK
// (npm "e2b"), for bench/remote_ops.lua: N writes, N reads of a 1 KiB file,
// N commands (`true`); prints {"read":s,"write":s,"exec":s} per call.
//   node bench/remote_sdk.mjs API_URL ENVD_URL KEY SANDBOX_ID N
import { createRequire } from "node:module";
import { resolve } from "node:path";

const require = createRequire(resolve(process.env.NPM_DIR || "build/npm") + "/");
const { Sandbox } = require("e2b");

const [apiUrl, sandboxUrl, apiKey, id, count] = process.argv.slice(2);
const n = Number(count);
const sbx = await Sandbox.connect(id, { apiKey, apiUrl, sandboxUrl });
const data = "x".repeat(1024);
const time = async (f) => {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await f();
  return Number(process.hrtime.bigint() - t0) / 1e9 / n;
};
const write = await time(() => sbx.files.write("/home/user/bench-sdk.txt", data));
const read = await time(async () => {
  if ((await sbx.files.read("/home/user/bench-sdk.txt")).length !== 1024) throw new Error("short read");
});
const exec = await time(async () => {
  if ((await sbx.commands.run("true")).exitCode !== 0) throw new Error("exit");
});
console.log(JSON.stringify({ read, write, exec }));
