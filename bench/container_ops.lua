-- Real-file workload (SPEC §10, perf.md W2) through the ContainerSandbox, and
-- through plain Lua io.open for comparison: 10 000 files of 100 bytes in 100
-- directories; create, read, stat, list, delete.
--   lua5.4 bench/container_ops.lua <sandbox|lua-io> <root-dir> <iterations> [resolver]
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"
local clock = require("sandbox.core").clock

local impl, root, iterations, resolver = arg[1], arg[2], tonumber(arg[3]) or 3, arg[4] or "auto"
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

local name = impl == "sandbox" and ("lua-sandbox-container-" .. resolver) or "lua-io"
local function phase(it, ph, n, fn)
  local t0 = clock()
  fn()
  print(("RESULT %s %s %d %.6f %d"):format(name, ph, n, clock() - t0, it))
end

os.execute("mkdir -p '" .. root .. "'")
for it = 1, iterations do
  if impl == "sandbox" then
    local sb = assert(sandbox.container { base_dir = root, resolver = resolver })
    phase(it, "create", #files, function()
      for _, d in ipairs(dirs) do sb:mkdir(d) end
      for _, f in ipairs(files) do assert(sb:write_file(f, payload)) end
    end)
    phase(it, "read", #files, function() for _, f in ipairs(files) do sb:read_file(f) end end)
    phase(it, "stat", #files, function() for _, f in ipairs(files) do sb:stat(f) end end)
    phase(it, "list", #listdirs, function() for _, d in ipairs(listdirs) do sb:readdir(d) end end)
    phase(it, "delete", #files, function()
      for _, f in ipairs(files) do sb:remove(f) end
      for i = #dirs, 1, -1 do sb:remove(dirs[i]) end
      for a = 0, 9 do sb:remove("a" .. a) end
    end)
    sb:dispose()
  else -- plain Lua: io.open for files, LuaFileSystem (Debian's lua-filesystem) for the rest
    local lfs = require "lfs"
    local p = root .. "/"
    phase(it, "create", #files, function()
      for a = 0, 9 do lfs.mkdir(p .. "a" .. a) end
      for _, d in ipairs(dirs) do lfs.mkdir(p .. d) end
      for _, f in ipairs(files) do
        local h = assert(io.open(p .. f, "wb"))
        h:write(payload)
        h:close()
      end
    end)
    phase(it, "read", #files, function()
      for _, f in ipairs(files) do
        local h = io.open(p .. f, "rb")
        h:read("a")
        h:close()
      end
    end)
    phase(it, "stat", #files, function()
      for _, f in ipairs(files) do lfs.symlinkattributes(p .. f) end
    end)
    phase(it, "list", #listdirs, function()
      for _, d in ipairs(listdirs) do
        local out = {}
        for name in lfs.dir(p .. d) do
          if name ~= "." and name ~= ".." then
            local a = lfs.symlinkattributes(p .. d .. "/" .. name)
            out[#out + 1] = { name = name, type = a.mode, size = a.size, is_directory = a.mode == "directory" }
          end
        end
        table.sort(out, function(x, y) return x.name < y.name end)
      end
    end)
    phase(it, "delete", #files, function()
      for _, f in ipairs(files) do os.remove(p .. f) end
      for i = #dirs, 1, -1 do os.remove(p .. dirs[i]) end
      for a = 0, 9 do os.remove(p .. "a" .. a) end
    end)
  end
end
