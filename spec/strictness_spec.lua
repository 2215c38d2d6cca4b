-- Nothing silently accepted: a typo in a tool option, an exporter option or
-- a custom tool's schema raises at the call, naming the key and suggesting
-- the near miss; messages say what is wrong in the caller's terms.
local sandbox = require "sandbox"
local backends = require "support.backends"
local T, S = sandbox.tools, sandbox.tools.schema

local function raises(fn, pattern)
  local ok, err = pcall(fn)
  assert.is_false(ok, "did not raise")
  assert.matches(pattern, tostring(err))
  return tostring(err)
end

describe("tool options", function()
  local sb = sandbox.virtual { files = { ["a.txt"] = "x" } }

  local typos = {
    { "exclude", { exclude = { "delet_file" } }, "option 'exclude' names an unknown tool 'delet_file' %(did you mean 'delete_file'%?%)" },
    { "only", { only = { "read_fille" } }, "option 'only' names an unknown tool 'read_fille' %(did you mean 'read_file'%?%)" },
    { "rename", { rename = { raed_file = "view" } }, "option 'rename' names an unknown tool 'raed_file' %(did you mean 'read_file'%?%)" },
    { "an option name", { exlude = { "delete_file" } }, "unknown option 'exlude' %(did you mean 'exclude'%?%)" },
    { "only as a map", { only = { read_file = true } }, "option 'only' must be an array of tool names" },
  }
  for _, c in ipairs(typos) do
    it("raise for a typo in " .. c[1] .. ", at the caller's line", function()
      local err = raises(function() sb:tools(c[2]) end, c[3])
      assert.matches("strictness_spec%.lua:%d+:", err)
    end)
  end

  it("accept every built-in name, also of tools this sandbox does not offer", function()
    local t = sb:tools { exclude = { "run_command", "delete_file" } } -- virtual: no run_command at all
    assert.is_nil(t.delete_file)
    assert.is_table(t.read_file)
  end)

  it("accept the names of custom tools", function()
    local x = T.define { name = "ping", description = "Ping.", read_only = true, execute = function() return "pong" end }
    assert.is_nil(sb:tools { extra = { x }, exclude = { "ping" } }.ping)
    assert.is_table(sb:tools { extra = { x }, only = { "ping" } }.ping)
  end)
end)

describe("exporters", function()
  local sb = sandbox.virtual {}
  local tools = sb:tools()

  it("raise for an unknown option with a suggestion", function()
    raises(function() T.to_openai(tools, { stric = true }) end, "to_openai: unknown option 'stric' %(did you mean 'strict'%?%)")
    raises(function() T.to_openai(tools, { api = "response" }) end, "option 'api' must be 'chat' or 'responses'")
    raises(function() T.to_anthropic(tools, { strict = true }) end, "to_anthropic: unknown option 'strict'")
    raises(function() T.to_mcp(tools, { x = 1 }) end, "to_mcp: unknown option 'x'")
  end)

  it("raise when given a sandbox or a table that is not a tool list", function()
    raises(function() T.to_openai(sb) end, "to_openai: expects the tool table from sb:tools%(%), got a userdata %(a sandbox%? call sb:tools%(%) first%)")
    raises(function() T.to_anthropic({ { name = "x" } }) end, "to_anthropic: element 1 is not a tool")
    raises(function() T.to_mcp({ foo = 1 }) end, "to_mcp: expects the tool table from sb:tools%(%); key 'foo' is not a tool")
  end)
end)

describe("tools.define", function()
  local function define(params)
    return function()
      T.define { name = "x", description = "X.", execute = function() end, parameters = params }
    end
  end

  local bad = {
    { "an unknown type", { type = "object", properties = { a = { type = "strng" } } },
      "parameters%.properties%.a: unknown type 'strng' %(did you mean 'string'%?%)" },
    { "an unknown keyword", { type = "object", properties = { a = { type = "string", descripton = "d" } } },
      "unknown schema keyword 'descripton' %(did you mean 'description'%?%)" },
    { "required naming a missing property", { type = "object", properties = {}, required = { "a" } },
      "required names 'a', which is not among its properties" },
    { "an array without items", { type = "object", properties = { a = { type = "array" } } },
      "parameters%.properties%.a: an array needs items" },
    { "a non-object root", { type = "string" }, "parameters must be an object schema" },
    { "an empty enum", { type = "object", properties = { a = { type = "string", enum = {} } } },
      "enum must be a non%-empty array" },
    { "nested trouble", { type = "object", properties = { a = { type = "array", items = { type = "objct" } } } },
      "parameters%.properties%.a%.items: unknown type 'objct' %(did you mean 'object'%?%)" },
  }
  for _, c in ipairs(bad) do
    it("raises at definition for " .. c[1], function() raises(define(c[2]), c[3]) end)
  end

  it("accepts what the exporters carry: unions, anyOf, enums, nested objects", function()
    define(S.object({
      a = { type = { "string", "null" } },
      b = { anyOf = { S.string("s"), S.integer("i") } },
      c = S.string("e", { enum = { "x", "y" } }),
      d = S.object({ e = S.array(S.object({ f = S.number("n") })) }),
    }))()
  end)
end)

