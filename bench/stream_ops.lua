-- 64 concurrent background processes streaming (SPEC §10): every process
-- writes a known byte pattern; on_stdout callbacks check every byte arrives
-- in order, and the host's peak RSS is compared before and after.
--   lua5.4 bench/stream_ops.lua [processes] [MB-each]
-- Prints "STREAM <processes> <bytes expected> <bytes received> <bad bytes>
--         <seconds> <peak RSS growth bytes>".
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"
local clock = require("sandbox.core").clock

local nproc, mb = tonumber(arg[1]) or 64, tonumber(arg[2]) or 8
local each = mb * 1000000
local function status(key)
  local f = assert(io.open("/proc/self/status"))
  local v = f:read("a"):match(key .. ":%s*(%d+)")
  f:close()
  return tonumber(v) * 1024
end

local root = (os.getenv("SCRATCH") or "/dev/shm") .. "/bench-stream"
os.execute("mkdir -p '" .. root .. "'")
local sb = assert(sandbox.container { base_dir = root, max_background_processes = nproc, max_output_bytes = "64KB" })
collectgarbage("collect")
local hwm0 = status("VmHWM")
local got, bad, handles = {}, 0, {}
local t = clock()
for i = 1, nproc do
  -- process i repeats the 7-byte line "p%05d\n" forever; head cuts it
  local line = ("p%05d\n"):format(i)
  got[i] = 0
  handles[i] = assert(sb:exec("sh", { "-c", ("yes p%05d | head -c %d"):format(i, each) }, {
    background = true,
    timeout = 300,
    on_stdout = function(chunk)
      local off = got[i] % 7
      local expect = (line:rep(#chunk // 7 + 2)):sub(off + 1, off + #chunk)
      if chunk ~= expect then bad = bad + #chunk end
      got[i] = got[i] + #chunk
    end,
  }))
end
for i = 1, nproc do assert(handles[i]:wait()) end
local dt = clock() - t
local total = 0
for i = 1, nproc do total = total + got[i] end
print(("STREAM %d %d %d %d %.6f %d"):format(nproc, nproc * each, total, bad, dt, status("VmHWM") - hwm0))
sb:dispose()
