-- Strict option tables (SPEC §2): an unknown key or a wrong type raises an
-- error naming the key, so a typo never silently weakens a limit.
--
-- This is the engine and the common checkers. Each concept's module owns
-- its options as a schema {key = {check = fn, default = value}} (policy.lua,
-- virtual.lua, container.lua, exec.lua, confine.lua, net.lua); check()
-- returns a fresh table with every default filled in and sizes as
-- integers, which is all the C core reads.
local M = {}

local type, pairs, ipairs, tostring, error, tonumber = type, pairs, ipairs, tostring, error, tonumber
local getmetatable, setmetatable = getmetatable, setmetatable
local floor, huge = math.floor, math.huge
local fmt = string.format

-- The largest integer the Lua holds exactly: 5.3 and 5.4 have 64-bit
-- integers; on 5.1 and LuaJIT every number is a double.
local EXACT = math.tointeger and 2 ^ 63 or 2 ^ 53
M.EXACT = EXACT

-- Integer test that works on every Lua (no math.type before 5.3), within
-- what the Lua holds exactly.
local function is_integer(v)
  return type(v) == "number" and v == floor(v) and v > -EXACT and v < EXACT
end
M.is_integer = is_integer

local function as_integer(v)
  return math.tointeger and math.tointeger(v) or v
end

local UNITS = {
  [""] = 1, b = 1,
  k = 1024, kb = 1024, kib = 1024,
  m = 1024 ^ 2, mb = 1024 ^ 2, mib = 1024 ^ 2,
  g = 1024 ^ 3, gb = 1024 ^ 3, gib = 1024 ^ 3,
  t = 1024 ^ 4, tb = 1024 ^ 4, tib = 1024 ^ 4,
}

--- Parse a byte size: a non-negative integer, or a string like "512MB",
--- "1.5GiB", "64k" (binary units: 1 KB = 1024 bytes, as Docker reads them).
function M.parse_size(v)
  if type(v) == "number" then
    if v < 0 then return nil, "must not be negative" end
    if v ~= v or v == huge then return nil, "must be a finite size" end
    if v ~= floor(v) then return nil, fmt("%s is not a whole number of bytes", tostring(v)) end
    if v >= EXACT then return nil, EXACT < 2 ^ 63 and "is too large for this Lua (numbers are doubles: at most 2^53)" or "is too large" end
    return as_integer(v)
  end
  if type(v) ~= "string" then return nil, "must be a size (bytes, or a string like \"512MB\")" end
  local num, unit = v:lower():match("^%s*(%d*%.?%d+)%s*(%a*)%s*$")
  local n = tonumber(num)
  local mult = UNITS[unit or "?"]
  if not n or not mult then
    return nil, fmt("'%s' is not a size (use bytes, or a number with B, KB, MB, GB, TB)", v)
  end
  if mult == 1 and n ~= floor(n) then
    return nil, fmt("'%s' is not a whole number of bytes (write \"1.5KB\" for 1536)", v)
  end
  if n * mult >= EXACT then return nil, fmt("'%s' is too large%s", v, EXACT < 2 ^ 63 and " for this Lua (numbers are doubles: at most 2^53)" or "") end
  return as_integer(floor(n * mult))
end

local function edit_distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end
M.distance = edit_distance

--- " (did you mean 'x'?)" for the closest of `names` (an array, or a set
--- as keys) within two edits of `key`, else "".
function M.suggest(key, names)
  local best, bestd
  local function try(k)
    if type(k) ~= "string" or k:sub(1, 1) == "_" then return end
    local d = edit_distance(key, k)
    if d <= 2 and (not bestd or d < bestd or (d == bestd and k < best)) then best, bestd = k, d end
  end
  if names[1] ~= nil then
    for _, k in ipairs(names) do try(k) end
  else
    for k in pairs(names) do try(k) end
  end
  return best and fmt(" (did you mean '%s'?)", best) or ""
end

-- ---- common checkers: each returns the value (normalised) or nil, why ------

local C = {}
M.checkers = C

function C.boolean(v)
  if type(v) ~= "boolean" then return nil, "must be a boolean" end
  return v
end

function C.string(v)
  if type(v) ~= "string" then return nil, "must be a string" end
  return v
end

function C.func(v)
  if type(v) ~= "function" then return nil, "must be a function" end
  return v
end

C.size = M.parse_size

function C.count(v)
  if not is_integer(v) or v < 0 then return nil, "must be a non-negative integer" end
  return as_integer(v)
end

function C.positive(v)
  if not is_integer(v) or v < 1 then return nil, "must be a positive integer" end
  return as_integer(v)
