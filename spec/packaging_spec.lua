-- Packaging: the rockspec lists every source and module, and `luarocks make`
-- with Debian's luarocks builds a tree from which `require "sandbox"` works.
local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function lines(cmd)
  local out, p = {}, assert(io.popen(cmd))
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

local function rockspec()
  local files = lines("ls *.rockspec")
  assert.equal(1, #files, "exactly one rockspec")
  local env = {}
  assert(load(read(files[1]), files[1], "t", env))()
  return env, files[1]
end

describe("packaging", function()
  it("the rock is agent-sandbox and the rockspec lists every C source", function()
    local spec = rockspec()
    assert.equal("agent-sandbox", spec.package)
    local listed = {}
    for _, s in ipairs(spec.build.modules["sandbox.core"].sources) do listed[#listed + 1] = s end
    table.sort(listed)
    assert.same(lines("ls csrc/*.c | sort"), listed)
  end)

  it("the rockspec lists every Lua module", function()
    local spec = rockspec()
    for _, f in ipairs(lines("cd lua && find sandbox -name '*.lua' | sort")) do
      local mod = f:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
      assert.equal("lua/" .. f, spec.build.modules[mod], mod)
    end
  end)

  it("luarocks make installs a tree that require 'sandbox' loads", function()
    if os.execute("command -v luarocks >/dev/null") ~= true then
      error("luarocks is not installed (scripts/deps.sh installs it)")
    end
    local _, file = rockspec()
    local tmp = lines("mktemp -d")[1]
    local src = tmp .. "/src"
    -- build from a copy: luarocks writes objects into the source tree
    assert.is_true(os.execute(("mkdir -p %s && cp -r csrc lua %s %s/"):format(src, file, src)))
    local ok = os.execute(("cd %s && luarocks --lua-version=5.4 make --tree %s/tree %s >%s/log 2>&1")
      :format(src, tmp, file, tmp))
    local log = read(tmp .. "/log")
    assert.is_true(ok, log)
    local out = lines(("cd %s && LUA_PATH='%s/tree/share/lua/5.4/?.lua;%s/tree/share/lua/5.4/?/init.lua' LUA_CPATH='%s/tree/lib/lua/5.4/?.so' lua5.4 -e 'local s = require(\"sandbox\"); local v = s.virtual{files={a=\"ok\"}}; print(v:read_file(\"a\"), package.searchpath(\"sandbox.core\", package.cpath))' 2>&1")
      :format(tmp, tmp, tmp, tmp))
    os.execute("rm -rf " .. tmp)
    assert.equal("ok", out[1]:match("^(%S+)"), table.concat(out, "\n"))
    assert.matches("/tree/lib/lua/5.4/sandbox/core.so$", out[1])
  end)
end)
