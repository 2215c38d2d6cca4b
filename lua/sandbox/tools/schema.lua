-- JSON Schemas for tool parameters: building them, checking that a custom
-- tool's schema is one the providers accept, checking a model's arguments
-- against it, and the OpenAI strict-mode form.
--
-- Empty objects must encode as {} (never []): object tables carry the
-- metatable OBJECT (__jsontype = "object", honoured by sandbox.json and
-- dkjson), arrays ARRAY; empty `required` lists are left out.
local json = require "sandbox.json"

local M = {}

local type, pairs, ipairs, tostring, error, fmt = type, pairs, ipairs, tostring, error, string.format
local floor, concat, sort = math.floor, table.concat, table.sort

M.OBJECT = json.OBJECT
M.ARRAY = json.ARRAY

local function obj(t) return setmetatable(t or {}, M.OBJECT) end
local function arr(t) return setmetatable(t or {}, M.ARRAY) end

M.is_null = json.is_null
local is_null = json.is_null

local function with(s, extra)
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

function M.string(desc, extra) return with({ type = "string", description = desc }, extra) end
function M.integer(desc, extra) return with({ type = "integer", description = desc }, extra) end
function M.number(desc, extra) return with({ type = "number", description = desc }, extra) end
function M.boolean(desc) return { type = "boolean", description = desc } end
function M.array(items, desc, extra) return with({ type = "array", items = items, description = desc }, extra) end

--- An object schema; `required` lists property names (may be empty).
function M.object(props, required, desc)
  local s = obj { type = "object", properties = obj(props), additionalProperties = false }
  if required and #required > 0 then s.required = arr(required) end
  s.description = desc
  return s
end

-- ---- checking a schema (tools.define) -----------------------------------------

local TYPES = { "string", "integer", "number", "boolean", "array", "object", "null" }
local KEYWORDS = { "type", "description", "title", "properties", "required", "additionalProperties",
  "items", "enum", "const", "anyOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
  "multipleOf", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "default",
  "examples", "$schema" }

