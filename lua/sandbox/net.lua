-- Network (SPEC §5 phase 2): option checks for allowed_hosts and exposed
-- ports, sb:http_get, and what a command's environment and spawn need from
-- the proxy and its port. The mechanism (policy, proxy, gates, libcurl) is C.
local core = require "sandbox.core"
local options = require "sandbox.options"

local M = {}

local type, ipairs, pairs, error, fmt, math_type = type, ipairs, pairs, error, string.format, math.type

function options.checkers.hosts(v)
  if type(v) ~= "table" then return nil, "must be an array of host strings" end
  local out = {}
  for k in pairs(v) do
    if math_type(k) ~= "integer" or k < 1 or k > #v then return nil, "must be an array of host strings" end
  end
  for i, s in ipairs(v) do
    if type(s) ~= "string" then return nil, fmt("[%d] must be a string", i) end
    local ok, why = core.check_host(s)
    if not ok then return nil, fmt("[%d]: %s", i, why) end
    out[i] = s
  end
  return out
end

function options.checkers.port(v)
  if math_type(v) ~= "integer" or v < 0 or v > 65535 then
    return nil, "must be a port number (0 = pick a free one)"
  end
  return v
end

function options.checkers.port_auth(v)
  if type(v) ~= "table" or v.type ~= "token" then
    return nil, 'must be {type = "token", value = "<secret>"} (value omitted: one is generated)'
  end
  for k in pairs(v) do
    if k ~= "type" and k ~= "value" then return nil, fmt("has unknown key '%s' (allowed: type, value)", tostring(k)) end
  end
  if v.value ~= nil and (type(v.value) ~= "string" or #v.value < 8 or #v.value > 256 or v.value:find("[%c%s]")) then
    return nil, "value must be 8 to 256 characters without spaces or control characters"
  end
  return { type = "token", value = v.value }
end

--- Options that only make sense together.
function M.check_sandbox(who, o)
  if o.denied_hosts and not o.allowed_hosts then
    error(fmt("%s: denied_hosts needs allowed_hosts (with no allowed_hosts nothing is reachable)", who), 3)
  end
  if o.allowed_hosts and o.allow_outbound then
    error(fmt("%s: allowed_hosts needs allow_outbound = false: with direct outbound access "
      .. "commands could go around the allowlist", who), 3)
  end
end

--- Publish sb.allowed_hosts / sb.denied_hosts (copies: the policy itself is
--- fixed in C when the sandbox is made).
function M.attach(sb, o)
  if o.allowed_hosts then
    core.setfield(sb, "allowed_hosts", { table.unpack(o.allowed_hosts) })
    core.setfield(sb, "denied_hosts", { table.unpack(o.denied_hosts or {}) })
    local conf = sb.confinement
    if conf and conf.network and conf.network:find("^none") then
      conf.network = "allowed_hosts only, through the sandbox's HTTP/HTTPS proxy (" .. conf.network .. ")"
    end
  end
end

local GET_OPTS = { timeout = "seconds", max_bytes = "size", max_redirects = "count" }

--- sb:http_get(url, opts): GET under allowed_hosts; every redirect re-checked.
--- Returns {status, body, headers, url, redirects, truncated, address} or
--- nil, msg, code.
function M.http_get(sb, url, opts)
  core.check_open(sb, "http_get")
  if type(url) ~= "string" then error("http_get: url must be a string", 2) end
  opts = options.check("http_get", opts, GET_OPTS)
  return core.http_get(sb, url, opts)
end

M.EXEC_OPTS = { expose_port = "port", bind_host = "string", port_ttl = "seconds", port_auth = "port_auth" }

local function loopback(host)
  return host == "127.0.0.1" or host == "::1" or host:match("^127%.%d+%.%d+%.%d+$") ~= nil
end

--- For core.spawn: the exposed port of a background command (opts checked),
--- as extra environment and spawn fields; nil when none; nil, msg, code on
--- failure.
function M.expose(sb, opts)
  if opts.expose_port == nil then
    for k in pairs(M.EXEC_OPTS) do
      if opts[k] ~= nil then return nil, fmt("EINVAL: %s needs expose_port", k), "EINVAL" end
    end
    return false
  end
  if not opts.background then
    return nil, "EINVAL: expose_port needs background = true (the port lives as long as the command)", "EINVAL"
  end
  local bind = opts.bind_host or "127.0.0.1"
  if not loopback(bind) and not opts.port_auth then
    return nil, "EINVAL: a port bound beyond loopback (" .. bind .. ") needs port_auth = {type = \"token\"}", "EINVAL"
  end
  local token = opts.port_auth and (opts.port_auth.value or core.random_token()) or nil
  local gate, port, child_port = core.expose(sb, {
    port = opts.expose_port, bind_host = bind, ttl = opts.port_ttl, token = token,
  })
  if not gate then return nil, port, child_port end
  local host = bind
  if bind == "0.0.0.0" then host = "127.0.0.1" elseif bind == "::" then host = "::1" end
  if host:find(":", 1, true) then host = "[" .. host .. "]" end
  return { PORT = tostring(child_port) }, {
    gate = gate, port = port, child_port = child_port, token = token,
    url = fmt("http://%s:%d/", host, port),
  }
end

--- The proxy variables for a command when the sandbox has allowed_hosts.
function M.proxy_env(sb)
  local port, msg, code = core.net_proxy(sb)
  if port == nil then return msg == nil and {} or nil, msg, code end
  local url = fmt("http://127.0.0.1:%d", port)
  return {
    HTTP_PROXY = url, HTTPS_PROXY = url, http_proxy = url, https_proxy = url,
    ALL_PROXY = url, all_proxy = url, NO_PROXY = "", no_proxy = "",
  }
end

return M
