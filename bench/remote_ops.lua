-- RemoteSandbox rows of SPEC §10 / the RemoteSandbox issue: round trips
-- against E2B's official SDK doing the same calls, over loopback to the
-- test peer (spec/js/e2b/peer.mjs): a 1 KiB write, a 1 KiB read, a command
-- (`bash -l -c true`: what the SDK's commands.run("true") starts). Two of
-- ours: the C protocol layer alone (bench/remote_rt.c) and sandbox.remote{}
-- itself (front door, policy, per-component resolution, atomic replace,
-- the runner's thread). The sides alternate in each round; a row prints the
-- median of the rounds' ratios (ours ÷ SDK, below 1 is faster). The peer's
-- own cost is in every side alike.
--   lua5.4 bench/remote_ops.lua   (make bench runs it)
local lib = dofile("bench/lib.lua")
package.path = "./spec/?.lua;" .. package.path
local peer_lib = require "support.e2b_peer"
local json = require "sandbox.json"
local sandbox = require "sandbox"

local ROUNDS, sh, median, now = lib.ROUNDS, lib.sh, lib.median, lib.now
local N = tonumber(os.getenv("BENCH_REMOTE_CALLS")) or 100
local BIN = (os.getenv("BENCH_BUILD") or "build/bench") .. "/remote_rt"
local KEY = "bench-remote-key"

local peer = peer_lib.start(KEY)
local sbx = peer_lib.create(peer, KEY, 600)

-- sandbox.remote{} reattached to the same sandbox: seconds per call.
local function backend()
  local sb = assert(sandbox.remote { api_url = peer.api, api_key = KEY, envd_url = peer.envd,
                                     sandbox_id = sbx.sandboxID, keep = true })
  local data, out = ("x"):rep(1024), {}
  local function time(k, f)
    local t0 = now()
    for _ = 1, N do f() end
    out[k] = (now() - t0) / N
  end
  time("write", function() assert(sb:write_file("bench-sb.txt", data)) end)
  time("read", function() assert(#assert(sb:read_file("bench-sb.txt")) == 1024) end)
  time("exec", function() assert(assert(sb:exec("bash", { "-l", "-c", "true" })).exit_code == 0) end)
  sb:dispose()
  return out
end

local KINDS = { "write", "read", "exec" }
local ratios = { client = {}, backend = {} }
for _, side in pairs(ratios) do for _, k in ipairs(KINDS) do side[k] = {} end end
local last = {}
for _ = 1, ROUNDS do
  local client = json.decode(sh(("%s %s %s %s %d"):format(BIN, peer.envd, sbx.envdAccessToken, sbx.sandboxID, N)))
  local sdk = json.decode(sh(("NPM_DIR=%s node bench/remote_sdk.mjs %s %s %s %s %d"):format(peer_lib.NPM, peer.api,
    peer.envd, KEY, sbx.sandboxID, N)))
  local be = backend()
  assert(client and sdk, "a side failed")
  for _, k in ipairs(KINDS) do
    table.insert(ratios.client[k], client[k] / sdk[k])
    table.insert(ratios.backend[k], be[k] / sdk[k])
  end
  last = { client = client, sdk = sdk, backend = be }
end
peer.stop()
print(("remote round trips over loopback to the test peer, %d calls x %d rounds (ratio: ours / E2B SDK)"):format(N, ROUNDS))
lib.target("remote command (sandbox.remote exec) ÷ E2B SDK", median(ratios.backend.exec), "time", 1.0)
for _, k in ipairs(KINDS) do
  print(("  %-6s E2B SDK %7.3f ms | C client %7.3f ms %.2fx | sandbox.remote %7.3f ms %.2fx"):format(k,
    last.sdk[k] * 1e3, last.client[k] * 1e3, median(ratios.client[k]), last.backend[k] * 1e3,
    median(ratios.backend[k])))
end

-- grep over a tree of 300 files on the engine: the walk is one ListDir
-- either way; the files are then fetched in one tar run in the sandbox
-- (remote/fs_fetch.c), or read one by one where it has no tar (the peer's
-- "no-tar" template, which needs root: the row is left out otherwise).
-- Measured on loopback and with the peer delaying every request by 10 ms,
-- as a far engine's round trip would.
local FILES = 300
local function grep_rows(latency)
  local p = peer_lib.start(KEY, { latency = latency })
  local function sandbox_on(template)
    local sb = assert(sandbox.remote { api_url = p.api, api_key = KEY, envd_url = p.envd, template = template,
                                       allow_shell = true })
    assert(sb:exec_shell(("mkdir -p t && for i in $(seq %d); do seq 1 50 | sed \"s/^/f$i /\" > t/f$i.txt; done"):format(FILES)))
    return sb
  end
  local batch, single = sandbox_on("base"), sh("id -u") == "0\n" and sandbox_on("no-tar") or nil
  local function once(sb)
    local t0 = now()
    local hits = assert(sb:grep("f7 4", { path = "t", mode = "count" }))
    assert(#hits > 0)
    return now() - t0
  end
  local tb, ts, ratio = {}, {}, {}
  for _ = 1, ROUNDS do
    tb[#tb + 1] = once(batch)
    if single then
      ts[#ts + 1] = once(single)
      ratio[#ratio + 1] = tb[#tb] / ts[#ts]
    end
  end
  batch:dispose()
  if single then single:dispose() end
  p.stop()
  if single then
    print(("  grep %d files, %2d ms a request: one tar %8.1f ms | a read per file %8.1f ms | %.3fx"):format(FILES,
      latency, median(tb) * 1e3, median(ts) * 1e3, median(ratio)))
  else
    print(("  grep %d files, %2d ms a request: one tar %8.1f ms (a read per file: needs root)"):format(FILES,
      latency, median(tb) * 1e3))
  end
end
print("remote grep: the files fetched in one tar against a read per file (ratio: tar / per file)")
grep_rows(0)
grep_rows(10)