end

-- Seconds: positive and at most a year (math.huge or 1e19 used to overflow
-- the timers into an instant kill; a year is "never" for one command).
function C.seconds(v)
  if type(v) ~= "number" or v ~= v or v <= 0 then return nil, "must be a positive number of seconds" end
  if v > 86400 * 365 then return nil, "must be at most a year of seconds (got " .. tostring(v) .. ")" end
  return v
end

--- An array of strings (each checked by `each`, which returns true or nil,
--- why). `what` names the list in messages; "" for an option's value (the
--- caller says which option).
function M.string_list(v, what, each)
  local whole = what == "" and "must be an array of strings" or what .. " must be an array of strings"
  local function item(i) return what == "" and "element " .. i or fmt("%s[%d]", what, i) end
  if type(v) ~= "table" then return nil, whole end
  local n = 0
  for k in pairs(v) do
    if not is_integer(k) or k < 1 then return nil, whole .. " (no holes, no other keys)" end
    if k > n then n = k end
  end
  local out = {}
  for i = 1, n do
    local s = v[i]
    if s == nil then return nil, fmt("%s (no holes, no other keys): %s is nil", whole, item(i)) end
    if type(s) ~= "string" then return nil, item(i) .. " must be a string" end
    if each then
      local ok, why = each(s)
      if not ok then return nil, item(i) .. " " .. why end
    end
    out[i] = s
  end
  return out
end

local function no_nul(s)
  if s:find("\0", 1, true) then return nil, "must not contain NUL" end
  return true
end
M.no_nul = no_nul

function C.abspath(v)
  if type(v) ~= "string" or v:sub(1, 1) ~= "/" then return nil, "must be an absolute path" end
  if v:find("\0", 1, true) then return nil, "must not contain NUL" end
  local comps = {}
  for comp in v:gmatch("[^/]+") do
    if comp == ".." then return nil, "must not contain '..'" end
    if comp ~= "." then comps[#comps + 1] = comp end
  end
  return "/" .. table.concat(comps, "/") -- normalised: no "." or repeated "/"
end

function C.dir(v)
  if type(v) ~= "string" or v == "" then return nil, "must be a directory path" end
  if v:find("\0", 1, true) then return nil, "must not contain NUL" end
  return v
end

--- A checker accepting one of the given strings (M.choices[checker] lists
--- them, for the type file scripts/gen-types.lua writes).
M.choices = setmetatable({}, { __mode = "k" })
function M.one_of(...)
  local allowed, list = {}, table.concat({ ... }, ", ")
  for _, v in ipairs { ... } do allowed[v] = true end
  local check = function(v)
    if not allowed[v] then return nil, fmt("must be one of %s, got %s", list, tostring(v)) end
    return v
  end
  M.choices[check] = { ... }
  return check
end

-- ---- schemas ------------------------------------------------------------------

--- One schema from several ({key = {check =, default =}} each); a key in
--- two of them is a programming error.
function M.schema(...)
  local out = {}
  for _, part in ipairs { ... } do
    for k, spec in pairs(part) do
      if out[k] then error("options: '" .. k .. "' is defined twice", 2) end
      out[k] = spec
    end
  end
  return out
end

--- A deep copy of v, metatables kept.
local function copy(v)
  if type(v) ~= "table" then return v end
  local t = {}
  for k, x in pairs(v) do t[k] = copy(x) end
  return setmetatable(t, getmetatable(v))
end
M.copy = copy

--- Check `opts` against `schema`; `who` names the caller in messages, and
--- errors point at the caller's caller (`level`, default 3). `required`
--- lists keys that must be given. Returns the normalised copy: checked
--- values, and every default for what was not given.
function M.check(who, opts, schema, required, level)
  level = level or 3
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then error(fmt("%s: options must be a table", who), level) end
  for _, k in ipairs(required or {}) do
    if opts[k] == nil then error(fmt("%s: option '%s' is required", who, k), level) end
  end
  local out = {}
  for k, v in pairs(opts) do
    if type(k) ~= "string" then error(fmt("%s: option names must be strings", who), level) end
    local spec = schema[k]
    if not spec then error(fmt("%s: unknown option '%s'%s", who, k, M.suggest(k, schema)), level) end
    local val, why = spec.check(v)
    if val == nil then error(fmt("%s: option '%s' %s", who, k, why), level) end
    out[k] = val
  end
  for k, spec in pairs(schema) do
    if out[k] == nil and spec.default ~= nil then out[k] = copy(spec.default) end
  end
  return out
end

return M
