-- Run a shell command from a spec with the sanitizer and valgrind settings
-- of the test process removed, so helper programs (cp, luarocks, ...) are
-- not checked as if they were the module. Returns ok, output.
local M = {}

local CLEAN = "env -u LD_PRELOAD -u ASAN_OPTIONS -u LSAN_OPTIONS -u UBSAN_OPTIONS "

--- io.popen with the clean environment (for a command running alongside).
function M.popen(cmd)
  return assert(io.popen(CLEAN .. "sh -c " .. M.quote(cmd)))
end

-- (the exit status comes back in the output: io.popen's close gives none
-- on 5.1 and LuaJIT)
function M.run(cmd)
  local p = assert(io.popen(CLEAN .. "sh -c " .. M.quote("{\n" .. cmd .. "\n} 2>&1; echo \"\n__rc=$?\"")))
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.-)\n__rc=(%d+)\n?$")
  if not body then return false, out end
  return rc == "0", body
end

--- M.run on a command given the bytes of a temporary file: each %s in cmd
--- is the file's quoted path; the file is gone afterwards.
function M.run_on_file(content, cmd)
  local file = os.tmpname()
  local f = assert(io.open(file, "wb"))
  f:write(content)
  f:close()
  local ok, out = M.run((cmd:gsub("%%s", (M.quote(file):gsub("%%", "%%%%")))))
  os.remove(file)
  return ok, out
end

function M.lines(cmd)
  local ok, out = M.run(cmd)
  assert(ok, out)
  local t = {}
  for l in out:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

--- A whole file's bytes, or nil when it cannot be opened.
function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

function M.quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- the interpreter the suite runs under (make test LUA=...), for children
M.LUA = os.getenv("SANDBOX_LUA") or "lua5.4"

--- Command prefix that runs a child Lua (M.LUA) loading the module under test
--- the way this suite does (with the ASan runtime preloaded in `make asan`).
--- With check_leaks, leaks of the child fail it (ASan builds) or are
--- reported by valgrind when that is installed.
function M.lua(check_leaks)
  local pre = os.getenv("SANDBOX_LUA_PRELOAD")
  if pre and pre ~= "" then
    return ("env LD_PRELOAD=%s ASAN_OPTIONS=detect_leaks=%d %s"):format(pre, check_leaks and 1 or 0, M.LUA)
  end
  if check_leaks and M.run("command -v valgrind") then
    return "valgrind -q --log-file=/dev/null --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 " .. M.LUA
  end
  return M.LUA
end

--- Pid of this (the test) process.
function M.pid()
  local f = assert(io.open("/proc/self/stat"))
  local pid = f:read("*a"):match("^(%d+)")
  f:close()
  return pid
end

--- This process's open descriptors as "fd -> target" lines, after a full
--- collection (what earlier tests dropped is not the caller's business;
--- `keep_garbage` skips it, for a caller that stopped the collector);
--- the listing's own pipe is among them, the same in every listing. It runs
--- in a child, which waits a moment first: popen closes its copy of the
--- child's end just after the child starts. An fd closed while it was
--- listed (no target) is left out.
function M.open_fds(keep_garbage)
  if not keep_garbage then
    collectgarbage()
    collectgarbage()
  end
  local t = {}
  local p = M.popen("sleep 0.05; cd /proc/" .. M.pid() .. "/fd && for f in *; do echo \"$f -> $(readlink $f)\"; done")
  for l in p:lines() do
    if not l:match(" %-> $") then t[#t + 1] = (l:gsub("pipe:%[%d+%]", "pipe")) end
  end
  p:close() -- now: LuaJIT may keep a dead handle on its stack past a collection
  return t
end

--- Absolute path of the build directory under test (build/ or build-asan/).
M.build = (function()
  local b = os.getenv("SANDBOX_BUILD") or "build"
  if b:sub(1, 1) == "/" then return b end
  local p = assert(io.popen("pwd"))
  local cwd = p:read("*l")
  p:close()
  return cwd .. "/" .. b:gsub("^%./", "")
end)()

return M
