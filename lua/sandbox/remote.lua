-- The RemoteSandbox (SPEC §15): a sandbox on an engine that speaks E2B's
-- API (E2B cloud, self-hosted E2B, CubeSandbox). Its options; the
-- constructor (sandbox.remote) comes from sandbox.backend. The key may come
-- from E2B_API_KEY, as E2B's own SDKs take it.
local backend = require "sandbox.backend"
local options = require "sandbox.options"

local M = {}

local type, pairs, fmt, getenv = type, pairs, string.format, os.getenv
local C = options.checkers

-- {name = "value"}: strings both, no NUL.
local function string_map(v)
  if type(v) ~= "table" then return nil, "must be a table of name = \"value\"" end
  for k, x in pairs(v) do
    if type(k) ~= "string" or k == "" or k:find("\0", 1, true) then return nil, "keys must be non-empty strings" end
    if type(x) ~= "string" or x:find("\0", 1, true) then return nil, fmt("['%s'] must be a string", k) end
  end
  return v
end

local function url(v)
  if type(v) ~= "string" or not v:match("^https?://[^/%s]+") or v:find("[%s%z]") then
    return nil, "must be an http:// or https:// URL"
  end
  return (v:gsub("/+$", ""))
end

local function id(v)
  if type(v) ~= "string" or not v:match("^[%w_-]+$") or #v > 127 then
    return nil, "must be a sandbox id (letters, digits, '-' and '_')"
  end
  return v
end

local function word(v)
  if type(v) ~= "string" or v == "" or v:find("[%s%z/:]") then return nil, "must be a non-empty word" end
  return v
end

M.options = {
  api_url = { check = url, default = "https://api.e2b.app", type = "string" },
  api_key = { check = C.string },
  envd_url = { check = url, type = "string" },        -- default: https://49983-<id>.<domain>
  domain = { check = word, type = "string" },         -- default: the one the engine names, else e2b.app
  template = { check = C.string, default = "base" },
  timeout = { check = C.seconds, default = 300 }, -- the engine keeps the sandbox this long (its TTL)
  sandbox_id = { check = id, type = "string" },       -- reattach instead of creating
  metadata = { check = string_map, type = "table<string, string>" },
  allow_internet_access = { check = C.boolean },
  keep = { check = C.boolean, default = false }, -- dispose leaves the sandbox running
  root = { check = C.abspath, default = "/home/user" },
  user = { check = word, default = "user", type = "string" },
  connect_timeout = { check = C.seconds, default = 10 },
  request_timeout = { check = C.seconds, default = 60 },
  idle_timeout = { check = C.seconds, default = 30 },
  exec = { check = C.boolean, default = true },
  login = { check = C.boolean, default = false }, -- commands see the login profile, as the SDK's bash -l
  -- commands run under the engine-side helper (a static program uploaded
  -- once) instead of the sh wrapper: faster, and the tree is their descendants
  tree_helper = { check = C.boolean, default = true },
}

-- commands run in the engine's sandbox, isolated by the engine: the exec
-- options, none of the local confinement's
local b = backend.define("remote", { options = M.options, required = { "api_key" }, commands = true, confine = false })
M.schema = b.schema

local core = require "sandbox.core"

local function with_key(opts)
  if type(opts) == "table" and opts.api_key == nil and getenv("E2B_API_KEY") then
    local o = {}
    for k, v in pairs(opts) do o[k] = v end
    o.api_key = getenv("E2B_API_KEY")
    return o
  end
  return opts
end

local LIST_OPTIONS = {}
for _, k in ipairs { "api_url", "api_key", "connect_timeout", "request_timeout", "idle_timeout" } do
  LIST_OPTIONS[k] = M.options[k]
end

--- sandbox.remote_list{api_url =, api_key =}: the engine's sandboxes for the
--- key, {{sandbox_id =, template =, state =}, ...}, or nil, msg, code.
function M.list(opts)
  local o = options.check("sandbox.remote_list", with_key(opts), LIST_OPTIONS, { "api_key" })
  return core.remote_list(o)
end

--- sandbox.remote{api_url =, api_key =, template =, timeout =, ...} or
--- sandbox.remote{api_url =, api_key =, sandbox_id =}: the sandbox, or nil,
--- msg, code.
function M.new(opts) return b.new(with_key(opts)) end

return M
