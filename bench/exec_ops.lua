-- exec workloads (SPEC §10, perf.md W3) from Lua.
--   lua5.4 bench/exec_ops.lua spawn <n> [heap-MB] [unconfined]  sb:exec("/bin/true")
--   lua5.4 bench/exec_ops.lua os-execute <n> [heap-MB]        os.execute("/bin/true")
--   lua5.4 bench/exec_ops.lua pipe <bytes>                    stdout throughput
-- Prints "RESULT <impl> <phase> <ops> <seconds> 1".
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"
local clock = require("sandbox.core").clock

local mode, n, heap = arg[1], tonumber(arg[2]), tonumber(arg[3]) or 0
local keep = {}
if heap > 0 then -- a host with a big heap: heap-MB of live Lua strings
  for i = 1, heap do keep[i] = string.rep(string.char(i % 256), 1024 * 1024 - 64) .. i end
end
local root = os.getenv("SCRATCH") or "/dev/shm"
os.execute("mkdir -p " .. root .. "/bench-exec")
local suffix = heap > 0 and "-heap" or ""

if mode == "spawn" then
  local unconfined = arg[4] == "unconfined"
  local opts = { base_dir = root .. "/bench-exec", confine = not unconfined, allow_outbound = unconfined }
  local sb = assert(sandbox.container(opts))
  assert(sb:exec("/bin/true"))
  local t = clock()
  for _ = 1, n do sb:exec("/bin/true") end
  print(("RESULT lua-sandbox-exec-%s%s spawn %d %.6f 1"):format(
    unconfined and "unconfined" or "confined", suffix, n, clock() - t))
  sb:dispose()
elseif mode == "os-execute" then
  local t = clock()
  for _ = 1, n do os.execute("/bin/true") end
  print(("RESULT lua-os-execute%s spawn %d %.6f 1"):format(suffix, n, clock() - t))
elseif mode == "pipe" then
  local sb = assert(sandbox.container { base_dir = root .. "/bench-exec", max_output_bytes = "1MB" })
  local t = clock()
  local r = assert(sb:exec("head", { "-c", tostring(n), "/dev/zero" }, { timeout = 120 }))
  local dt = clock() - t
  assert(r.dropped_bytes + #r.stdout >= n)
  print(("RESULT lua-sandbox-exec pipe %d %.6f 1"):format(n, dt))
  sb:dispose()
end
