-- RemoteSandbox rows of SPEC §10 / the RemoteSandbox issue: round trips of
-- the remote client (C, csrc/remote/) against E2B's official SDK doing the
-- same calls, over loopback to the test peer (spec/js/e2b/peer.mjs): a
-- 1 KiB write, a 1 KiB read, a command (`true`). The two sides alternate in
-- each round; a row prints the median of the rounds' ratios (ours ÷ SDK,
-- below 1 is faster). The peer's own cost is in both sides alike.
--   lua5.4 bench/remote_ops.lua   (make bench runs it)
local lib = dofile("bench/lib.lua")
package.path = "./spec/?.lua;" .. package.path
local peer_lib = require "support.e2b_peer"
local json = require "sandbox.json"

local ROUNDS, sh, median = lib.ROUNDS, lib.sh, lib.median
local N = tonumber(os.getenv("BENCH_REMOTE_CALLS")) or 100
local BIN = (os.getenv("BENCH_BUILD") or "build/bench") .. "/remote_rt"
local KEY = "bench-remote-key"

local peer = peer_lib.start(KEY)
local sbx = peer_lib.create(peer, KEY, 600)
local ratios = { read = {}, write = {}, exec = {} }
local last = {}
for _ = 1, ROUNDS do
  local ours = json.decode(sh(("%s %s %s %s %d"):format(BIN, peer.envd, sbx.envdAccessToken, sbx.sandboxID, N)))
  local sdk = json.decode(sh(("NPM_DIR=%s node bench/remote_sdk.mjs %s %s %s %s %d"):format(peer_lib.NPM, peer.api,
    peer.envd, KEY, sbx.sandboxID, N)))
  assert(ours and sdk, "a side failed")
  for k in pairs(ratios) do table.insert(ratios[k], ours[k] / sdk[k]) end
  last = { ours = ours, sdk = sdk }
end
peer.stop()
print(("remote round trips over loopback to the test peer, %d calls x %d rounds"):format(N, ROUNDS))
for _, k in ipairs { "write", "read", "exec" } do
  print(("  %-6s ours %7.3f ms  E2B SDK %7.3f ms  ratio %.2fx"):format(k, last.ours[k] * 1e3, last.sdk[k] * 1e3,
    median(ratios[k])))
end
