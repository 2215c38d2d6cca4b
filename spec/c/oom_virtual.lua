-- Run by spec/c/alloc_cap: fill a VirtualSandbox until the host allocator
-- refuses; every failure must be ENOSPC or a Lua memory error, the tree must
-- stay usable, and closing the state must return every byte.
-- LuaJIT's trace compiler does not survive an allocator that refuses in
-- the middle of recording (segfaults inside LuaJIT, seen in CI runs):
-- what is tested is the sandbox's C core, so the interpreter runs it.
if jit then jit.off() end
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"

local sb = sandbox.virtual { max_total_bytes = "1GB", max_files = 10000000 }
-- the host's reserve, let go of once the cap is reached: the calls after
-- the loop need some memory to free memory (at the cap with little garbage
-- to collect, LuaJIT's remove failed once with a memory error)
local reserve = { string.rep("r", 256 * 1024) }
local chunk = string.rep("x", 64 * 1024)
local written, enospc, memerr = 0, 0, 0
local per = {}
for d = 0, 6 do per[d] = 0 end
-- the whole attempt, its file name included, inside the pcall: any
-- allocation may be the one the cap refuses
local function put(i) return sb:write_file(("d%d/f%d"):format(i % 7, i), chunk) end
for i = 1, 100000 do
  local ok, v, msg, code = pcall(put, i)
  if not ok then
    memerr = memerr + 1
  elseif v then
    written = written + 1
    per[i % 7] = per[i % 7] + 1
  elseif code ~= "ENOSPC" then
    -- the message is built only here: an assert's message argument is
    -- evaluated on every call, and at the cap that concatenation, outside
    -- the pcall, raised the memory error that failed CI (LuaJIT, which has
    -- no emergency collection before a refusal, about 1 run in 1500)
    error("unexpected failure: " .. tostring(msg))
  else
    enospc = enospc + 1
  end
  if enospc + memerr >= 20 then break end
  -- collect what a failed attempt left (its name, its message) before the
  -- next: LuaJIT does not collect before refusing, so at the cap that
  -- garbage made every later attempt fail in Lua before it reached the
  -- tree (no ENOSPC at all, seen with another heap layout). Protected:
  -- a full collection may itself allocate
  if not (ok and v) then pcall(collectgarbage) end
end
assert(written > 0 and enospc + memerr >= 20, "the cap was never reached")
-- the failed attempts left garbage (messages, names) at the cap: collect it
-- now, not whenever the collector would (LuaJIT's runs later than 5.4's)
assert(#reserve[1] == 256 * 1024)
reserve[1] = nil
collectgarbage()
-- freeing makes room again
assert(sb:remove("d1", { recursive = true }))
written = written - per[1]
assert(sb:write_file("after/x", chunk))
assert(sb:remove("after", { recursive = true }))
-- the tree is intact: everything written reads back
local n = 0
for _, d in ipairs(sb:readdir(".") or {}) do
  for _, f in ipairs(sb:readdir(d.name) or {}) do
    assert(#sb:read_file(d.name .. "/" .. f.name) == #chunk)
    n = n + 1
  end
end
assert(n == written, ("%d files listed, %d written"):format(n, written))
print(("written %d, ENOSPC %d, memory errors %d, listed %d"):format(written, enospc, memerr, n))
sb:dispose()
