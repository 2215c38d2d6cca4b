-- Run a shell command from a spec with the sanitizer and valgrind settings
-- of the test process removed, so helper programs (cp, luarocks, ...) are
-- not checked as if they were the module. Returns ok, output.
local M = {}

local CLEAN = "env -u LD_PRELOAD -u ASAN_OPTIONS -u LSAN_OPTIONS -u UBSAN_OPTIONS "

function M.run(cmd)
  local p = assert(io.popen(CLEAN .. "sh -c " .. M.quote(cmd .. " 2>&1")))
  local out = p:read("a")
  local ok = p:close()
  return ok == true, out
end

function M.lines(cmd)
  local ok, out = M.run(cmd)
  assert(ok, out)
  local t = {}
  for l in out:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

function M.quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

return M
