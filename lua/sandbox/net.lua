-- Network (SPEC §5 phase 2): the allowed_hosts / denied_hosts options,
-- sb:http_get, and what a command gets from the network part — the proxy's
-- variables, an exposed port (a hook on exec). The mechanism (policy,
-- proxy, gates, libcurl) is C.
local core = require "sandbox.core"
local options = require "sandbox.options"
local audit = require "sandbox.audit"

local M = {}

local type, pairs, error, tostring, fmt = type, pairs, error, tostring, string.format
local C = options.checkers

local function hosts(v)
  return options.string_list(v, "", function(s)
    local ok, why = core.check_host(s)
    if not ok then return nil, "is not a host: " .. why end
    return true
  end)
end

M.options = {
  allowed_hosts = { check = hosts, type = "string[]" },
  denied_hosts = { check = hosts, type = "string[]" },
}

-- ---- secrets: credentials the proxy adds on the way out ----------------------

-- Headers a secret may not set: they frame the request or belong to the
-- proxy (a secret there would change what the request is, not who asks).
local NOT_SECRET = { host = true, ["content-length"] = true, ["transfer-encoding"] = true, connection = true,
                     ["keep-alive"] = true, upgrade = true, te = true, trailer = true,
                     ["proxy-authorization"] = true, ["proxy-connection"] = true }

local function secret_value(v, where)
  if type(v) ~= "string" or v == "" then return nil, where .. " must be a non-empty string" end
  if v:find("[\r\n%z]") then return nil, where .. " must not contain CR, LF or NUL" end
  return v
end

local function secrets(v)
  if type(v) ~= "table" then return nil, "must be an array of {host =, header =, value = | value_from_env =}" end
  local out = {}
  for i, x in ipairs(v) do
    local at = fmt("[%d]", i)
    if type(x) ~= "table" then return nil, at .. " must be a table" end
    for k in pairs(x) do
      if k ~= "host" and k ~= "header" and k ~= "value" and k ~= "value_from_env" then
        return nil, fmt("%s has unknown key '%s' (allowed: host, header, value, value_from_env)", at, tostring(k))
      end
    end
    if type(x.host) ~= "string" then return nil, at .. ".host must be a string" end
    local ok, why = core.check_host(x.host)
    if not ok then return nil, fmt("%s.host is not a host: %s", at, why) end
    if x.host == "*" or x.host:match("^%*:") then
      return nil, at .. ".host must name hosts: '*' would give the secret to every host the sandbox reaches"
    end
    if type(x.header) ~= "string" or not x.header:match("^[!#$%%&'*+.^_`|~%w%-]+$") then
      return nil, at .. ".header must be a header name (letters, digits and !#$%&'*+.^_`|~-; no CR, LF or ':')"
    end
    if NOT_SECRET[x.header:lower()] then
      return nil, fmt("%s.header '%s' frames the request or is the proxy's: not one a secret may set", at, x.header)
    end
    if (x.value == nil) == (x.value_from_env == nil) then
      return nil, at .. " needs exactly one of value and value_from_env"
    end
    local value = x.value
    if x.value_from_env ~= nil then
      if type(x.value_from_env) ~= "string" or x.value_from_env == "" then
        return nil, at .. ".value_from_env must name an environment variable"
      end
      value = os.getenv(x.value_from_env)
      if value == nil then
        return nil, fmt("%s.value_from_env: the host's environment has no %s", at, x.value_from_env)
      end
    end
    local val, vwhy = secret_value(value, at .. (x.value ~= nil and ".value" or (" (" .. x.value_from_env .. ")")))
    if not val then return nil, vwhy end
    out[i] = { host = x.host, header = x.header, value = val }
  end
  return out
end

--- The option of backends whose commands go through the proxy.
M.secret_options = {
  secrets = { check = secrets, type = "{host: string, header: string, value?: string, value_from_env?: string}[]" },
  -- a PEM bundle the proxy trusts, besides the host's store, for hosts with a secret
  upstream_ca = { check = options.checkers.string },
}

-- Where TLS clients look for their trust bundle: each gets the one with the
-- sandbox's authority in it (secrets over HTTPS).
local CA_VARS = { "SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO" }

-- "host[:port]" as host and port (the port a plain request would use when
-- none is given: what a secret's check of allowed_hosts asks about).
local function host_port(h)
  local host, port = h:match("^%[(.+)%]:(%d+)$")
  if not host then host, port = h:match("^([^:]+):(%d+)$") end
  if not host then host = h:match("^%[(.+)%]$") or h end
  return host:gsub("^%*%.", "sub."), tonumber(port) or 80
end

--- After construction: every secret's host must be allowed (a secret is
--- never sent where the sandbox may not go); sb.confinement.secrets lists
--- the hosts and headers, never the values. Raises on a host not allowed.
function M.secrets_check(who, sb, o)
  if not o.secrets or #o.secrets == 0 then return end
  if not o.allowed_hosts then
    sb:dispose()
    error(fmt("%s: secrets need allowed_hosts (a secret goes only to hosts the sandbox may reach)", who), 3)
  end
  local shown = {}
  for i, x in ipairs(o.secrets) do
    local host, port = host_port(x.host)
    if not sb:host_allowed(host, port) then
      sb:dispose()
      error(fmt("%s: secrets[%d].host %s is not in allowed_hosts (a secret goes only to hosts the sandbox may reach)",
        who, i, x.host), 3)
    end
    shown[i] = { host = x.host, header = x.header }
  end
  if type(sb.confinement) == "table" then sb.confinement.secrets = shown end