local function is_set_member(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

local function suggest(word, list)
  local best, bestd
  for _, w in ipairs(list) do
    local d = require("sandbox.options").distance(word, w)
    if d <= 2 and (not bestd or d < bestd) then best, bestd = w, d end
  end
  return best and fmt(" (did you mean '%s'?)", best) or ""
end

local function is_list(v)
  if type(v) ~= "table" then return false end
  local n = 0
  for k in pairs(v) do
    if type(k) ~= "number" or k < 1 or k ~= floor(k) then return false end
    n = n + 1
  end
  return n == #v
end

local function types_of(s)
  local t = s.type
  if t == nil then return nil end
  if type(t) == "string" then return { t } end
  return t
end

local check_node

local function check_type(t, where)
  if type(t) == "string" then
    if not is_set_member(TYPES, t) then
      error(fmt("%s: unknown type '%s'%s (types: %s)", where, t, suggest(t, TYPES), concat(TYPES, ", ")), 0)
    end
  elseif is_list(t) and #t > 0 then
    for i, x in ipairs(t) do check_type(x, fmt("%s.type[%d]", where, i)) end
  else
    error(fmt("%s: type must be a type name or an array of them", where), 0)
  end
end

function check_node(s, where)
  if type(s) ~= "table" then error(fmt("%s must be a schema (a table)", where), 0) end
  for k in pairs(s) do
    if type(k) ~= "string" or not is_set_member(KEYWORDS, k) then
      error(fmt("%s: unknown schema keyword '%s'%s", where, tostring(k),
        type(k) == "string" and suggest(k, KEYWORDS) or ""), 0)
    end
  end
  if s.type == nil and s.anyOf == nil and s.enum == nil and s.const == nil then
    error(fmt("%s needs a type (or anyOf, enum, const)", where), 0)
  end
  if s.type ~= nil then check_type(s.type, where) end
  if s.description ~= nil and type(s.description) ~= "string" then
    error(fmt("%s: description must be a string", where), 0)
  end
  local types = types_of(s) or {}
  if s.properties ~= nil then
    if type(s.properties) ~= "table" then error(fmt("%s: properties must be a table", where), 0) end
    for name, p in pairs(s.properties) do
      if type(name) ~= "string" then error(fmt("%s: property names must be strings", where), 0) end
      check_node(p, fmt("%s.properties.%s", where, name))
    end
  end
  if s.required ~= nil then
    if not is_list(s.required) then error(fmt("%s: required must be an array of property names", where), 0) end
    for _, name in ipairs(s.required) do
      if not (s.properties and s.properties[name]) then
        error(fmt("%s: required names '%s', which is not among its properties", where, tostring(name)), 0)
      end
    end
  end
  if s.additionalProperties ~= nil and type(s.additionalProperties) ~= "boolean" then
    error(fmt("%s: additionalProperties must be true or false", where), 0)
  end
  if is_set_member(types, "array") and s.items == nil then
    error(fmt("%s: an array needs items (the schema of its elements)", where), 0)
  end
  if s.items ~= nil then check_node(s.items, where .. ".items") end
  if s.enum ~= nil and (not is_list(s.enum) or #s.enum == 0) then
    error(fmt("%s: enum must be a non-empty array", where), 0)
  end
  if s.anyOf ~= nil then
    if not is_list(s.anyOf) or #s.anyOf == 0 then error(fmt("%s: anyOf must be a non-empty array", where), 0) end
    for i, b in ipairs(s.anyOf) do check_node(b, fmt("%s.anyOf[%d]", where, i)) end
  end
  for _, k in ipairs { "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf" } do
    if s[k] ~= nil and type(s[k]) ~= "number" then error(fmt("%s: %s must be a number", where, k), 0) end
  end
  for _, k in ipairs { "minItems", "maxItems", "minLength", "maxLength" } do
    if s[k] ~= nil and (type(s[k]) ~= "number" or s[k] < 0 or s[k] ~= floor(s[k])) then
      error(fmt("%s: %s must be a non-negative integer", where, k), 0)
    end
  end
end

--- Raise (with the offending place named) unless `schema` is a tool's
--- parameter schema every exporter can carry: an object schema of the
--- supported keywords, known types, required names that exist.
function M.check(schema, where)
  check_node(schema, where or "parameters")
  local t = types_of(schema)
  if not (t and #t == 1 and t[1] == "object") then
    error(fmt("%s must be an object schema ({type = \"object\", properties = ...})", where or "parameters"), 0)
  end
end

-- ---- checking arguments --------------------------------------------------------

local checks = {}

function checks.string(v) return type(v) == "string" end
function checks.integer(v) return type(v) == "number" and v == floor(v) and v == v and v > -2 ^ 63 and v < 2 ^ 63 end
function checks.number(v) return type(v) == "number" and v == v end
function checks.boolean(v) return type(v) == "boolean" end
function checks.null(v) return is_null(v) end
function checks.array(v) return type(v) == "table" and is_list(v) end
function checks.object(v) return type(v) == "table" and (next(v) == nil or not is_list(v) or getmetatable(v) == M.OBJECT) end

local function a_or_an(t) return (t == "integer" or t == "array" or t == "object") and "an" or "a" end

local check_value

local function check_typed(s, t, v, where)
  if t == "integer" then v = math.tointeger and math.tointeger(v) or v end
  if s.enum then
    local ok = false
    for _, e in ipairs(s.enum) do ok = ok or e == v or (is_null(e) and is_null(v)) end
    if not ok then
      local names = {}
      for i, e in ipairs(s.enum) do names[i] = is_null(e) and "null" or tostring(e) end
      return nil, fmt("%s must be one of: %s", where, concat(names, ", "))
    end
  end
  if s.const ~= nil and v ~= s.const then return nil, fmt("%s must be %s", where, tostring(s.const)) end
  if t == "integer" or t == "number" then
    if s.minimum and v < s.minimum then return nil, fmt("%s must be at least %s", where, s.minimum) end
    if s.maximum and v > s.maximum then return nil, fmt("%s must be at most %s", where, s.maximum) end
  elseif t == "string" then
    if s.minLength and #v < s.minLength then return nil, fmt("%s is shorter than %d characters", where, s.minLength) end
    if s.maxLength and #v > s.maxLength then return nil, fmt("%s is longer than %d characters", where, s.maxLength) end
  elseif t == "array" then
    if s.minItems and #v < s.minItems then
      return nil, fmt("%s needs at least %d item%s", where, s.minItems, s.minItems == 1 and "" or "s")
    end
    if s.maxItems and #v > s.maxItems then return nil, fmt("%s takes at most %d items", where, s.maxItems) end
    local out = arr()
    for i, x in ipairs(v) do
      local cv, err = check_value(s.items, x, fmt("%s[%d]", where, i))
      if cv == nil and not is_null(x) then return nil, err end
      out[i] = cv
    end
    return out
  elseif t == "object" then
    if s.properties then return M.validate(s, v, where .. ".") end
  end
  return v
end

function check_value(s, v, where)
  if s.anyOf then
    local first
    for _, b in ipairs(s.anyOf) do
      local cv, err = check_value(b, v, where)
      if cv ~= nil or (err == nil and is_null(v)) then return cv end
      first = first or err
    end
    return nil, first
  end
  local types = types_of(s)
  if not types then return check_typed(s, type(v), v, where) end
  for _, t in ipairs(types) do
    if checks[t](v) then
      if t == "null" then return nil end
      return check_typed(s, t, v, where)
    end
  end
  local names = {}
  for i, t in ipairs(types) do names[i] = a_or_an(t) .. " " .. t end
  return nil, fmt("%s must be %s", where, concat(names, " or "))
end

--- Check arguments against an object schema. Returns a clean copy (JSON
--- nulls dropped, integral numbers as integers) or nil, message.
function M.validate(schema, args, prefix)
  prefix = prefix or ""
  if type(args) ~= "table" or (next(args) ~= nil and is_list(args) and getmetatable(args) ~= M.OBJECT) then
    return nil, prefix == "" and "the arguments must be a JSON object" or (prefix:sub(1, -2) .. " must be an object")
  end
  local out = {}
  local props = schema.properties or {}
  for k, v in pairs(args) do
    if type(k) ~= "string" then return nil, "argument names must be strings" end
    local s = props[k]
    if not s then
      if schema.additionalProperties ~= false and not schema.properties then
        out[k] = v
      else
        local names = {}
        for n in pairs(props) do names[#names + 1] = n end
        sort(names)
        return nil, fmt("unknown argument '%s%s' (this tool takes: %s)", prefix, k,
          #names > 0 and concat(names, ", ") or "no arguments")
      end
    elseif not is_null(v) then
      local cv, err = check_value(s, v, fmt("argument '%s%s'", prefix, k))
      if cv == nil and err then return nil, err end
      out[k] = cv
    end
  end
  for _, k in ipairs(schema.required or {}) do
    if out[k] == nil then return nil, fmt("missing required argument '%s%s'", prefix, k) end
  end
  return out
end

-- ---- OpenAI strict mode ----------------------------------------------------------

local deep_copy = require("sandbox.options").copy
M.copy = deep_copy

local strictify

-- An optional property may be sent as null in strict mode (every property
-- is required there): its type gains "null", an enum gains null, an anyOf
-- gains a null branch.
local function nullable(p)
  if p.anyOf then
    for _, b in ipairs(p.anyOf) do
      if b.type == "null" then return end
    end
    p.anyOf[#p.anyOf + 1] = { type = "null" }
    return
  end
  local t = p.type
  if type(t) == "string" then
    if t ~= "null" then p.type = arr { t, "null" } end
  elseif type(t) == "table" then
    if not is_set_member(t, "null") then t[#t + 1] = "null" end
  end
  if p.enum then
    local has = false
    for _, e in ipairs(p.enum) do has = has or is_null(e) end
    if not has then p.enum[#p.enum + 1] = json.null end
  end
end

function strictify(node)
  if type(node) ~= "table" then return end
  if node.anyOf then
    for _, b in ipairs(node.anyOf) do strictify(b) end
  end
  local types = types_of(node) or {}
  if node.properties or is_set_member(types, "object") then
    node.properties = obj(node.properties)
    node.additionalProperties = false
    local req = {}
    for _, k in ipairs(node.required or {}) do req[k] = true end
    local names = {}
    for k, p in pairs(node.properties) do
      names[#names + 1] = k
      strictify(p) -- first the inside, then the nullable wrapper around it
      if not req[k] then nullable(p) end
    end
    sort(names)
    -- left out when empty: any encoder writes it right then
    node.required = #names > 0 and arr(names) or nil
  end
  if node.items then strictify(node.items) end
end

--- OpenAI strict mode: every property required (optional ones nullable,
--- enums and anyOf included), no additional properties, at every level:
--- nested objects, array items and anyOf branches.
function M.strict(schema)
  local s = deep_copy(schema)
  strictify(s)
  return s
end

return M
