-- Strict option tables (SPEC §2): an unknown key or a wrong type raises an
-- error naming the key, so a typo never silently weakens a limit.
-- Returns a fresh table with normalised values (sizes as integers).
local M = {}

local type, pairs, ipairs, tostring, error = type, pairs, ipairs, tostring, error
local math_type, floor = math.type, math.floor
local tostring = tostring
local fmt = string.format

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
    if v ~= v or v == math.huge then return nil, "must be a finite size" end
    if v ~= floor(v) then return nil, fmt("%s is not a whole number of bytes", tostring(v)) end
    if v >= 2 ^ 63 then return nil, "is too large" end
    return math.tointeger and math.tointeger(v) or v
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
  if n * mult >= 2 ^ 63 then return nil, fmt("'%s' is too large", v) end
  local b = floor(n * mult)
  return math.tointeger and math.tointeger(b) or b
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
local suggest = M.suggest

local checkers = {}
M.checkers = checkers

function checkers.boolean(v)
  if type(v) ~= "boolean" then return nil, "must be a boolean" end
  return v
end

function checkers.string(v)
  if type(v) ~= "string" then return nil, "must be a string" end
  return v
end

function checkers.func(v)
  if type(v) ~= "function" then return nil, "must be a function" end
  return v
end

checkers.size = M.parse_size

function checkers.count(v)
  if math_type(v) ~= "integer" or v < 0 then return nil, "must be a non-negative integer" end
  return v
end

function checkers.seconds(v)
  if type(v) ~= "number" or v ~= v or v <= 0 then return nil, "must be a positive number of seconds" end
  return v
end

local function string_list(v, what, each)
  if type(v) ~= "table" then return nil, fmt("%s must be an array of strings", what) end
  local out = {}
  for k in pairs(v) do
    if math_type(k) ~= "integer" or k < 1 or k > #v then
      return nil, fmt("%s must be an array of strings", what)
    end
  end
  for i, s in ipairs(v) do
    if type(s) ~= "string" then return nil, fmt("%s[%d] must be a string", what, i) end
    local ok, why = each(s)
    if not ok then return nil, fmt("%s[%d] %s", what, i, why) end
    out[i] = s
  end
  return out
end

local function sub_table(v, allowed, each)
  if type(v) ~= "table" then return nil, "must be a table" end
  local out = {}
  for k, x in pairs(v) do
    if not allowed[k] then
      return nil, fmt("has unknown key '%s' (allowed: %s)", tostring(k), allowed._list)
    end
    local list, why = string_list(x, k, each)
    if not list then return nil, why end
    out[k] = list
  end
  return out
end

local function glob_ok(s)
  if s == "" then return nil, "must not be empty" end
  if s:find("\0", 1, true) then return nil, "must not contain NUL" end
  return true
end

local function ext_ok(s)
  if s ~= "" and s:sub(1, 1) ~= "." then
    return nil, fmt("must start with '.' (got '%s'; use \"\" for files without extension)", s)
  end
  return true
end

function checkers.rules(v)
  return sub_table(v, { deny = true, allow = true, _list = "deny, allow" }, glob_ok)
end

function checkers.extensions(v)
  return sub_table(v, { read = true, write = true, _list = "read, write" }, ext_ok)
end

function checkers.abspath(v)
  if type(v) ~= "string" or v:sub(1, 1) ~= "/" then return nil, "must be an absolute path" end
  if v:find("\0", 1, true) then return nil, "must not contain NUL" end
  for comp in v:gmatch("[^/]+") do
    if comp == ".." then return nil, "must not contain '..'" end
  end
  return v
end

function checkers.files(v)
  if type(v) ~= "table" then return nil, "must be a table of path = content" end
  for k, x in pairs(v) do
    if type(k) ~= "string" then return nil, "keys must be path strings" end
    if type(x) ~= "string" and x ~= true then
      return nil, fmt("['%s'] must be a string (contents) or true (a directory)", k)
    end
  end
  return v
end

local function one_of(...)
  local allowed, list = {}, table.concat({ ... }, ", ")
  for _, v in ipairs { ... } do allowed[v] = true end
  return function(v)
    if not allowed[v] then return nil, fmt("must be one of %s, got %s", list, tostring(v)) end
    return v
  end