end

--- Options that only make sense together.
function M.normalize(who, o)
  if o.denied_hosts and not o.allowed_hosts then
    error(fmt("%s: denied_hosts needs allowed_hosts (with no allowed_hosts nothing is reachable)", who), 3)
  end
  if o.allowed_hosts and o.allow_outbound then
    error(fmt("%s: allowed_hosts needs allow_outbound = false: with direct outbound access "
      .. "commands could go around the allowlist", who), 3)
  end
  return o
end

--- Publish sb.allowed_hosts / sb.denied_hosts (copies: the policy itself is
--- fixed in C when the sandbox is made).
function M.publish(sb, o)
  if o.allowed_hosts then
    core.setfield(sb, "allowed_hosts", { (table.unpack or unpack)(o.allowed_hosts) })
    core.setfield(sb, "denied_hosts", { (table.unpack or unpack)(o.denied_hosts or {}) })
  end
end

local GET_OPTS = {
  timeout = { check = C.seconds }, max_bytes = { check = C.size }, max_redirects = { check = C.count },
}

--- sb:http_get(url, opts): GET under allowed_hosts; every redirect re-checked.
--- Returns {status, body, headers, url, redirects, truncated, address} or
--- nil, msg, code.
function M.http_get(sb, url, opts)
  core.check_open(sb, "http_get")
  if type(url) ~= "string" then error("http_get: url must be a string", 2) end
  opts = options.check("http_get", opts, GET_OPTS)
  return M.audited(sb, url, core.http_get(sb, url, opts))
end

--- What http_get answered, into the audit trail (status and size, never the
--- body), passed on unchanged.
function M.audited(sb, url, r, msg, code)
  if audit.on(sb) then
    audit.emit(sb, { kind = "http_get", url = url, ok = r ~= nil, status = r and r.status, code = code,
                     final_url = r and r.url ~= url and r.url or nil, bytes = r and #r.body or nil,
                     redirects = r and r.redirects or nil })
  end
  return r, msg, code
end

--- http_get without waiting: the same checks, then the request in a forked
--- copy of the process (lua/forkjob.c); a job whose result() is false until
--- it answers, then what http_get returns; or nil, msg, code at once.
function M.http_start(sb, url, opts)
  core.check_open(sb, "http_get")
  if type(url) ~= "string" then error("http_get: url must be a string", 2) end
  return core.http_start(sb, url, options.check("http_get", opts, GET_OPTS))
end

-- ---- what commands get --------------------------------------------------------

local function port(v)
  if not options.is_integer(v) or v < 0 or v > 65535 then
    return nil, "must be a port number (0 = pick a free one)"
  end
  return v
end

local function port_auth(v)
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

local PORT_OPTS = { expose_port = port, bind_host = C.string, port_ttl = C.seconds, port_auth = port_auth }

local function loopback(host)
  return host == "127.0.0.1" or host == "::1" or host:match("^127%.%d+%.%d+%.%d+$") ~= nil
end

-- An exposed port for a background command (opts checked): the gate and
-- what the handle shows; false without expose_port; nil, msg, code.
local function expose(sb, opts, env)
  if opts.expose_port == nil then
    for k in pairs(PORT_OPTS) do
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
  local gate, hport, child_port = core.expose(sb, {
    port = opts.expose_port, bind_host = bind, ttl = opts.port_ttl, token = token,
  })
  if not gate then return nil, hport, child_port end
  local host = bind
  if bind == "0.0.0.0" then host = "127.0.0.1" elseif bind == "::" then host = "::1" end
  if host:find(":", 1, true) then host = "[" .. host .. "]" end
  env.PORT = tostring(child_port)
  return { gate = gate, fields = { port = hport, child_port = child_port, token = token,
                                   url = fmt("http://%s:%d/", host, hport) } }
end

-- The command hook: proxy variables when the sandbox has allowed_hosts, and
-- an exposed port that starts with the command and closes with it.
M.command = {
  options = PORT_OPTS,
  prepare = function(sb, opts, env)
    local pport, msg, code = core.net_proxy(sb)
    if pport == nil and msg ~= nil then return nil, msg, code end
    if pport then
      local url = fmt("http://127.0.0.1:%d", pport)
      for _, k in pairs { "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY" } do
        env[k], env[k:lower()] = url, url
      end
      env.NO_PROXY, env.no_proxy = "", ""
      local bundle = core.tls_bundle(sb)
      if bundle then
        for _, k in ipairs(CA_VARS) do env[k] = bundle end
      end
    end
    return expose(sb, opts, env)
  end,
  started = function(st, h) return core.gate_start(st.gate, h.pid) end,
  ended = function(st, r)
    if core.gate_finish(st.gate) then r.killed_by = "port_ttl" end
  end,
}

return M
