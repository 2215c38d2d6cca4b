-- Packaging: the rock builds with Debian's luarocks into a fresh tree, and
-- from that tree alone the README example and a JSON tool call work, the
-- module exports only its luaopen_ function, and every Lua module is there.
local sh = require "support.sh"
local lines = sh.lines

local function rockspec()
  local files = lines("ls *.rockspec")
  assert.equal(1, #files, "exactly one rockspec")
  local env = {}
  local text = assert(sh.read_file(files[1]))
  local chunk
  if setfenv then -- 5.1, LuaJIT: load takes no environment
    chunk = assert(loadstring(text, files[1]))
    setfenv(chunk, env)
  else
    chunk = assert(load(text, files[1], "t", env))
  end
  chunk()
  return env, files[1]
end

-- The Lua code block under "## Example" in the README.
local function readme_example()
  local readme = assert(sh.read_file("README.md"))
  local block = readme:match("\n## Example\n.-```lua\n(.-)```")
  assert(block, "no Lua example in the README")
  return block
end

describe("packaging", function()
  local tmp, tree
  setup(function()
    tmp = lines("mktemp -d")[1]
    tree = tmp .. "/tree"
  end)
  teardown(function() sh.run("rm -rf " .. tmp) end)

  it("the rock is agent-sandbox at scm-1 (what plugin managers pick up), needs lua-cjson, and has a test section", function()
    local spec, file = rockspec()
    assert.equal("agent-sandbox-scm-1.rockspec", file)
    assert.equal("scm-1", spec.version)
    assert.equal("agent-sandbox", spec.package)
    local deps = table.concat(spec.dependencies, " ")
    assert.matches("lua%-cjson", deps)
    assert.equal("make", spec.build.type)
    assert.is_table(spec.test)
  end)

  it("luarocks make installs a tree from which the README example and a JSON tool call run", function()
    assert(sh.run("command -v luarocks"), "luarocks is not installed (scripts/deps.sh installs it)")
    local _, file = rockspec()
    local src = tmp .. "/src"
    -- build from a copy: the build writes objects into the source tree. No
    -- rocks server is reachable here, so dependencies are not fetched.
    assert(sh.run(("mkdir -p %s && cp -r Makefile csrc lua bin %s %s/"):format(src, file, src)))
    local ok, log = sh.run(("cd %s && luarocks --lua-version=5.4 make --deps-mode=none --tree %s %s")
      :format(src, tree, file))
    assert.is_true(ok, log)
    local script = tmp .. "/example.lua"
    local f = assert(io.open(script, "w"))
    f:write(readme_example(), [[

local json = require "sandbox.json"
local r = sandbox.tools.dispatch(sb:tools(), { name = "read_file", arguments = '{"path": "src/main.lua"}' })
print("TOOL", r.is_error, r.content)
print("EMPTY", json.encode(sandbox.tools.to_openai(sb:tools { only = {} })))
print("CODEC", json.codec())
print("CORE", package.searchpath("sandbox.core", package.cpath))
print("HELPER", require("sandbox.docparse").path("docx"), require("sandbox.docparse").path("pdf"))
]])
    f:close()
    local env = ("LUA_PATH='%s/share/lua/5.4/?.lua;%s/share/lua/5.4/?/init.lua' LUA_CPATH='%s/lib/lua/5.4/?.so'")
      :format(tree, tree, tree)
    -- only the tree on the path: lua-cjson absent, the module's own codec decodes
    local out = table.concat(lines(("cd %s && %s lua5.4 %s 2>&1"):format(tmp, env, script)), "\n")
    assert.matches("TOOL\tfalse\t     1\tprint%('hi'%)", out)
    assert.matches("EMPTY\t%[%]", out)
    assert.matches("CODEC\tsandbox\n", out)
    assert.matches("CORE\t" .. tree:gsub("%p", "%%%0") .. "/lib/lua/5.4/sandbox/core.so", out)
    local lib = tree:gsub("%p", "%%%0") .. "/lib/lua/5.4/sandbox/"
    assert.matches("HELPER\t" .. lib .. "sandbox%-docparse\t" .. lib .. "sandbox%-docrender", out)
    assert.matches("write_file\tsrc/util.lua\ttrue", out) -- the example's audit lines
    -- with Debian's lua-cjson on the path as well, it decodes
    local env2 = env:gsub("LUA_CPATH='([^']*)'", "LUA_CPATH='%1;/usr/lib/x86_64-linux-gnu/lua/5.4/?.so'")
    out = table.concat(lines(("cd %s && %s lua5.4 %s 2>&1"):format(tmp, env2, script)), "\n")
    assert.matches("TOOL\tfalse", out)
    assert.matches("CODEC\tlua%-cjson", out)
  end)

  it("installs agent-sandbox, which runs from the tree alone", function()
    local bin = tree .. "/bin/agent-sandbox"
    local work = tmp .. "/work"
    assert(sh.run("mkdir -p " .. work))
    local clean = "env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 -u SANDBOX_BUILD "
    local ok, out = sh.run(("cd %s && %s%s run -- sh -c 'echo ran in $PWD'"):format(work, clean, bin))
    assert.is_true(ok, out)
    assert.matches("ran in", out)
    ok, out = sh.run(("cd %s && echo '%s' | %s%s mcp"):format(work,
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}',
      clean, bin))
    assert.is_true(ok, out)
    assert.matches('"protocolVersion":"2025%-06%-18"', out)
    assert.matches('"name":"agent%-sandbox"', out)
  end)

  it("make install puts agent-sandbox in PREFIX/bin, finding its modules from there", function()
    local prefix = tmp .. "/prefix"
    local lua = os.getenv("SANDBOX_LUA") or "lua5.4"
    local ok, log = sh.run(("make -s install PREFIX=%s LUA=%s BUILD=%s"):format(prefix, lua, sh.build))
    assert.is_true(ok, log)
    local bin = prefix .. "/bin/agent-sandbox"
    local head = assert(sh.read_file(bin))
    assert.matches("^#!/usr/bin/env " .. lua:gsub("%p", "%%%0") .. "\n", head)
    -- the interpreter this suite runs (with its sanitizer runtime), nothing else on the paths
    local clean = "env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 -u SANDBOX_BUILD "
    ok, log = sh.run(("cd %s && %s%s %s run --dir . -- sh -c 'echo from-prefix'"):format(tmp, clean, sh.lua(false), bin))
    assert.is_true(ok, log)
    assert.matches("from%-prefix", log)
  end)

  it("the installed module exports only luaopen_sandbox_core", function()
    local so = tree .. "/lib/lua/5.4/sandbox/core.so"
    local syms = lines(("nm -D --defined-only %s | awk '$2 ~ /[TDBR]/ {print $3}'"):format(so))
    assert.same({ "luaopen_sandbox_core" }, syms)
  end)

  it("the tree holds every Lua module of the layer", function()
    for _, f in ipairs(lines("cd lua && find sandbox -name '*.lua' | sort")) do
      local mod = f:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
      local installed = tree .. "/share/lua/5.4/" .. f
      assert.is_true(sh.run("test -f " .. installed), mod .. " is not installed")
    end
  end)
end)