end

checkers.mode = one_of("rw", "r", "w")
checkers.resolver = one_of("auto", "openat2", "fallback")

function checkers.dir(v)
  if type(v) ~= "string" or v == "" then return nil, "must be a directory path" end
  if v:find("\0", 1, true) then return nil, "must not contain NUL" end
  return v
end

function checkers.dirs(v)
  return string_list(v, "read_roots", function(s)
    if s == "" then return nil, "must not be empty" end
    return true
  end)
end

--- Check `opts` against `schema` ({key = checker name}); `who` names the
--- constructor in messages. Returns the normalised copy.
function M.check(who, opts, schema)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then error(fmt("%s: options must be a table", who), 3) end
  for k in pairs(schema._required or {}) do
    if opts[k] == nil then error(fmt("%s: option '%s' is required", who, k), 3) end
  end
  local out = {}
  for k, v in pairs(opts) do
    if type(k) ~= "string" then error(fmt("%s: option names must be strings", who), 3) end
    local kind = k ~= "_required" and schema[k]
    if not kind then error(fmt("%s: unknown option '%s'%s", who, k, suggest(k, schema)), 3) end
    local val, why = checkers[kind](v)
    if val == nil then error(fmt("%s: option '%s' %s", who, k, why), 3) end
    out[k] = val
  end
  return out
end

M.shared = {
  max_read_bytes = "size",
  max_write_bytes = "size",
  allow_overwrite = "boolean",
  read_only = "boolean",
  rules = "rules",
  extensions = "extensions",
  audit = "func",
  allowed_hosts = "hosts", -- checked by sandbox.net
  denied_hosts = "hosts",
}

local function with_shared(t)
  for k, v in pairs(M.shared) do t[k] = v end
  return t
end

M.virtual = with_shared {
  cwd = "abspath",
  files = "files",
  max_total_bytes = "size",
  max_files = "count",
}

function checkers.positive(v)
  if math_type(v) ~= "integer" or v < 1 then return nil, "must be a positive integer" end
  return v
end

--- cpu_limit: cores as a number (1.5), or a percentage of one core ("50%").
function checkers.cpu(v)
  if type(v) == "number" then
    if v ~= v or v <= 0 or v == math.huge then return nil, "must be a positive number of cores" end
    return v
  end
  local pct = type(v) == "string" and tonumber(v:match("^%s*([%d%.]+)%s*%%%s*$"))
  if not pct or pct <= 0 then return nil, "must be a number of cores (1.5) or a percentage (\"50%\")" end
  return pct / 100
end

function checkers.user(v)
  if type(v) ~= "table" then return nil, "must be a table {uid = n, gid = n}" end
  for k in pairs(v) do
    if k ~= "uid" and k ~= "gid" then return nil, fmt("has unknown key '%s' (allowed: uid, gid)", tostring(k)) end
  end
  if math_type(v.uid) ~= "integer" or v.uid < 0 then return nil, "uid must be a non-negative integer" end
  local gid = v.gid == nil and v.uid or v.gid
  if math_type(gid) ~= "integer" or gid < 0 then return nil, "gid must be a non-negative integer" end
  return { uid = v.uid, gid = gid }
end

function checkers.paths(v)
  return string_list(v, "read_paths", function(s)
    if s:sub(1, 1) ~= "/" then return nil, "must be an absolute path" end
    return true
  end)
end

M.container = with_shared {
  _required = { base_dir = true },
  base_dir = "dir",
  create = "boolean",
  mode = "mode",
  read_roots = "dirs",
  max_disk_usage = "size",
  resolver = "resolver",
  exec = "boolean",
  exec_timeout = "seconds",
  env = "env",
  inherit_env = "boolean",
  max_background_processes = "positive",
  max_output_bytes = "size",
  allow_shell = "boolean",
  kill_grace = "seconds",
  confine = "boolean",
  allow_outbound = "boolean",
  memory_limit = "size",
  cpu_limit = "cpu",
  pids_limit = "positive",
  file_size_limit = "size",
  user = "user",
  read_paths = "paths",
}

return M