describe("messages", function()
  it("dispatch of a call without a name says so", function()
    local r = T.dispatch(sandbox.virtual {}:tools(), { foo = 1 })
    assert.is_true(r.is_error)
    assert.matches("The tool call has no tool name", r.content)
    assert.is_nil(r.content:find("nil", 1, true))
  end)

  it("dispatch of a misspelt tool suggests the right one", function()
    local r = T.dispatch(sandbox.virtual {}:tools(), { name = "read_fil", arguments = {} })
    assert.matches("There is no tool named read_fil %(did you mean 'read_file'%?%)", r.content)
  end)

  it("parse_size refuses a fraction of a byte", function()
    local v, msg = sandbox.parse_size("1.5")
    assert.is_nil(v)
    assert.matches("not a whole number of bytes", msg)
    assert.equal(1536, sandbox.parse_size("1.5KB"))
    assert.is_nil(sandbox.parse_size(1.5))
    assert.has_error(function() sandbox.virtual { max_total_bytes = "1.5" } end)
  end)

  it("a size beyond what this Lua holds exactly is refused, not rounded", function()
    if math.tointeger then -- 5.3, 5.4: 64-bit integers
      assert.is_truthy(sandbox.virtual { max_read_bytes = 2 ^ 60 })
    else -- 5.1, LuaJIT: doubles, exact up to 2^53
      local ok, err = pcall(sandbox.virtual, { max_read_bytes = 2 ^ 60 })
      assert.is_false(ok)
      assert.matches("max_read_bytes' is too large for this Lua %(numbers are doubles: at most 2%^53%)", err)
      assert.has_error(function() sandbox.virtual { max_total_bytes = "2EB" } end)
    end
    assert.has_error(function() sandbox.virtual { max_read_bytes = 2 ^ 64 } end)
    assert.is_truthy(sandbox.virtual { max_read_bytes = 2 ^ 52 })
  end)

  it("an invalid search pattern says what is wrong with it", function()
    local v, msg, code = sandbox.virtual {}:grep("[")
    assert.is_nil(v)
    assert.equal("EINVAL", code)
    assert.matches("invalid regular expression '%[': missing terminating %] for character class at offset 1", msg)
    assert.is_nil(msg:find("Invalid regular expression", 1, true))
  end)

  it("use after dispose points at the caller, not into the Lua layer", function()
    local sb = assert(sandbox.container { base_dir = backends.tmpdir("msg") })
    sb:dispose()
    for _, call in ipairs {
      function() sb:exec("true") end,
      function() sb:exec_shell("true") end,
      function() sb:tools() end,
      function() sb:http_get("http://x/") end,
      function() sb:read_file("a") end,
    } do
      local err = raises(call, "attempt to use a disposed sandbox")
      assert.matches("^[^\n]*strictness_spec%.lua:%d+:", err)
      assert.is_nil(err:find("sandbox/", 1, true), err)
    end
  end)

  it("tool errors never show the model internal file paths", function()
    local boom = T.define { name = "boom", description = "Fails.", read_only = true,
      execute = function() error("the disk is on fire") end }
    local t = sandbox.virtual {}:tools { extra = { boom },
      approve = function() error("approval service down") end }
    local r = t.boom.execute({})
    assert.is_true(r.is_error)
    assert.matches("boom failed unexpectedly: the disk is on fire", r.content)
    assert.is_nil(r.content:find("%.lua:%d+"), r.content)
    r = t.write_file.execute({ path = "a", content = "b" })
    assert.matches("the approval check failed %(approval service down%)", r.content)
    assert.is_nil(r.content:find("%.lua:%d+"), r.content)
  end)
end)

