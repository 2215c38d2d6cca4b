-- Rewrite the rockspec's list of C sources and Lua modules from the tree
-- (run by `make rockspec`; the packaging spec fails when they drift).
local function lines(cmd)
  local t, p = {}, assert(io.popen(cmd))
  for l in p:lines() do t[#t + 1] = l end
  p:close()
  return t
end
local file = lines("ls *.rockspec")[1]
local f = assert(io.open(file))
local s = f:read("a")
f:close()
local srcs = {}
for _, c in ipairs(lines("ls csrc/*.c | sort")) do srcs[#srcs + 1] = ('        "%s",\n'):format(c) end
local n
s, n = s:gsub("(sources = {\n).-(%s*},)", function(a, b) return a .. table.concat(srcs) .. b:gsub("^\n", "") end, 1)
assert(n == 1, "no sources list found in " .. file)
local mods = {}
for _, l in ipairs(lines("cd lua && find sandbox -name '*.lua' | sort")) do
  local m = l:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
  mods[#mods + 1] = ('    ["%s"] = "lua/%s",\n'):format(m, l)
end
s, n = s:gsub('(modules = {\n)(.-)(    %["sandbox%.core"%])', function(a, _, c) return a .. table.concat(mods) .. c end, 1)
assert(n == 1, "no modules list found in " .. file)
f = assert(io.open(file, "w"))
f:write(s)
f:close()
print("updated " .. file)
