-- Exported tool definitions are what the APIs accept: checked by real
-- validators (ajv in strict mode, the MCP SDK's ListToolsResultSchema) and
-- by each API's rules (OpenAI strict mode: every object closed and every
-- property required; Anthropic input_schema; MCP ListToolsResult), for the
-- built-in tools and for custom tools with nested optional objects, enums,
-- arrays of objects and anyOf.
local sandbox = require "sandbox"
local json = require "sandbox.json"
local sh = require "support.sh"
local backends = require "support.backends"
local T, S = sandbox.tools, sandbox.tools.schema

local NPM = os.getenv("SANDBOX_NPM") or "./build/npm" -- scripts/npm-deps.sh

local function custom_tools()
  local deploy = T.define {
    name = "deploy",
    description = "Deploy a build.",
    parameters = S.object({
      build = S.string("Build id."),
      target = S.object({ -- optional nested object with its own required field
        region = S.string("Region."),
        size = S.integer("Machines.", { minimum = 1 }),
        tags = S.array(S.string("tag"), "Tags."),
      }, { "region" }, "Where to."),
      mode = S.string("Mode.", { enum = { "fast", "safe" } }), -- optional enum
      steps = S.array(S.object({ -- array of objects, with an optional field inside
        name = S.string("Step."),
        retries = S.integer("Retries."),
        when = S.object({ after = S.string("After.") }),
      }, { "name" }), "Steps."),
      value = { anyOf = { S.string("As text."), S.integer("As a number.") }, description = "A value." },
      level = S.integer("Level.", { enum = { 1, 2, 3 } }),
    }, { "build" }),
    execute = function(args) return json.encode(args) end,
  }
  local ping = T.define { name = "ping", description = "No arguments.", read_only = true,
    execute = function() return "pong" end }
  return { deploy, ping }
end

local function export_all(tools)
  return {
    chat = T.to_openai(tools),
    chat_strict = T.to_openai(tools, { strict = true }),
    responses = T.to_openai(tools, { api = "responses" }),
    responses_strict = T.to_openai(tools, { api = "responses", strict = true }),
    anthropic = T.to_anthropic(tools),
    mcp = T.to_mcp(tools),
  }
end

local function check(payload)
  local ok, out = sh.run_on_file(json.encode(payload), "NPM_DIR=" .. sh.quote(NPM) .. " node spec/js/check_schemas.mjs %s")
  assert(ok, out)
  return assert(json.decode(out:match("([^\n]+)\n?$")), out)
end

describe("exported tool schemas", function()
  local sb
  setup(function()
    assert(sh.run("test -d " .. NPM .. "/node_modules/ajv"), "run scripts/npm-deps.sh (the test peers are missing)")
    sb = assert(sandbox.container { base_dir = backends.tmpdir("schemas"), allow_shell = true,
      allowed_hosts = { "example.org" }, confine = not os.getenv("SANDBOX_TEST_UNCONFINED") })
  end)
  teardown(function() sb:dispose() end)

  it("of every built-in tool pass ajv, OpenAI strict rules, Anthropic and MCP", function()
    local tools = sb:tools()
    assert.is_true(#tools >= 16, "all built-in tools")
    local payload = export_all(tools)
    payload.samples = {
      { tool = "read_file", args = { path = "a", offset = json.null, limit = json.null, pages = json.null, page_image = json.null } },
      { tool = "run_command", args = { command = { "ls" }, cwd = json.null, timeout_seconds = json.null,
        background = json.null } },
    }
    local r = check(payload)
    assert.same({}, r.errors)
    assert.is_true(r.checked >= 6 * #tools)
  end)

  it("of custom tools with nested optional objects, enums, arrays of objects and anyOf pass too", function()
    local tools = sb:tools { only = { "read_file", "deploy", "ping" }, extra = custom_tools() }
    local payload = export_all(tools)
    local sample = { build = "b1", target = json.null, mode = json.null, level = json.null, value = 7,
      steps = { { name = "s", retries = json.null, when = json.null },
                { name = "t", retries = 2, when = { after = "s" } } } }
    payload.samples = {
      { tool = "deploy", args = sample },
      { tool = "deploy", args = { build = "b2", target = { region = "eu", size = json.null, tags = json.null },
        mode = "safe", steps = json.null, value = "x", level = 2 } },
    }
    local r = check(payload)
    assert.same({}, r.errors)
    -- and the tool itself accepts what a strict-mode model sends
    local res = tools.deploy.execute(json.encode(sample))
    assert.is_false(res.is_error, res.content)
    assert.same({ build = "b1", value = 7, steps = { { name = "s" }, { name = "t", retries = 2, when = { after = "s" } } } },
      json.decode(res.content))
  end)

  it("encode zero tools as an empty array for every exporter", function()
    local none = sb:tools { only = {} }
    assert.equal(0, #none)
    local empty = {}
    for k, v in pairs(export_all(none)) do
      assert.equal("[]", json.encode(v), k)
      empty[k] = v
    end
    local payload = export_all(none)
    payload.empty = empty
    local r = check(payload)
    assert.same({}, r.errors)
  end)

  it("strict mode reaches into optional nested objects and makes optional enums nullable", function()
    local p = T.to_openai(sb:tools { only = { "deploy" }, extra = custom_tools() }, { strict = true })[1]["function"].parameters
    local target = p.properties.target
    assert.same({ "object", "null" }, target.type)
    assert.same({ "region", "size", "tags" }, target.required)
    assert.is_false(target.additionalProperties)
    assert.same({ "integer", "null" }, target.properties.size.type)
    local mode = p.properties.mode
    assert.same({ "string", "null" }, mode.type)
    assert.equal(3, #mode.enum)
    assert.equal(json.null, mode.enum[3])
    assert.same({ "name", "retries", "when" }, p.properties.steps.items.required)
    assert.same({ type = "null" }, p.properties.value.anyOf[3])
  end)
end)
