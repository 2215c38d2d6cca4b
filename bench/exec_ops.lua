-- exec workloads (SPEC §10, perf.md W3) from Lua.
--   lua5.4 bench/exec_ops.lua spawn <n> [heap-MB] [unconfined|deny-name|deny-tree]  sb:exec("/bin/true")
--     (deny-name: rules = {deny = {".env"}}; deny-tree: {deny = {"**/*.pem"}} over
--     10 000 files in 100 directories: the view re-checked before each command)
--   lua5.4 bench/exec_ops.lua os-execute <n> [heap-MB]        os.execute("/bin/true")
--   lua5.4 bench/exec_ops.lua pipe <bytes>                    stdout throughput
--   lua5.4 bench/exec_ops.lua first <n>      sandbox.container{} (confined) + exec("true") + dispose
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
  local variant = arg[4] or "confined"
  local unconfined = variant == "unconfined"
  local opts = { base_dir = root .. "/bench-exec", confine = not unconfined, allow_outbound = unconfined }
  if variant == "deny-name" then
    opts.rules = { deny = { ".env" } }
  elseif variant == "deny-tree" then
    opts.base_dir = root .. "/bench-exec-tree"
    if not io.open(opts.base_dir .. "/d99/f99.txt") then
      os.execute(("mkdir -p %s && cd %s && for d in $(seq 0 99); do mkdir -p d$d; for f in $(seq 0 99); do "
        .. ": > d$d/f$f.txt; done; done"):format(opts.base_dir, opts.base_dir))
    end
    opts.rules = { deny = { "**/*.pem" } }
  end
  local sb = assert(sandbox.container(opts))
  assert(sb:exec("/bin/true"))
  local t = clock()
  for _ = 1, n do assert(sb:exec("/bin/true")) end
  print(("RESULT lua-sandbox-exec-%s%s spawn %d %.6f 1"):format(variant, suffix, n, clock() - t))
  sb:dispose()
elseif mode == "first" then -- time to first command: a new sandbox each time
  local opts = { base_dir = root .. "/bench-exec" }
  assert(sandbox.container(opts)):dispose() -- the module's first use out of the count
  local t = clock()
  for _ = 1, n do
    local sb = assert(sandbox.container(opts))
    assert(sb:exec("true"))
    sb:dispose()
  end
  print(("RESULT lua-sandbox-first%s first %d %.6f 1"):format(suffix, n, clock() - t))
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
