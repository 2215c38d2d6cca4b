-- sandbox.json: the codec of tools, exporters and the MCP server. Its own
-- encoder and decoder are checked against lua-cjson and dkjson on the same
-- values, and a plugged codec is used everywhere.
local sandbox = require "sandbox"
local json = sandbox.json
local own = json._own
local cjson = require "cjson"

-- the same JSON value: decoded by cjson and compared as values (the text of
-- an object depends on the table's key order, which differs between Luas)
local function same_value(x, y)
  if type(x) ~= type(y) then return false end
  if type(x) ~= "table" then return x == y end
  for k, v in pairs(x) do
    if not same_value(v, y[k]) then return false end
  end
  for k in pairs(y) do
    if x[k] == nil then return false end
  end
  return true
end

local function same_json(a, b)
  return same_value(cjson.decode(a), cjson.decode(b))
end

describe("sandbox.json", function()
  it("encodes arrays and objects by their __jsontype, empty ones included", function()
    assert.equal("[]", json.encode(setmetatable({}, json.ARRAY)))
    assert.equal("{}", json.encode(setmetatable({}, json.OBJECT)))
    assert.equal("{}", json.encode({}))
    assert.equal("[1,2,3]", json.encode({ 1, 2, 3 }))
    assert.equal('{"a":1,"b":[true,false,null]}', json.encode({ b = { true, false, json.null }, a = 1 }))
    assert.equal('{"1":"x","k":"y"}', json.encode({ [1] = "x", k = "y" }))
  end)

  it("escapes what JSON needs and keeps text valid UTF-8", function()
    assert.equal([["a\"b\\c\n\t\u0001\u007f"]], json.encode("a\"b\\c\n\t\1\127"))
    assert.equal('"é😀"', json.encode("é😀"))
    assert.equal('"a\239\191\189b"', json.encode("a\255b")) -- invalid byte -> U+FFFD
    assert.equal('"' .. ("\239\191\189"):rep(3) .. '"', json.encode("\237\160\128")) -- a lone surrogate
  end)

  it("writes integers as integers and refuses what JSON cannot hold", function()
    assert.equal("[0,-7,1.5,9007199254740992]", json.encode({ 0, -7, 1.5, 2 ^ 53 }))
    assert.has_error(function() json.encode(0 / 0) end, "json: cannot encode NaN or infinity")
    assert.has_error(function() json.encode({ f = print }) end, "json: cannot encode a function")
    local t = {}
    t.self = t
    assert.has_error(function() json.encode(t) end, "json: cannot encode a table that contains itself")
  end)

  local texts = {
    '{"a":[1,2,{"x":null}],"b":"\\u00e9\\ud83d\\ude00","c":-1.5e3,"d":true,"e":""}',
    '[]', '{}', '[[[]]]', '"\\"\\\\\\/\\b\\f\\n\\r\\t"', '0', '-0.25', '1E+2', '  {"k" : [ 1 , 2 ] }  ',
  }
  for _, s in ipairs(texts) do
    it("decodes like lua-cjson: " .. s, function()
      local v = assert(own.decode(s))
      assert.is_true(same_json(cjson.encode(v), s))
      assert.is_true(same_json(own.encode(v), s))
    end)
  end

  local bad = { '{"a":01}', "[1,]", '"abc', "{} x", "{'a':1}", "[1 2]", '"\\x"', "tru", "", "-", "1.", '{"a"}' }
  for _, s in ipairs(bad) do
    it("refuses malformed text with a position: " .. s, function()
      local v, err = own.decode(s)
      assert.is_nil(v)
      assert.is_string(err)
    end)
  end

  it("refuses nesting deeper than 200 levels instead of overflowing the stack", function()
    local v, err = own.decode(("["):rep(100000))
    assert.is_nil(v)
    assert.matches("nesting deeper than 200", err)
  end)

  it("round-trips random values the same way lua-cjson reads them", function()
    math.randomseed(7)
    local function gen(depth)
      local r = math.random(depth > 3 and 4 or 6)
      if r == 1 then return math.random(-1000, 1000)
      elseif r == 2 then return math.random() * 1e6
      elseif r == 3 then
        local t = {}
        for i = 1, math.random(0, 12) do t[i] = string.char(math.random(0, 127)) end
        return table.concat(t)
      elseif r == 4 then return math.random(2) == 1
      elseif r == 5 then
        local t = setmetatable({}, json.ARRAY)
        for i = 1, math.random(0, 4) do t[i] = gen(depth + 1) end
        return t
      else
        local t = setmetatable({}, json.OBJECT)
        for _ = 1, math.random(0, 4) do t["k" .. math.random(100)] = gen(depth + 1) end
        return t
      end
    end
    for _ = 1, 500 do
      local v = gen(0)
      local s = json.encode(v)
      assert.same(cjson.decode(s), own.decode(s))
      local back, err = own.decode(s)
      assert.is_nil(err)
      assert.equal(s, json.encode(back))
    end
  end)

  it("uses a plugged codec for tool calls, and restores the default", function()
    local dk = require "dkjson"
    local calls = 0
    json.use { name = "dkjson", decode = function(s) calls = calls + 1 return dk.decode(s) end }
    finally(function() json.use(nil) end)
    assert.equal("dkjson", json.codec())
    local t = sandbox.virtual { files = { a = "hello" } }:tools()
    local r = sandbox.tools.dispatch(t, { name = "read_file", arguments = '{"path":"a"}' })
    assert.equal("     1\thello", r.content)
    assert.equal(1, calls)
    json.use(nil)
    assert.is_not.equal("dkjson", json.codec())
    local ok, err = pcall(json.use, { encdoe = print })
    assert.is_false(ok)
    assert.matches("json.use: unknown field 'encdoe'", err)
  end)

  -- The tables the exporters return, encoded by the host's own codec (no
  -- sandbox.json in between): an empty schema object must stay {} and an
  -- empty list []. vim.json is checked inside Neovim (spec/neovim_spec.lua).
  describe("the exporters' tables, encoded by another codec", function()
    local sb = sandbox.virtual {}
    local no_params = sb:tools { only = { "process_list" } }
    -- a tool without parameters exists only with commands: made by define
    local bare = sandbox.tools.define { name = "ping", description = "Answer pong.", execute = function() return "pong" end }
    local tools = sb:tools { only = { "ping" }, extra = { bare } }
    assert(#no_params == 0) -- the VirtualSandbox has no commands
    local codecs = {
      { "sandbox.json", json.encode, arrays = true },
      { "dkjson", require("dkjson").encode, arrays = true },
      -- lua-cjson tells an empty array by cjson.array_mt / empty_array_mt
      -- (OpenResty's 2.1.0.6 and later); Debian 12's 2.1.0 has neither and
      -- writes every empty table as {}
      { "lua-cjson " .. tostring(cjson._VERSION), cjson.encode, arrays = (cjson.array_mt or cjson.empty_array_mt) ~= nil },
    }
    for _, c in ipairs(codecs) do
      it(c[1] .. ": an empty properties object is {}", function()
        local text = c[2](sandbox.tools.to_openai(tools))
        assert.truthy(text:find('"properties":{}', 1, true), text)
        text = c[2](sandbox.tools.to_mcp(tools))
        assert.truthy(text:find('"properties":{}', 1, true), text)
      end)
      it(c[1] .. ": an empty tool list is " .. (c.arrays and "[]" or "{} (this lua-cjson cannot write [])"), function()
        assert.equal(c.arrays and "[]" or "{}", c[2](sandbox.tools.to_anthropic({})))
      end)
    end
  end)
end)
