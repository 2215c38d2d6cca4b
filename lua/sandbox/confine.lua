-- Confinement of commands (SPEC §6): its options and their defaults. The
-- layers themselves are set up in C (confine/) and reported as data in
-- sb.confinement.
local options = require "sandbox.options"

local M = {}

local type, pairs, tostring, tonumber, fmt = type, pairs, tostring, tonumber, string.format
local C = options.checkers

--- cpu_limit: cores as a number (1.5), or a percentage of one core ("50%").
local function cpu(v)
  if type(v) == "number" then
    if v ~= v or v <= 0 or v == math.huge then return nil, "must be a positive number of cores" end
    return v
  end
  local pct = type(v) == "string" and tonumber(v:match("^%s*([%d%.]+)%s*%%%s*$"))
  if not pct or pct <= 0 then return nil, "must be a number of cores (1.5) or a percentage (\"50%\")" end
  return pct / 100
end

local function user(v)
  if type(v) ~= "table" then return nil, "must be a table {uid = n, gid = n}" end
  for k in pairs(v) do
    if k ~= "uid" and k ~= "gid" then return nil, fmt("has unknown key '%s' (allowed: uid, gid)", tostring(k)) end
  end
  if not options.is_integer(v.uid) or v.uid < 0 or v.uid > 4294967294 then
    return nil, "uid must be a non-negative integer"
  end
  local gid = v.gid == nil and v.uid or v.gid
  if not options.is_integer(gid) or gid < 0 or gid > 4294967294 then
    return nil, "gid must be a non-negative integer"
  end
  return { uid = v.uid, gid = gid }
end

local function paths(v)
  return options.string_list(v, "", function(s)
    if s:sub(1, 1) ~= "/" then return nil, "must be an absolute path" end
    return options.no_nul(s)
  end)
end

-- A file size limit of 0 would make every write fail: refuse it rather than
-- read it as "no limit".
local function file_size(v)
  local n, why = options.parse_size(v)
  if not n then return nil, why end
  if n == 0 then return nil, "must be at least 1 byte (leave it out for no limit)" end
  return n
end

-- confine: true (every layer), false (opt out: limits, network and tree
-- kill only), or a table choosing a weaker or tuned level.
local CONFINE_KEYS = { namespaces = true, tmp_size = true }
local function confine(v)
  if type(v) == "boolean" then return v end
  if type(v) ~= "table" then return nil, "must be true, false or a table {namespaces =, tmp_size =}" end
  for k in pairs(v) do
    if not CONFINE_KEYS[k] then
      return nil, fmt("has unknown key '%s' (allowed: namespaces, tmp_size)%s", tostring(k),
        type(k) == "string" and options.suggest(k, CONFINE_KEYS) or "")
    end
  end
  if v.namespaces ~= nil and type(v.namespaces) ~= "boolean" then return nil, "namespaces must be a boolean" end
  local out = { namespaces = v.namespaces }
  if v.tmp_size ~= nil then
    local n, why = options.parse_size(v.tmp_size)
    if not n then return nil, "tmp_size " .. why end
    if n < 1024 * 1024 then return nil, "tmp_size must be at least 1MB" end
    out.tmp_size = n
  end
  return out
end

M.TMP_SIZE = 512 * 1024 * 1024

--- Normalise: confine becomes a boolean, with namespaces and tmp_size
--- beside it (what the C core reads).
function M.normalize(o)
  local c = o.confine
  if type(c) == "table" then
    o.confine, o.namespaces, o.tmp_size = true, c.namespaces ~= false, c.tmp_size or M.TMP_SIZE
  else
    o.namespaces, o.tmp_size = c, M.TMP_SIZE
  end
  return o
end

M.options = {
  confine = { check = confine, default = true, type = "boolean|{tmp_size?: integer|string, namespaces?: boolean}" },
  allow_outbound = { check = C.boolean, default = false },
  memory_limit = { check = C.size },
  cpu_limit = { check = cpu, type = "number|string" },
  pids_limit = { check = C.positive },
  file_size_limit = { check = file_size, type = "integer|string" },
  user = { check = user, type = "{uid: integer, gid: integer}" },
  read_paths = { check = paths, type = "string[]" },
}

return M