-- Found while attacking the confinement: options that used to be cut,
-- wrapped or read as their opposite. Each now raises (or binds exactly).
describe("sandbox and command options", function()
  local confine = os.getenv("SANDBOX_TEST_UNCONFINED") == nil -- valgrind: see the Makefile
  local function container(extra)
    local o = { base_dir = backends.tmpdir("opts"), confine = confine }
    for k, v in pairs(extra or {}) do o[k] = v end
    return sandbox.container(o)
  end

  local refused = {
    { "a NUL inside a read root (\"/\\0x\" used to serve the host's /)", { read_roots = { "/\0x" } }, "option 'read_roots' element 1 must not contain NUL" },
    { "a NUL inside a read path", { read_paths = { "/usr\0/x" } }, "option 'read_paths' element 1 must not contain NUL" },
    { "read_roots with a hole", { read_roots = { "/usr", nil, "/opt" } }, "option 'read_roots' must be an array of strings %(no holes, no other keys%): element 2 is nil" },
    { "an exec_timeout of math.huge (used to kill at once)", { exec_timeout = math.huge }, "option 'exec_timeout' must be at most a year of seconds" },
    { "an exec_timeout of 1e19", { exec_timeout = 1e19 }, "option 'exec_timeout' must be at most a year of seconds" },
    { "an exec_timeout of NaN", { exec_timeout = 0 / 0 }, "option 'exec_timeout' must be a positive number of seconds" },
    { "a kill_grace of math.huge", { kill_grace = math.huge }, "option 'kill_grace' must be at most a year of seconds" },
    { "a file_size_limit of 0 (used to mean no limit)", { file_size_limit = 0 }, "option 'file_size_limit' must be at least 1 byte" },
    { "a tmp_size below 1MB", { confine = { tmp_size = 1000 } }, "option 'confine' tmp_size must be at least 1MB" },
    { "an unknown confine key", { confine = { namespace = false } }, "unknown key 'namespace' .*did you mean 'namespaces'" },
  }
  for _, c in ipairs(refused) do
    it("refuse " .. c[1], function()
      raises(function() container(c[2]) end, c[3])
    end)
  end

  it("read_file never answers from a root a NUL cut short", function()
    assert.is_false(pcall(container, { read_roots = { "/\0x" } }))
    local sb = assert(container())
    assert.equal("ENOENT", select(3, sb:read_file("etc/shadow")))
    sb:dispose()
  end)

  local calls = {
    { "a timeout of math.huge", function(sb) return sb:exec("true", {}, { timeout = math.huge }) end, "option 'timeout' must be at most a year of seconds" },
    { "a timeout of 1e19", function(sb) return sb:exec("true", {}, { timeout = 1e19 }) end, "option 'timeout' must be at most a year of seconds" },
    { "args with a hole (used to run `echo a`)", function(sb) return sb:exec("echo", { "a", nil, "c" }) end, "exec: args must be an array of strings %(no holes, no other keys%): args%[2%] is nil" },
    { "args with a non-array key", function(sb) return sb:exec("echo", { "a", x = "b" }) end, "args must be an array of strings %(no holes, no other keys%)" },
    { "a NUL inside an argument", function(sb) return sb:exec("echo", { "a\0b" }) end, "args%[1%] contains a NUL byte" },
  }
  for _, c in ipairs(calls) do
    it("refuse " .. c[1] .. " at the call, running nothing", function()
      local sb = assert(container())
      raises(function() c[2](sb) end, c[3])
      assert.same({}, sb:readdir(".")) -- nothing ran, nothing written
      sb:dispose()
    end)
  end

  it("honour the longest timeout accepted: the command runs to its end", function()
    local sb = assert(container { exec_timeout = 86400 * 365, kill_grace = 86400 * 365 })
    local r = assert(sb:exec("sh", { "-c", "sleep 0.2; echo done" }, { timeout = 86400 * 365 }))
    assert.equal(0, r.exit_code)
    assert.is_false(r.timed_out)
    assert.equal("done\n", r.stdout)
    sb:dispose()
  end)

  it("bind a file_size_limit of one byte exactly", function()
    local sb = assert(container { file_size_limit = 1 })
    local r = assert(sb:exec("sh", { "-c", "printf x > one; printf xy > two" }))
    assert.equal("x", sb:read_file("one"))
    assert.equal("x", sb:read_file("two"), "the second byte was written")
    assert.is_true(r.exit_code ~= 0 or r.signal ~= nil)
    sb:dispose()
  end)
end)
