-- A game host (SPEC §16): LÖVE 11 under a virtual display (xvfb-run) runs
-- examples/love, whose scene keeps drawing while an agent's 2 s command
-- streams its output onto the screen; the game measures its frame times
-- before and during the command and screenshots the window once the tool
-- result is in.
local sh = require "support.sh"
local backends = require "support.backends"

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s[math.floor((#s + 1) / 2)]
end

local function max(t)
  local m = 0
  for _, v in ipairs(t) do m = math.max(m, v) end
  return m
end

describe("LÖVE as a host", function()
  local R, png

  setup(function()
    assert(sh.run("command -v love >/dev/null && command -v xvfb-run >/dev/null"),
      "LÖVE and a virtual display are needed (apt-get install love xvfb)")
    assert(sh.run("make -s LUA=luajit module >/dev/null"), "building the module for LuaJIT (LÖVE's Lua)")
    local dir = backends.tmpdir("love")
    local out = dir .. "/report.json"
    local pwd = sh.lines("pwd")[1]
    sh.run(("SANDBOX_REPO=%s SANDBOX_LOVE_REPORT=%s SANDBOX_LOVE_ROOT=%s timeout 120 xvfb-run -a -s %s love %s/examples/love >%s/love.log 2>&1")
      :format(sh.quote(pwd), sh.quote(out), sh.quote(dir .. "/root"), sh.quote("-screen 0 800x600x24"), sh.quote(pwd), dir))
    local f = io.open(out)
    if not f then
      local log = io.open(dir .. "/love.log")
      error("LÖVE wrote no report: " .. (log and log:read("*a") or "(no log)"))
    end
    R = require("cjson").decode(f:read("*a"))
    f:close()
    local p = io.open(dir .. "/report.png", "rb")
    png = p and p:read("*a")
    if p then p:close() end
  end)
  teardown(backends.cleanup)

  it("streams the command's output onto the screen and shows the tool's result", function()
    assert.equal(10, R.lines)
    assert.truthy(R.result:find("Exit code: 0", 1, true), R.result)
    assert.truthy(R.result:find("step 10 of 10", 1, true), R.result)
  end)

  it("keeps drawing through the command: no frame waits for it or for its output", function()
    -- the first frames load the game and its fonts: not part of the measure
    local idle = {}
    for i = 6, #R.idle do idle[#idle + 1] = R.idle[i] end
    local med, worst = median(R.command), max(R.command)
    local idle_med, idle_worst = median(idle), max(idle)
    print(("\n  LÖVE: %d frames during a 2 s command, median %.1f ms, longest %.1f ms (idle: median %.1f, longest %.1f)")
      :format(#R.command, med, worst, idle_med, idle_worst))
    -- The command prints a line every 200 ms for 2 s. A frame that waited
    -- for the command would take its 2 s; one that waited for its next line
    -- up to 200 ms, and there would be about ten frames. What CI's other
    -- lane on the second core does to a frame is a hiccup of a few tens of
    -- ms (50 ms seen once in many runs), so the bounds sit between the two:
    -- half a line's gap for the longest frame, most of the paced frames
    -- drawn, and the typical frame no slower than when idle
    assert.is_true(worst < 100, ("longest frame %.1f ms: it waited for the command's output"):format(worst))
    assert.is_true(#R.command >= 80, "only " .. #R.command .. " frames in 2 s (paced at 60 a second)")
    assert.is_true(med <= 1.2 * idle_med + 1,
      ("median frame %.1f ms during the command, %.1f ms idle: the sandbox's turn slows every frame"):format(med, idle_med))
  end)

  it("screenshots the window", function()
    assert.is_true(R.shot)
    assert.truthy(png, "no screenshot")
    assert.equal("\137PNG\r\n\26\n", png:sub(1, 8))
    assert.is_true(#png > 5000, "a blank screenshot? " .. #png .. " bytes")
  end)
end)
