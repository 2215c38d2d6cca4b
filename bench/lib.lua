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

return M
