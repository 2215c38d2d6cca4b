-- A real host (SPEC §14): headless Neovim, whose Lua is LuaJIT and whose
-- loop is its own libuv, loads the module built for LuaJIT through
-- package.cpath and runs the example plugin (examples/neovim): tools on
-- both backends, a background command streamed into a buffer and driven
-- from Neovim's loop, which never stalls.
local sh = require "support.sh"
local backends = require "support.backends"

describe("Neovim as a host", function()
  local have = os.execute("command -v nvim >/dev/null 2>&1")
  local R

  setup(function()
    assert(have, "Neovim is needed (apt-get install neovim)")
    local build = os.getenv("SANDBOX_NVIM_BUILD") or "build-luajit"
    if not io.open(build .. "/sandbox/core.so") then
      assert(sh.run("make -s LUA=luajit BUILD=" .. build .. " module"), "building the LuaJIT module")
    end
    local root, out = backends.tmpdir("nvim"), backends.tmpdir("nvim-out") .. "/r.json"
    local pwd = sh.lines("pwd")[1]
    local paths = ("lua package.cpath='%s/%s/?.so;'..package.cpath; package.path='%s/lua/?.lua;%s/lua/?/init.lua;%s/examples/neovim/lua/?.lua;'..package.path")
      :format(pwd, build, pwd, pwd, pwd)
    sh.run(("SANDBOX_NVIM_OUT=%s SANDBOX_NVIM_ROOT=%s timeout 120 nvim --headless -u NONE -i NONE --cmd %s --cmd %s -c %s")
      :format(out, root, sh.quote("set rtp+=examples/neovim"), sh.quote(paths), sh.quote("luafile spec/nvim/host_test.lua")))
    local f = assert(io.open(out), "Neovim wrote no result")
    R = require("cjson").decode(f:read("*a"))
    f:close()
  end)
  teardown(backends.cleanup)

  it("loads the LuaJIT module and runs the tools on both backends", function()
    assert.is_nil(R.error)
    assert.truthy(tostring(R.lua):find("LuaJIT", 1, true))
    assert.equal("     1\t# notes\n     2\thello from a fixture", R.virtual_read.content)
    assert.equal("notes.md:2: hello from a fixture", R.virtual_search.content)
    assert.equal("     1\thi", R.read.content)
  end)

  it("streams a background command into a buffer from Neovim's own loop, never blocking it", function()
    assert.is_true(R.ok)
    assert.equal(202, R.lines) -- the buffer's first empty line, 200 lines, the exit line
    assert.equal("[exit 0]", R.last_line)
    assert.is_false(R.running)
    -- the command ends with a quiet second: a call that waited on it from
    -- the editor's loop would stall the timer for that second; scheduling
    -- noise on a loaded machine stays far below half of it
    assert.is_true(R.longest_stall_ms < 500, "longest stall " .. tostring(R.longest_stall_ms) .. " ms")
  end)

  it("leaves no process behind once Neovim quits", function()
    assert.is_true(R.pid > 0)
    assert.is_false(sh.run("kill -0 " .. R.pid .. " 2>/dev/null"))
  end)
end)
