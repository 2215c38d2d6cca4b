-- Packaging: the rockspec lists every source and module, and `luarocks make`
-- with Debian's luarocks builds a tree from which `require "sandbox"` works.
local sh = require "support.sh"
local function read(path) return assert(sh.read_file(path)) end
local lines = sh.lines

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
    assert(sh.run("command -v luarocks"), "luarocks is not installed (scripts/deps.sh installs it)")
    local _, file = rockspec()
    local tmp = lines("mktemp -d")[1]
    local src = tmp .. "/src"
    -- build from a copy: luarocks writes objects into the source tree
    assert(sh.run(("mkdir -p %s && cp -r csrc lua %s %s/"):format(src, file, src)))
    local ok, log = sh.run(("cd %s && luarocks --lua-version=5.4 make --tree %s/tree %s")
      :format(src, tmp, file))
    assert.is_true(ok, log)
    local out = lines(("cd %s && LUA_PATH='%s/tree/share/lua/5.4/?.lua;%s/tree/share/lua/5.4/?/init.lua' LUA_CPATH='%s/tree/lib/lua/5.4/?.so' lua5.4 -e 'local s = require(\"sandbox\"); local v = s.virtual{files={a=\"ok\"}}; print(v:read_file(\"a\"), package.searchpath(\"sandbox.core\", package.cpath))'")
      :format(tmp, tmp, tmp, tmp))
    sh.run("rm -rf " .. tmp)
    assert.equal("ok", out[1]:match("^(%S+)"), table.concat(out, "\n"))
    assert.matches("/tree/lib/lua/5.4/sandbox/core.so$", out[1])
  end)
end)
