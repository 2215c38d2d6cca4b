-- The audit trail (SPEC §17): its options (audit, audit_log), the
-- sandbox's first event (what was made, under which policy), and reading a
-- log back — sandbox.audit.verify and the timeline of `agent-sandbox audit
-- show`. The stream itself (numbering, the callback, the hash chain, the
-- network's records) is C: lua/audit.c and audit/log.c.
local core = require "sandbox.core"
local options = require "sandbox.options"

local M = {}

local type, pairs, ipairs, tostring, fmt = type, pairs, ipairs, tostring, string.format
local C = options.checkers

M.options = {
  audit = { check = C.func },
  audit_log = { check = C.string, type = "string" },
}

-- What a created event shows of the options: the policy, never a secret
-- (api_key) nor an environment value (env gives its names only).
local POLICY = { "read_only", "mode", "allow_overwrite", "allow_escaping_links", "max_read_bytes",
                 "max_write_bytes", "max_disk_usage", "max_total_bytes", "max_files", "rules", "extensions",
                 "allowed_hosts", "denied_hosts", "allow_outbound", "exec", "exec_timeout", "allow_shell",
                 "inherit_env", "max_output_bytes", "max_background_processes", "memory_limit", "pids_limit",
                 "cpu_limit", "file_size_limit", "user" }

-- A table's keys, sorted: what an event says of an environment.
local function names(t)
  local out = {}
  for k in pairs(t or {}) do out[#out + 1] = k end
  table.sort(out)
  return out
end
M.names = names

local function policy_of(o)
  local p = {}
  for _, k in ipairs(POLICY) do
    if o[k] ~= nil then p[k] = o[k] end
  end
  if o.env and next(o.env) then p.env_names = names(o.env) end
  if o.secrets and o.secrets[1] then -- where each goes and as which header; never the value
    p.secrets = {}
    for i, x in ipairs(o.secrets) do p.secrets[i] = { host = x.host, header = x.header } end
  end
  return p
end

-- sb.confinement in short: which layers hold, which do not, the network.
local function confinement_of(conf)
  if type(conf) ~= "table" then return nil end
  local on, off = {}, {}
  for _, k in ipairs(names(conf)) do
    local v = conf[k]
    if type(v) == "table" and v.enforced ~= nil then
      if v.enforced then on[#on + 1] = k else off[#off + 1] = k end
    end
  end
  return { enforced = on, not_enforced = off, network = conf.network and conf.network.mode or nil }
end

--- Begin sb's stream with its created event (backend.define calls it).
--- Returns true, or nil, msg, code (the log cannot be had: the caller
--- disposes of the sandbox).
function M.start(sb, kind, o)
  if o.audit == nil and o.audit_log == nil then return true end
  local created = {
    kind = "created", backend = kind, root = sb.cwd, policy = policy_of(o),
    confinement = confinement_of(sb.confinement),
  }
  return core.audit_start(sb, created, o.audit, o.audit_log)
end

--- Add an event of the Lua layer (a no-op for a sandbox without audit).
M.emit = core.audit
M.on = core.audited

-- ---- reading a log back --------------------------------------------------------

local ZERO = string.rep("0", 64)

local function read_lines(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local data = f:read("*a")
  f:close()
  return data
end

--- sandbox.audit.verify(path, {head = path | false}) -> true, n (lines
--- after the chain's start), the last line's hash; or nil, "line N: reason". Every line must be a JSON object
--- whose prev is the SHA-256 of the line before (all zeros for the first,
--- the chain's start), and the last line's hash must be the one FILE.head
--- holds (head = false skips that: a copy of a log without its head).
function M.verify(path, opts)
  if type(path) ~= "string" then error("audit.verify: path must be a string", 2) end
  opts = options.check("audit.verify", opts, { head = { check = function(v)
    if v == false or type(v) == "string" then return v end
    return nil, "must be a path or false"
  end } })
  local data, err = read_lines(path)
  if not data then return nil, "cannot read the log: " .. tostring(err) end
  local json = require "sandbox.json"
  local prev, n, last = ZERO, 0, nil
  if data == "" then return nil, "line 1: the log is empty (no chain start)" end
  if data:sub(-1) ~= "\n" then
    local count = select(2, data:gsub("\n", "")) + 1
    return nil, fmt("line %d: the last line is cut short (no newline)", count)
  end
  for line in data:gmatch("([^\n]*)\n") do
    n = n + 1
    local ok, v = pcall(json.decode, line)
    if not ok or type(v) ~= "table" then
      return nil, fmt("line %d: not a JSON object", n)
    end
    if n == 1 and (v.kind ~= "audit_start" or v.seq ~= 0) then
      return nil, "line 1: not a chain start (the log's first line was removed or replaced)"
    end
    if n > 1 and v.kind == "audit_start" then
      return nil, fmt("line %d: a second chain start (a line was inserted)", n)
    end
    if v.prev ~= prev then
      return nil, fmt("line %d: its prev is not the hash of line %d (a line was edited, inserted or deleted)",
        n, n - 1)
    end
    prev, last = core.sha256(line), line
  end
  local head = opts.head
  if head == nil then head = path .. ".head" end
  if head then
    local h = read_lines(head)
    if not h then
      return nil, fmt("line %d: the head file %s is missing: the log's end cannot be checked "
        .. "(verify with {head = false} to skip it)", n, head)
    end
    if h:sub(1, 64) ~= prev then
      return nil, fmt("line %d: the log does not end where %s says (its last line was edited or deleted, "
        .. "or a line was added)", n, head)
    end
  end
  return true, n - 1, last and prev
end

-- ---- a readable timeline ------------------------------------------------------

-- A number as written (JSON decoders may give 3 as 3.0).
local function num(v)
  if type(v) == "number" and v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return fmt("%d", v) end
  return tostring(v)
end

local function short(v)
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do
      if i > 8 then parts[#parts + 1] = "..."; break end
      parts[#parts + 1] = num(x)
    end
    return "[" .. table.concat(parts, " ") .. "]"
  end
  return num(v)
end

local SHOW = {
  file = function(e)
    return fmt("%s %s%s%s", e.op, e.path or "", e.size and (" (" .. num(e.size) .. " bytes)") or "",
      e.ok and "" or (" refused: " .. short(e.code)))
  end,
  created = function(e) return fmt("%s sandbox at %s", e.backend, short(e.root)) end,
  disposed = function() return "disposed" end,
  command_start = function(e)
    return fmt("#%s %s%s in %s", short(e.id), short(e.argv), e.background and " (background)" or "",
      short(e.cwd or "/"))
  end,
  command_end = function(e)
    local how = e.signal and ("signal " .. e.signal) or ("exit " .. short(e.exit_code))
    return fmt("#%s %s after %.3f s, %s bytes of output%s", short(e.id), how, e.duration or 0,
      short(e.output_bytes or 0), e.limits and (" (" .. short(e.limits) .. ")") or "")
  end,
  command_refused = function(e) return fmt("%s refused: %s", short(e.argv), short(e.code)) end,
  command_killed = function(e) return fmt("#%s killed by %s", short(e.id), short(e.by)) end,
  net = function(e)
    return fmt("%s %s %s:%s %s%s", e.server, e.method or "", short(e.host or "?"), short(e.port or "?"),
      e.allowed and "allowed" or "refused", e.rule and e.rule ~= "" and (" (" .. e.rule .. ")") or "")
  end,
  net_end = function(e)
    return fmt("%s %s:%s closed: %s bytes up, %s down", e.server, short(e.host), short(e.port),
      short(e.bytes_up), short(e.bytes_down))
  end,
  secret_injected = function(e)
    return fmt("proxy set %s on a request to %s:%s", short(e.header), short(e.host), short(e.port))
  end,
  http_get = function(e)
    return fmt("http_get %s %s", short(e.url), e.ok and ("status " .. short(e.status)) or ("refused: "
      .. short(e.code)))
  end,
  approval = function(e)
    return fmt("approval %s for %s%s", e.decision, e.tool, e.path and (" " .. e.path) or e.argv and (" "
      .. short(e.argv)) or "")
  end,
  tool_call = function(e) return fmt("tool %s %s", e.tool, e.ok and "ok" or "error") end,
  audit_lost = function(e) return fmt("%s events lost", short(e.lost)) end,
}

--- One line of the timeline for an event table.
function M.format(e)
  local f = SHOW[e.kind]
  local when = type(e.time) == "number" and os.date("!%Y-%m-%dT%H:%M:%S", math.floor(e.time))
    .. fmt(".%03dZ", math.floor((e.time % 1) * 1000)) or "?"
  local what = f and f(e) or ""
  return fmt("%s %5s %-14s %s", when, short(e.seq), e.kind or "?", what)
end

--- The timeline of a log: an array of lines (the chain-start line left
--- out), or nil, msg.
function M.timeline(path)
  local data, err = read_lines(path)
  if not data then return nil, "cannot read the log: " .. tostring(err) end
  local json = require "sandbox.json"
  local out, n = {}, 0
  for line in data:gmatch("([^\n]+)") do
    n = n + 1
    local ok, v = pcall(json.decode, line)
    if not ok or type(v) ~= "table" then
      out[#out + 1] = fmt("line %d: not a JSON object", n)
    elseif v.kind ~= "audit_start" then
      out[#out + 1] = M.format(v)
    end
  end
  return out
end

return M
