-- JSON Schemas for tool parameters: building them, checking a model's
-- arguments against them, and the OpenAI strict-mode form.
--
-- Empty objects must encode as {} (never []): object tables carry the
-- metatable OBJECT (__jsontype = "object", honoured by dkjson and friends;
-- lua-cjson encodes every empty table as {}), and empty `required` lists are
-- left out.
local M = {}

local type, pairs, ipairs, next, fmt = type, pairs, ipairs, next, string.format
local math_type = math.type

M.OBJECT = { __jsontype = "object" }
M.ARRAY = { __jsontype = "array" }

local function obj(t) return setmetatable(t or {}, M.OBJECT) end

--- A JSON null as decoders deliver it (cjson.null is a lightuserdata).
local function is_null(v) return v == nil or type(v) == "userdata" end
M.is_null = is_null

function M.string(desc, extra)
  local s = { type = "string", description = desc }
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

function M.integer(desc, extra)
  local s = { type = "integer", description = desc }
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

function M.number(desc, extra)
  local s = { type = "number", description = desc }
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

function M.boolean(desc) return { type = "boolean", description = desc } end

function M.array(items, desc, extra)
  local s = { type = "array", items = items, description = desc }
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

--- An object schema; `required` lists property names (may be empty).
function M.object(props, required, desc)
  local s = obj { type = "object", properties = obj(props), additionalProperties = false }
  if required and #required > 0 then s.required = setmetatable(required, M.ARRAY) end
  s.description = desc
  return s
end

local checks = {}

function checks.string(v) return type(v) == "string" end
function checks.integer(v) return math_type(v) == "integer" or (type(v) == "number" and v == math.floor(v) and v == v) end
function checks.number(v) return type(v) == "number" and v == v end
function checks.boolean(v) return type(v) == "boolean" end
function checks.array(v)
  if type(v) ~= "table" then return false end
  local n = 0
  for k in pairs(v) do
    if math_type(k) ~= "integer" or k < 1 then return false end
    n = n + 1
  end
  return n == #v
end
function checks.object(v) return type(v) == "table" end

local function check_value(s, v, where)
  local t = s.type
  if type(t) == "table" then t = t[1] end
  if not checks[t](v) then
    return nil, fmt("%s must be %s %s", where, t == "integer" and "an" or "a", t)
  end
  if t == "integer" and type(v) == "number" then v = math.tointeger(v) end
  if s.enum then
    local ok = false
    for _, e in ipairs(s.enum) do ok = ok or e == v end
    if not ok then return nil, fmt("%s must be one of: %s", where, table.concat(s.enum, ", ")) end
  end
  if s.minimum and v < s.minimum then return nil, fmt("%s must be at least %s", where, s.minimum) end
  if s.maximum and v > s.maximum then return nil, fmt("%s must be at most %s", where, s.maximum) end
  if t == "array" then
    if s.minItems and #v < s.minItems then
      return nil, fmt("%s needs at least %d item%s", where, s.minItems, s.minItems == 1 and "" or "s")
    end
    local out = {}
    for i, x in ipairs(v) do
      local cv, err = check_value(s.items, x, fmt("%s[%d]", where, i))
      if cv == nil then return nil, err end
      out[i] = cv
    end
    return out
  end
  if t == "object" and s.properties then return M.validate(s, v, where .. ".") end
  return v
end

--- Check arguments against an object schema. Returns a clean copy (JSON
--- nulls dropped, integral numbers as integers) or nil, message.
function M.validate(schema, args, prefix)
  prefix = prefix or ""
  if type(args) ~= "table" then return nil, "the arguments must be a JSON object" end
  local out = {}
  for k, v in pairs(args) do
    if type(k) ~= "string" then return nil, "argument names must be strings" end
    local s = schema.properties[k]
    if not s then
      local names = {}
      for n in pairs(schema.properties) do names[#names + 1] = n end
      table.sort(names)
      return nil, fmt("unknown argument '%s%s' (this tool takes: %s)", prefix, k,
        #names > 0 and table.concat(names, ", ") or "no arguments")
    end
    if not is_null(v) then
      local cv, err = check_value(s, v, fmt("argument '%s%s'", prefix, k))
      if cv == nil then return nil, err end
      out[k] = cv
    end
  end
  for _, k in ipairs(schema.required or {}) do
    if out[k] == nil then return nil, fmt("missing required argument '%s%s'", prefix, k) end
  end
  return out
end

local function deep_copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = deep_copy(x) end
  return setmetatable(out, getmetatable(v))
end

--- OpenAI strict mode: every property required, optional ones nullable,
--- no additional properties, at every level.
function M.strict(schema)
  local s = deep_copy(schema)
  local function walk(node)
    if type(node) ~= "table" then return end
    if node.type == "object" and node.properties then
      node.additionalProperties = false
      local req = {}
      for _, k in ipairs(node.required or {}) do req[k] = true end
      local names = {}
      for k, p in pairs(node.properties) do
        names[#names + 1] = k
        if not req[k] and type(p.type) == "string" then p.type = { p.type, "null" } end
        walk(p)
      end
      table.sort(names)
      node.required = #names > 0 and setmetatable(names, M.ARRAY) or nil
    elseif node.type == "array" or (type(node.type) == "table" and node.type[1] == "array") then
      walk(node.items)
    end
  end
  walk(s)
  return s
end

M.copy = deep_copy

return M
