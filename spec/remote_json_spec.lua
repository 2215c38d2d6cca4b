-- The remote backend's JSON and base64 (csrc/remote/json.c, SPEC §15) -- not
-- sandbox.json, the Lua codec of the tools (spec/json_spec.lua) -- checked
-- against Node's JSON.parse and Buffer (spec/js/json/check.mjs): the same
-- documents accepted and refused, and a canonical form that means what the
-- input meant; hand-written cases for each rule, then seeded random ones.
local json = require "sandbox.json"
local sh = require "support.sh"

local ECHO = sh.build .. "/test/json_echo"
local CHECK = (os.getenv("PWD") or ".") .. "/spec/js/json/check.mjs"

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
local function unhex(h) return (h:gsub("..", function(x) return string.char(tonumber(x, 16)) end)) end

-- Our answers to the cases, one json_echo process for all of them.
local function ours(mode, inputs)
  local text = {}
  for i, s in ipairs(inputs) do text[i] = hex(s) .. "\n" end
  local ok, out = sh.run_on_file(table.concat(text), ECHO .. " " .. mode .. " < %s")
  assert(ok, out)
  local lines = {}
  for l in (out .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  if lines[#lines] == "" and #lines > #inputs then lines[#lines] = nil end
  assert.equal(#inputs, #lines)
  return lines
end

-- Node's verdict on cases {in = hex, out = answer, mode =, bytes =}.
local function node_agrees(cases)
  local ok, out = sh.run_on_file(json.encode(cases), "node " .. sh.quote(CHECK) .. " < %s")
  assert(ok, out)
  assert.matches("^ok %d+\n?$", out)
end

local function judge(inputs)
  local answers = ours("json", inputs)
  local cases = {}
  for i, s in ipairs(inputs) do cases[i] = { ["in"] = hex(s), out = answers[i] } end
  node_agrees(cases)
  return answers
end

local function nest(n) return ("["):rep(n) .. ("]"):rep(n) end

describe("JSON (the remote protocol's codec)", function()
  local VALID = {
    "{}", "[]", "0", "-0", "1.5e-3", "-12E+2", "123456789012345678901234567890", "true", "false",
    "null", '""', ' { "a" : [ 1 , 2 , { "b" : null } ] } ', '"\\u00e9\\u20ac\\ud83d\\ude00"',
    '"\\"\\\\\\/\\b\\f\\n\\r\\t"', '"é€😀"', '{"a":1,"a":2}', '"\\u0000x"', '{"\\u0000":1}',
    '[1,[2,[3,[4]]]]', '"\127"', nest(128), '{"exitCode":-1,"pid":"4294967296"}',
  }
  local INVALID = {
    "", " ", "[1,]", "{,}", '{"a":1,}', "01", "1.", ".5", "+1", "-", "1e", "1e+", "0x10", "NaN",
    "Infinity", "'a'", '"\\x41"', '"\\u12"', '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"a\nb"',
    '"\1"', '"\255"', '"\192\175"', '"\237\160\128"', '"\244\144\128\128"', "[1 2]", '{"a" 1}',
    "{1:2}", "tru", "nul", "[", "{", '"abc', "[1]]", "1 2", "/* c */ 1", "[1] // c", nest(129),
    '{"a":}', "\239\187\191{}",
  }

  it("accepts what Node's JSON.parse accepts, with the same meaning", function()
    for i, a in ipairs(judge(VALID)) do assert.is_nil(a:match("^!"), VALID[i]) end
  end)

  it("refuses what RFC 8259 refuses, naming the byte and the reason", function()
    local answers = judge(INVALID)
    for i, a in ipairs(answers) do assert.truthy(a:match("^!invalid JSON at byte %d+: "), INVALID[i]) end
    assert.equal("!invalid JSON at byte 3: ',' or ']' expected", answers[28])
    assert.equal("!invalid JSON at byte 0: nested too deeply", (answers[40]:gsub("byte %d+", "byte 0")))
  end)

  it("writes a canonical form: no white space, strings re-escaped, numbers as written", function()
    local a = ours("json", { ' { "k" : [ 1.50 , "a\\u0001\\n" ] } ' })
    assert.equal('{"k":[1.50,"a\\u0001\\n"]}', unhex(a[1]))
  end)

  it("agrees with Node on 3000 seeded random documents and their one-byte mutations", function()
    math.randomseed(7)
    local ALPHA = { "a", "Z", " ", "\\\"", "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "é", "€", "😀", "\\/", "0" }
    local function gen(depth)
      local r = math.random(depth > 4 and 5 or 8)
      if r == 1 then return tostring(math.random(-1000, 1000)) end
      if r == 2 then return ("%d.%de%d"):format(math.random(0, 9), math.random(0, 99), math.random(-5, 5)) end
      if r == 3 then return ({ "true", "false", "null" })[math.random(3)] end
      if r <= 5 then
        local t = {}
        for k = 1, math.random(0, 6) do t[k] = ALPHA[math.random(#ALPHA)] end
        return '"' .. table.concat(t) .. '"'
      end
      local t = {}
      local obj = r == 8
      for k = 1, math.random(0, 4) do
        t[k] = (obj and ('"k%d" : '):format(math.random(3)) or "") .. gen(depth + 1)
      end
      return (obj and "{" or "[") .. table.concat(t, " , ") .. (obj and "}" or "]")
    end
    local docs = {}
    for _ = 1, 1500 do
      local d = gen(0)
      docs[#docs + 1] = d
      local at = math.random(#d)
      docs[#docs + 1] = d:sub(1, at - 1) .. string.char(math.random(0, 255)) .. d:sub(at + 1)
    end
    local answers = judge(docs)
    local accepted = 0
    for _, a in ipairs(answers) do if not a:match("^!") then accepted = accepted + 1 end end
    assert.is_true(accepted > 1500 and accepted < 3000, "the mutations refuse some: " .. accepted)
  end)
end)

describe("base64 (bytes in the remote protocol's JSON)", function()
  it("encodes as Node does and decodes Node's base64 and base64url, padded or not", function()
    math.randomseed(11)
    local inputs = {}
    for n = 0, 64 do
      local t = {}
      for k = 1, n do t[k] = string.char(math.random(0, 255)) end
      inputs[#inputs + 1] = table.concat(t)
    end
    local enc = ours("b64e", inputs)
    local cases = {}
    for i, s in ipairs(inputs) do cases[#cases + 1] = { ["in"] = hex(s), out = enc[i], mode = "b64e" } end
    node_agrees(cases)
    -- our encoding, and its URL-safe unpadded spelling, decode back to the bytes
    local texts, want = {}, {}
    for i, s in ipairs(inputs) do
      local std = unhex(enc[i])
      texts[#texts + 1], want[#want + 1] = std, s
      texts[#texts + 1], want[#want + 1] = (std:gsub("%+", "-"):gsub("/", "_"):gsub("=", "")), s
    end
    local dec = ours("b64d", texts)
    cases = {}
    for i = 1, #texts do cases[i] = { ["in"] = hex(texts[i]), out = dec[i], mode = "b64d", bytes = hex(want[i]) } end
    node_agrees(cases)
  end)

  it("refuses text that is not base64", function()
    local BAD = { "A", "AAAAA", "A=AA", "AB=A", "****", "QQ", "QR==", "QUI", "Q U=", "QUJD\n" }
    local want = { "!EINVAL", "!EINVAL", "!EINVAL", "!EINVAL", "!EINVAL", "!EINVAL", "!EINVAL", "!EINVAL", "!EINVAL", "!EINVAL" }
    local got = ours("b64d", BAD)
    -- "QQ" and "QUI" are valid unpadded spellings; the rest are not
    want[6], want[8] = hex("A"), hex("AB")
    assert.same(want, got)
  end)
end)
