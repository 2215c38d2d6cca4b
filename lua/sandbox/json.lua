-- JSON for tool calls, exporters and the MCP server: one codec, pluggable.
--
-- The default encoder is this module's own: it honours `__jsontype`
-- ("array" / "object") on metatables, so an empty tool list encodes as []
-- and an empty schema object as {}, sorts object keys (stable output keeps
-- a provider's prompt cache warm), and replaces invalid UTF-8 with U+FFFD
-- (a JSON text must be UTF-8). Decoding uses lua-cjson when it is
-- installed (fast), else this module's own decoder. A host with another
-- codec (Neovim's vim.json, dkjson) plugs it in with json.use{...}.
local M = {}

local type, pairs, ipairs, tostring, tonumber, error = type, pairs, ipairs, tostring, tonumber, error
local getmetatable, pcall = getmetatable, pcall
local fmt, byte, char, concat, sort = string.format, string.byte, string.char, table.concat, table.sort
local floor, huge = math.floor, math.huge

local core_ok, core = pcall(require, "sandbox.core")

--- JSON null as decoders deliver it: a light userdata (lua-cjson's cjson.null
--- is the same value). Any userdata encodes as null.
M.null = core_ok and core.null or nil

-- Codecs a host may encode our tables with tell an empty array from an
-- empty object by the table's metatable, each by its own: dkjson and this
-- module by `__jsontype`, Neovim's vim.json by identity with vim.empty_dict()'s
-- metatable (else {} is []), lua-cjson by identity with cjson.array_mt or
-- cjson.empty_array_mt (OpenResty's 2.1.0.6 and later; else [] is {}).
-- ARRAY and OBJECT are those very tables where the host has them, with
-- `__jsontype` added, so one table encodes right with every codec present.
local function host_mt(kind)
  if kind == "object" then
    local vim = rawget(_G, "vim")
    if type(vim) == "table" and type(vim.empty_dict) == "function" then
      local mt = getmetatable(vim.empty_dict())
      if type(mt) == "table" then return mt end
    end
    return {}
  end
  local ok, cjson = pcall(require, "cjson")
  local mt = ok and type(cjson) == "table" and (cjson.array_mt or cjson.empty_array_mt)
  return type(mt) == "table" and mt or {}
end

M.ARRAY = host_mt("array")
M.ARRAY.__jsontype = "array"
M.OBJECT = host_mt("object")
M.OBJECT.__jsontype = "object"

-- ---- encoding ---------------------------------------------------------------

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
              ["\r"] = "\\r", ["\t"] = "\\t" }
for i = 0, 31 do
  local c = char(i)
  ESC[c] = ESC[c] or fmt("\\u%04x", i)
end
ESC["\127"] = "\\u007f"

-- Replace every byte that is not part of a well-formed UTF-8 sequence.
local function valid_utf8(s)
  if not s:find("[\128-\255]") then return s end
  local out, i, n, start = {}, 1, #s, 1
  while i <= n do
    local c = byte(s, i)
    local len = c < 0x80 and 1 or (c >= 0xC2 and c <= 0xDF) and 2 or (c >= 0xE0 and c <= 0xEF) and 3
      or (c >= 0xF0 and c <= 0xF4) and 4 or 0
    local ok = len > 0 and i + len - 1 <= n
    if ok and len > 1 then
      local c2 = byte(s, i + 1)
      local lo, hi = 0x80, 0xBF
      if c == 0xE0 then lo = 0xA0 elseif c == 0xED then hi = 0x9F
      elseif c == 0xF0 then lo = 0x90 elseif c == 0xF4 then hi = 0x8F end
      ok = c2 >= lo and c2 <= hi
      for j = i + 2, i + len - 1 do
        local cj = byte(s, j)
        ok = ok and cj >= 0x80 and cj <= 0xBF
      end
    end
    if ok then
      i = i + len
    else
      out[#out + 1] = s:sub(start, i - 1)
      out[#out + 1] = "\239\191\189"
      i = i + 1
      start = i
    end
  end
  if start == 1 then return s end
  out[#out + 1] = s:sub(start)
  return concat(out)
end

local function quote(s)
  return '"' .. valid_utf8(s):gsub('[%c"\\]', ESC) .. '"'
end

local function number(v)
  if v ~= v or v == huge or v == -huge then error("json: cannot encode NaN or infinity", 0) end
  if v == floor(v) and v >= -2 ^ 53 and v <= 2 ^ 53 then return fmt("%d", v) end
  return fmt("%.17g", v)
end

local function is_array(t, mt)
  local kind = mt and mt.__jsontype
  if kind == "array" then return true end
  if kind == "object" or t[1] == nil then return false end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

local encode_value

local function encode_table(t, out, depth, seen)
  if seen[t] then error("json: cannot encode a table that contains itself", 0) end
  if depth > 200 then error("json: nesting deeper than 200 levels", 0) end
  seen[t] = true
  local mt = getmetatable(t)
  if is_array(t, mt) then
    out[#out + 1] = "["
    for i = 1, #t do
      if i > 1 then out[#out + 1] = "," end
      encode_value(t[i], out, depth + 1, seen)
    end
    out[#out + 1] = "]"
  else
    local keys = {}
    for k in pairs(t) do
      local kt = type(k)
      if kt ~= "string" and kt ~= "number" then error("json: object keys must be strings, got " .. kt, 0) end
      keys[#keys + 1] = tostring(k)
    end
    sort(keys)
    out[#out + 1] = "{"
    for i, k in ipairs(keys) do
      if i > 1 then out[#out + 1] = "," end
      out[#out + 1] = quote(k)
      out[#out + 1] = ":"
      local v = t[k]
      if v == nil then v = t[tonumber(k)] end
      encode_value(v, out, depth + 1, seen)
    end
    out[#out + 1] = "}"
  end
  seen[t] = nil
end

function encode_value(v, out, depth, seen)
  local t = type(v)
  if t == "string" then out[#out + 1] = quote(v)
  elseif t == "number" then out[#out + 1] = number(v)
  elseif t == "boolean" then out[#out + 1] = v and "true" or "false"
  elseif t == "nil" or t == "userdata" then out[#out + 1] = "null"
  elseif t == "table" then encode_table(v, out, depth, seen)
  else error("json: cannot encode a " .. t, 0) end
end

local function own_encode(v)
  local out = {}
  encode_value(v, out, 0, {})
  return concat(out)
end

-- ---- decoding ---------------------------------------------------------------

local function decode_error(s, pos, what)
  local line, col = 1, 1
  for i = 1, pos - 1 do
    if byte(s, i) == 10 then line, col = line + 1, 1 else col = col + 1 end
  end
  error(fmt("%s at line %d column %d", what, line, col), 0)
end

local function utf8_char(cp)
  if cp < 0x80 then return char(cp) end
  if cp < 0x800 then return char(0xC0 + floor(cp / 64), 0x80 + cp % 64) end
  if cp < 0x10000 then
    return char(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return char(0xF0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64, 0x80 + floor(cp / 64) % 64,
    0x80 + cp % 64)
end

local UNESC = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

local decode_at

local function skip(s, pos)
  return s:find("[^ \t\r\n]", pos) or #s + 1
end

local function decode_string(s, pos)
  local out, start = {}, pos + 1
  local i = start
  while true do
    local j = s:find('["\\%c]', i)
    if not j then decode_error(s, pos, "unterminated string") end
    local c = s:sub(j, j)
    if c == '"' then
      out[#out + 1] = s:sub(i, j - 1)
      return concat(out), j + 1
    elseif c == "\\" then
      out[#out + 1] = s:sub(i, j - 1)
      local e = s:sub(j + 1, j + 1)
      if e == "u" then
        local hex = s:match("^%x%x%x%x", j + 2)
        if not hex then decode_error(s, j, "bad \\u escape") end
        local cp = tonumber(hex, 16)
        local nxt = j + 6
        if cp >= 0xD800 and cp <= 0xDBFF then
          local lo = s:match("^\\u(%x%x%x%x)", nxt)
          local lv = lo and tonumber(lo, 16)
          if lv and lv >= 0xDC00 and lv <= 0xDFFF then
            cp = 0x10000 + (cp - 0xD800) * 1024 + (lv - 0xDC00)
            nxt = nxt + 6
          else
            cp = 0xFFFD
          end
        elseif cp >= 0xDC00 and cp <= 0xDFFF then
          cp = 0xFFFD
        end
        out[#out + 1] = utf8_char(cp)
        i = nxt
      elseif UNESC[e] then
        out[#out + 1] = UNESC[e]
        i = j + 2
      else
        decode_error(s, j, "bad escape")
      end
    else
      decode_error(s, j, "control character in a string")
    end
  end
end

local function decode_array(s, pos, depth)
  local out, n = setmetatable({}, M.ARRAY), 0
  pos = skip(s, pos + 1)
  if s:sub(pos, pos) == "]" then return out, pos + 1 end
  while true do
    local v
    v, pos = decode_at(s, pos, depth + 1)
    n = n + 1
    out[n] = v
    pos = skip(s, pos)
    local c = s:sub(pos, pos)
    if c == "]" then return out, pos + 1 end
    if c ~= "," then decode_error(s, pos, "expected ',' or ']'") end
    pos = skip(s, pos + 1)
  end
end

local function decode_object(s, pos, depth)
  local out = setmetatable({}, M.OBJECT)
  pos = skip(s, pos + 1)
  if s:sub(pos, pos) == "}" then return out, pos + 1 end
  while true do
    if s:sub(pos, pos) ~= '"' then decode_error(s, pos, "expected a string key") end
    local k
    k, pos = decode_string(s, pos)
    pos = skip(s, pos)
    if s:sub(pos, pos) ~= ":" then decode_error(s, pos, "expected ':'") end
    local v
    v, pos = decode_at(s, skip(s, pos + 1), depth + 1)
    out[k] = v
    pos = skip(s, pos)
    local c = s:sub(pos, pos)
    if c == "}" then return out, pos + 1 end
    if c ~= "," then decode_error(s, pos, "expected ',' or '}'") end
    pos = skip(s, pos + 1)
  end
end

function decode_at(s, pos, depth)
  if depth > 200 then decode_error(s, pos, "nesting deeper than 200 levels") end
  local c = s:sub(pos, pos)
  if c == "{" then return decode_object(s, pos, depth) end
  if c == "[" then return decode_array(s, pos, depth) end
  if c == '"' then return decode_string(s, pos) end
  local int = s:match("^-?%d+", pos)
  if int then
    if int:find("^-?0%d") then decode_error(s, pos, "bad number (leading zero)") end
    local p = pos + #int
    if s:sub(p, p) == "." then
      local frac = s:match("^%.%d+", p)
      if not frac then decode_error(s, p, "bad number (no digit after '.')") end
      p = p + #frac
    end
    if s:find("^[eE]", p) then
      local ex = s:match("^[eE][-+]?%d+", p)
      if not ex then decode_error(s, p, "bad number (exponent)") end
      p = p + #ex
    end
    return tonumber(s:sub(pos, p - 1)), p
  end
  if s:sub(pos, pos + 3) == "true" then return true, pos + 4 end
  if s:sub(pos, pos + 4) == "false" then return false, pos + 5 end
  if s:sub(pos, pos + 3) == "null" then return M.null, pos + 4 end
  decode_error(s, pos, c == "" and "unexpected end of the text" or "unexpected character")
end

local function own_decode(s)
  local ok, v, pos = pcall(decode_at, s, skip(s, 1), 0)
  if not ok then return nil, v end
  if skip(s, pos) <= #s then return nil, "text after the value at position " .. pos end
  return v
end

-- ---- the codec in use ---------------------------------------------------------

local codec

local function default_codec()
  local ok, cjson = pcall(require, "cjson.safe")
  local c = { name = "sandbox", encode = own_encode, decode = own_decode }
  if ok and type(cjson) == "table" and cjson.decode then
    c.name = "lua-cjson (decode) + sandbox (encode)"
    local dec = cjson.new and cjson.new() or cjson
    if dec.decode_max_depth then dec.decode_max_depth(200) end
    c.decode = function(s)
      local v, err = dec.decode(s)
      if v == nil and err then return nil, err end
      return v
    end
  end
  return c
end

--- Encode a value; raises on values JSON cannot hold (functions, NaN,
--- cycles). The default honours __jsontype metatables (ARRAY, OBJECT).
function M.encode(v)
  codec = codec or default_codec()
  return codec.encode(v)
end

--- Decode a JSON text: the value, or nil, message.
function M.decode(s)
  if type(s) ~= "string" then return nil, "expected a JSON string, got " .. type(s) end
  codec = codec or default_codec()
  local ok, v, err = pcall(codec.decode, s)
  if not ok then return nil, tostring(v) end
  if v == nil and err ~= nil then return nil, tostring(err) end
  return v
end

--- Use another codec: {encode = fn, decode = fn [, null = value, name =]},
--- e.g. {encode = vim.json.encode, decode = vim.json.decode, null = vim.NIL}.
--- Either function may be left out to keep the default for it. nil restores
--- the default codec.
function M.use(c)
  if c == nil then
    codec = nil
    M.null = core_ok and core.null or nil
    return
  end
  if type(c) ~= "table" then error("json.use: expects a table {encode =, decode =, null =}", 2) end
  for k in pairs(c) do
    if k ~= "encode" and k ~= "decode" and k ~= "null" and k ~= "name" then
      error(fmt("json.use: unknown field '%s' (allowed: encode, decode, null, name)", tostring(k)), 2)
    end
  end
  for _, k in ipairs { "encode", "decode" } do
    if c[k] ~= nil and type(c[k]) ~= "function" then error("json.use: " .. k .. " must be a function", 2) end
  end
  local base = default_codec()
  codec = { name = c.name or "custom", encode = c.encode or base.encode, decode = c.decode or base.decode }
  if c.null ~= nil then M.null = c.null end
end

--- The codec in use, by name.
function M.codec()
  codec = codec or default_codec()
  return codec.name
end

--- Is v a JSON null as any codec delivers it?
function M.is_null(v)
  return v == nil or v == M.null or type(v) == "userdata"
end

--- s with every byte that is not well-formed UTF-8 replaced by U+FFFD (s
--- itself when it is valid: `json.utf8(s) == s` tests validity).
M.utf8 = valid_utf8

M._own = { encode = own_encode, decode = own_decode } -- for the tests

return M
