-- VirtualSandbox workload of SPEC §10 (perf.md W1): 10 000 files of 100 bytes
-- in 100 directories (10 x 10); create, read, stat, list, delete from Lua.
--   lua5.4 bench/vfs_ops.lua <sandbox|c-tree|lua-tree> [iterations]
--   lua5.4 bench/vfs_ops.lua memory <sandbox|lua-tree> [files]   bytes per file
-- Prints "RESULT <impl> <phase> <ops> <seconds> <iteration>" lines.
package.path = "./lua/?.lua;./lua/?/init.lua;./bench/baseline/?.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. (os.getenv("BENCH_BUILD") or "./build/bench")
  .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"
local clock = require("sandbox.core").clock

local IMPLS = {
  sandbox = { name = "lua-sandbox-virtual",
              new = function() return sandbox.virtual { max_total_bytes = "1GB", max_files = 1000000 } end,
              footprint = require("sandbox.core").footprint },
  ["c-tree"] = { name = "lua-c-uthash-tree", new = function() return require("benchtree").new() end },
  ["lua-tree"] = { name = "lua-table-tree", new = function() return require("lua_tree").new() end },
}

local function workload(ndirs_a, ndirs_b, nfiles)
  local dirs, files = {}, {}
  for a = 0, ndirs_a - 1 do
    for b = 0, ndirs_b - 1 do
      local d = ("a%d/b%d"):format(a, b)
      dirs[#dirs + 1] = d
      for f = 0, nfiles - 1 do files[#files + 1] = ("%s/f%02d.txt"):format(d, f) end
    end
  end
  return dirs, files
end

local payload = string.rep("x", 100)

if arg[1] == "memory" then
  local impl = assert(IMPLS[arg[2]], "unknown implementation")
  local n = tonumber(arg[3]) or 100000
  local dirs, files = workload(10, n // 1000, 100) -- 100 files per directory
  local function rss()
    local f = assert(io.open("/proc/self/status"))
    local kb = f:read("a"):match("VmRSS:%s*(%d+)")
    f:close()
    return tonumber(kb) * 1024
  end
  collectgarbage("collect")
  collectgarbage("collect")
  local before, rss0 = collectgarbage("count") * 1024, rss()
  local t = impl.new()
  for _, d in ipairs(dirs) do t:mkdir(d) end
  for _, f in ipairs(files) do t:write_file(f, payload) end
  collectgarbage("collect")
  collectgarbage("collect")
  -- the sandbox allocates its tree through the state's allocator directly,
  -- which the collector does not count: add the tree's own tally
  local bytes = collectgarbage("count") * 1024 - before + (impl.footprint and impl.footprint(t) or 0)
  print(("MEMORY %s %d %.1f %.1f"):format(impl.name, #files, bytes / #files, (rss() - rss0) / #files))
  return
end

local impl = assert(IMPLS[arg[1] or "sandbox"], "unknown implementation")
local iterations = tonumber(arg[2]) or 3
local dirs, files = workload(10, 10, 100)
local listdirs = { "." }
for a = 0, 9 do listdirs[#listdirs + 1] = "a" .. a end
for _, d in ipairs(dirs) do listdirs[#listdirs + 1] = d end

local function phase(it, name, n, fn)
  local t0 = clock()
  fn()
  print(("RESULT %s %s %d %.6f %d"):format(impl.name, name, n, clock() - t0, it))
end

for it = 1, iterations do
  local t = impl.new()
  collectgarbage("collect")
  phase(it, "create", #files, function()
    for _, d in ipairs(dirs) do t:mkdir(d) end
    for _, f in ipairs(files) do t:write_file(f, payload) end
  end)
  phase(it, "read", #files, function()
    for _, f in ipairs(files) do t:read_file(f) end
  end)
  phase(it, "stat", #files, function()
    for _, f in ipairs(files) do t:stat(f) end
  end)
  phase(it, "list", #listdirs, function()
    for _, d in ipairs(listdirs) do t:readdir(d) end
  end)
  phase(it, "delete", #files, function()
    for _, f in ipairs(files) do t:remove(f) end
    for i = #dirs, 1, -1 do t:remove(dirs[i]) end
    for a = 0, 9 do t:remove("a" .. a) end
  end)
  t:dispose()
end
