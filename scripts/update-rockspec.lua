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
s = s:gsub("(      sources = {\n).-(      },)", function(a, b) return a .. table.concat(srcs) .. b end, 1)
local mods = {}
for _, l in ipairs(lines("cd lua && find sandbox -name '*.lua' | sort")) do
  local m = l:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
  mods[#mods + 1] = ('    ["%s"] = "lua/%s",\n'):format(m, l)
end
s = s:gsub('(    modules = {\n)(.-)(    %["sandbox%.core"%])', function(a, _, c) return a .. table.concat(mods) .. c end, 1)
f = assert(io.open(file, "w"))
f:write(s)
f:close()
print("updated " .. file)
