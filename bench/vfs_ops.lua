-- VirtualSandbox workload of SPEC §10 / perf.md W1: 10 000 files of 100 bytes
-- in 100 directories (10 x 10); create, read, stat, list, delete from Lua.
-- Prints "RESULT <impl> <phase> <ops> <seconds> <iteration>" lines.
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"
local clock = require("sandbox.core").clock

local iterations = tonumber(arg[1]) or 3
local payload = string.rep("x", 100)
local dirs, files = {}, {}
for a = 0, 9 do
  for b = 0, 9 do
    local d = ("a%d/b%d"):format(a, b)
    dirs[#dirs + 1] = d
    for f = 0, 99 do files[#files + 1] = ("%s/f%02d.txt"):format(d, f) end
  end
end
local listdirs = { "." }
for a = 0, 9 do listdirs[#listdirs + 1] = "a" .. a end
for _, d in ipairs(dirs) do listdirs[#listdirs + 1] = d end

local function phase(it, name, n, fn)
  local t0 = clock()
  fn()
  print(("RESULT lua-sandbox-virtual %s %d %.6f %d"):format(name, n, clock() - t0, it))
end

for it = 1, iterations do
  local sb = sandbox.virtual { max_total_bytes = "1GB", max_files = 1000000 }
  phase(it, "create", #files, function()
    for _, d in ipairs(dirs) do sb:mkdir(d) end
    for _, f in ipairs(files) do sb:write_file(f, payload) end
  end)
  phase(it, "read", #files, function()
    for _, f in ipairs(files) do sb:read_file(f) end
  end)
  phase(it, "stat", #files, function()
    for _, f in ipairs(files) do sb:stat(f) end
  end)
  phase(it, "list", #listdirs, function()
    for _, d in ipairs(listdirs) do sb:readdir(d) end
  end)
  phase(it, "delete", #files, function()
    for _, f in ipairs(files) do sb:remove(f) end
    for i = #dirs, 1, -1 do sb:remove(dirs[i]) end
    for a = 0, 9 do sb:remove("a" .. a) end
  end)
  sb:dispose()
end
