-- What the Lua benchmark drivers share: the module from this tree, a shell
-- helper, the monotonic clock, medians.
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath

local M = {}

M.ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 5
M.now = require("sandbox.core").clock -- monotonic seconds

function M.sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

function M.median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

-- Issue 35's rows (SPEC §10): each driver records its measured ratio here
-- (kind "time": ours ÷ theirs, lower is better; "speed": higher is better,
-- "ms": an absolute time), and make bench prints them together at its end
-- (bench/targets.lua) with the target and whether it is met.
function M.target(row, ratio, kind, target)
  local out = os.getenv("BENCH_OUT") or "bench/out"
  os.execute("mkdir -p '" .. out .. "'")
  local f = assert(io.open(out .. "/targets.tsv", "a"))
  f:write(("%s\t%.4f\t%s\t%g\n"):format(row, ratio, kind, target))
  f:close()
end

return M
