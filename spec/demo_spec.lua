-- The demo (README quick start): the scripted agent in both sandboxes, and
-- live mode against a local OpenAI-compatible server.
local sh = require "support.sh"
local backends = require "support.backends"
local cjson = require "cjson"

local unconfined = os.getenv("SANDBOX_TEST_UNCONFINED") -- valgrind: see the Makefile

describe("the demo agent", function()
  it("runs the scripted model in a ContainerSandbox, an OverlaySandbox and a VirtualSandbox", function()
    if unconfined then pending("the demo runs confined commands") return end
    local ok, out = sh.run(("SANDBOX_BUILD=%s %s examples/agent.lua"):format(sh.build, sh.lua()))
    assert.is_true(ok, out)
    for _, want in ipairs {
      "== ContainerSandbox: sandbox.container",
      "-> read_file {\"path\":\"src/greet.lua\"}",
      "Edited src/greet.lua: replaced 1 occurrence.",
      "<- ERROR Reading ../../../etc/passwd failed",
      "Hello, world!",
      "timed out after 1.00 s and was killed",
      "listening on 127.0.0.1:8000",
      "request: GET /status",
      "200\thello",
      "Stopped process",
      "the project on disk is byte-identical after the agent's turn",
      "   | +  return 'Hello, ' .. name .. '!'",
      "commit? [y/N] y (scripted)",
      "committed 1 change(s); src/greet.lua on disk now says: 'Hello, ' .. name .. '!'",
      "== VirtualSandbox: sandbox.virtual (/project) (11 tools) ==",
      "(src/greet.lua now says: 'Hello, ' .. name .. '!')",
    } do
      assert.is_truthy(out:find(want, 1, true), "missing from the transcript: " .. want .. "\n" .. out)
    end
    local _, n = out:gsub("Done: greet%(%) now ends", "")
    assert.equal(3, n)
  end)

  it("talks to an OpenAI-compatible endpoint with OPENAI_BASE_URL", function()
    if unconfined then pending("the demo runs confined commands") return end
    local dir = backends.tmpdir("live")
    local srv = sh.lines(("%s spec/support/fake_openai.lua %s/port %s/log 6 >%s/srv.out 2>&1 & echo $!"):format(
      "lua5.4", dir, dir, dir))[1]
    local port
    for _ = 1, 100 do
      local f = io.open(dir .. "/port")
      port = f and f:read("*l")
      if f then f:close() end
      if port then break end
      sh.run("sleep 0.05")
    end
    assert(port, "the fake server did not start")
    local ok, out = sh.run(("OPENAI_BASE_URL=http://127.0.0.1:%s/v1 OPENAI_API_KEY=test OPENAI_MODEL=fake SANDBOX_BUILD=%s %s examples/agent.lua")
      :format(port, sh.build, sh.lua()))
    sh.run("kill " .. srv .. " 2>/dev/null; true")
    assert.is_true(ok, out)
    assert.matches("model: live at http://127%.0%.0%.1:%d+/v1", out)
    local _, n = out:gsub("assistant: The README starts with: # greeter", "")
    assert.equal(3, n, out)
    -- what the endpoint received: tools in OpenAI chat form, results as tool messages
    local f = assert(io.open(dir .. "/log"))
    local first = cjson.decode(f:read("*l"))
    local second = cjson.decode(f:read("*l"))
    f:close()
    assert.equal("fake", first.model)
    assert.equal("function", first.tools[1].type)
    assert.equal("read_file", first.tools[1]["function"].name)
    local last = second.messages[#second.messages]
    assert.same({ "tool", "call_1" }, { last.role, last.tool_call_id })
    assert.matches("# greeter", last.content)
  end)
end)
