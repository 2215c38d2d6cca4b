-- The sandbox options spelled as command-line flags (SPEC §13), and
-- --config FILE: `--max-read-bytes 10MB` is max_read_bytes = "10MB",
-- `--allow-host example.org` (repeatable) adds to allowed_hosts, `--deny
-- GLOB` to rules.deny. A flag's value is checked by the option's own
-- checker (the schema of sandbox.<backend>), so a flag is exactly as strict
-- as the Lua option, typos get the same suggestions, and nothing here
-- repeats a default.
local options = require "sandbox.options"
local json = require "sandbox.json"
local sandbox = require "sandbox"

local M = {}

local type, pairs, ipairs, tonumber, tostring, error, fmt = type, pairs, ipairs, tonumber, tostring, error, string.format
local concat, sort = table.concat, table.sort

-- How each option is spelled. kind: "bool" (--x, --no-x), "value" (--x V),
-- "list" (repeatable, appends), "nested" (repeatable, appends to opt[key][sub]),
-- "env" (--env NAME=VALUE), "user" (--user UID[:GID]), "secret" (--secret
-- HOST:HEADER=ENVVAR). Options not here
-- (audit, files) have no flag: give them in a Lua --config file.
local SPELLING = {
  max_read_bytes = { "value", "SIZE", "largest file a read returns" },
  max_write_bytes = { "value", "SIZE", "largest write" },
  allow_overwrite = { "bool", nil, "writes may replace existing files (--no-allow-overwrite: they may not)" },
  read_only = { "bool", nil, "no file may be changed: not by the file tools, not by commands (their view of the directory is read-only)" },
  allow_escaping_links = { "bool", nil, "follow symbolic links that lead out of the root" },
  allowed_hosts = { "list", "HOST", "a host commands and http_get may reach (repeatable; *.example.org)", flag = "allow-host" },
  denied_hosts = { "list", "HOST", "a host refused even if allowed (repeatable)", flag = "deny-host" },
  deny = { "nested", "GLOB", "paths no operation may touch, file tool or command (repeatable; '**/*.pem'): masked in the commands' view", key = "rules", sub = "deny" },
  allow = { "nested", "GLOB", "only paths matching these, for the file tools and commands alike (repeatable)", key = "rules", sub = "allow" },
  read_ext = { "nested", "EXT", "extensions the file tools may read (repeatable; .md); commands are not bound (a compiler reads any)", key = "extensions", sub = "read" },
  write_ext = { "nested", "EXT", "extensions the file tools may write (repeatable); commands are not bound (a compiler writes .o)", key = "extensions", sub = "write" },
  -- VirtualSandbox
  cwd = { "value", "PATH", "the absolute path the agent sees as the root (virtual)" },
  max_total_bytes = { "value", "SIZE", "bytes the whole tree may hold (virtual)" },
  max_files = { "value", "N", "entries the tree may hold (virtual)" },
  -- ContainerSandbox
  create = { "bool", nil, "create the directory if it is missing" },
  mode = { "value", "rw|r|w", "what the file tools and commands may do in the directory (r: read only; w: write and list, never read)" },
  read_roots = { "list", "DIR", "another directory readable as /<name> (repeatable)", flag = "read-root" },
  audit_log = { "value", "FILE", "append every event (files, commands, network, approvals, tool calls) to FILE as hash-chained JSON lines; check it with agent-sandbox audit verify FILE" },
  max_disk_usage = { "value", "SIZE", "bytes the sandbox's files may hold, for the file tools and commands alike (an overlay's upper layer is a file system of that size; elsewhere commands are refused unless --max-disk-usage-files-only)" },
  max_disk_usage_files_only = { "bool", nil, "--max-disk-usage binds the file tools only, and commands may run (which it does not bind)" },
  resolver = { "value", "auto|openat2|fallback", "how paths are resolved beneath the root" },
  exec = { "bool", nil, "commands may run (--no-exec: files only)" },
  exec_timeout = { "value", "SECONDS", "default timeout of a command" },
  env = { "env", "NAME=VALUE", "a variable for commands (repeatable)" },
  secrets = { "secret", "HOST:HEADER=ENVVAR", "the proxy sets HEADER to $ENVVAR (read from this environment, never from the flag) on HTTP and HTTPS requests to HOST, which must be allowed; the value never enters the sandbox (repeatable)", flag = "secret" },
  upstream_ca = { "value", "FILE", "a PEM bundle the proxy trusts, besides the host's store, for hosts with a --secret", flag = "upstream-ca" },
  inherit_env = { "bool", nil, "pass the host's environment on, without its secrets" },
  max_background_processes = { "value", "N", "background commands at once" },
  max_output_bytes = { "value", "SIZE", "output a command's result keeps" },
  allow_shell = { "bool", nil, "offer run_shell (/bin/sh -c)" },
  kill_grace = { "value", "SECONDS", "from SIGTERM to SIGKILL" },
  confine = { "bool", nil, "every layer of confinement (--no-confine: limits, network and tree kill only)" },
  allow_outbound = { "bool", nil, "commands reach the network directly (no allowlist)" },
  memory_limit = { "value", "SIZE", "memory of a command's tree" },
  cpu_limit = { "value", "CORES|N%", "CPU of a command's tree" },
  pids_limit = { "value", "N", "processes in a command's tree" },
  file_size_limit = { "value", "SIZE", "largest file a command may write" },
  user = { "user", "UID[:GID]", "run commands as this user (root only)", kinds = { container = true, overlay = true } },
  read_paths = { "list", "PATH", "another host path commands may read (repeatable)", flag = "read-path" },
  -- OverlaySandbox
  state_dir = { "value", "DIR", "where the overlay keeps its layers and checkpoints (default: temporary)" },
  -- RemoteSandbox
  api_url = { "value", "URL", "the engine's control plane (E2B cloud by default; CubeSandbox or a self-hosted E2B: its address)" },
  envd_url = { "value", "URL", "envd's address inside the sandbox, where the engine's routing differs" },
  domain = { "value", "DOMAIN", "the domain envd's address is made from" },
  template = { "value", "NAME", "the template a new remote sandbox starts from" },
  timeout = { "value", "SECONDS", "how long the engine keeps the remote sandbox alive (its TTL)" },
  sandbox_id = { "value", "ID", "reattach to this remote sandbox instead of creating one" },
  allow_internet_access = { "bool", nil, "the remote sandbox may reach the internet (the engine enforces it)" },
  keep = { "bool", nil, "leave the remote sandbox running at exit (reattach it with --sandbox-id)" },
  root = { "value", "PATH", "the directory inside the remote sandbox that is the agent's root" },
  remote_user = { "value", "NAME", "the user the remote sandbox's files and commands belong to", key = "user",
                  kinds = { remote = true } },
  connect_timeout = { "value", "SECONDS", "to open a connection to the engine; beyond: EIO" },
  request_timeout = { "value", "SECONDS", "a whole call to the engine (not a command); beyond: EIO" },
  idle_timeout = { "value", "SECONDS", "a command's stream without a byte: the stream is followed again, EIO if that fails" },
  login = { "bool", nil, "remote commands read the login profile first (/etc/profile, ~/.profile), as E2B's SDK's bash -l" },
  tree_helper = { "bool", nil, "remote commands run under the engine-side helper, uploaded once (default on; off: the sh wrapper)" },
}

-- Options that are no flag: a function, a tree of files (a Lua --config
-- gives them), the directory (--dir), the tables spelled by SPELLING's
-- nested entries, a remote engine's metadata, and its key: a secret on a
-- command line is visible to every user of the machine (E2B_API_KEY or
-- --config give it).
local NO_FLAG = { audit = true, files = true, base_dir = true, rules = true, extensions = true, metadata = true,
                  api_key = true }

local function flag_name(key, sp) return sp.flag or (key:gsub("_", "-")) end

--- The flags of backend `kind`: {flag = {key =, opt =, kind =, meta =, help =}}.
--- An option SPELLING does not know is spelled as its name: a switch when
--- its checker is the boolean one, else a value.
function M.table(kind)
  local schema = sandbox.schemas[kind]
  local out, spelled = {}, {}
  for key, sp in pairs(SPELLING) do
    local opt = sp.key or key
    if schema[opt] and (not sp.kinds or sp.kinds[kind]) then
      -- an entry of another name spelling one option ("remote_user" is
      -- --user): the flag is the option's own name
      local flag = sp.flag or (sp.key and not sp.sub and flag_name(opt, {})) or flag_name(key, sp)
      out[flag] = { key = key, opt = opt, sub = sp.sub, kind = sp[1], meta = sp[2], help = sp[3] }
      spelled[opt] = true
    end
  end
  for key, spec in pairs(schema) do
    if not NO_FLAG[key] and not spelled[key] then
      local bool = spec.check == options.checkers.boolean
      out[flag_name(key, {})] = { key = key, opt = key, kind = bool and "bool" or "value",
                                  meta = not bool and "VALUE" or nil, help = "the option " .. key }
    end
  end
  return out
end

local function fail(msg) error({ usage = msg }, 0) end
M.fail = fail

-- A flag's string as the option's checker wants it: the string itself if
-- the checker takes it ("10MB", "rw"), else the number it spells.
local function value_of(schema, opt, s, flag)
  local check = schema[opt].check
  local v, why = check(s)
  if v == nil and tonumber(s) then
    local n = tonumber(s)
    v, why = check(n)
    if v ~= nil then return n end
  end
  if v == nil then fail(fmt("--%s %s: %s", flag, s, why)) end
  return s
end

local function user_of(s, flag)
  local uid, gid = s:match("^(%d+):(%d+)$")
  uid = uid or s:match("^(%d+)$")
  if not uid then fail(fmt("--%s %s: expected UID or UID:GID (numbers)", flag, s)) end
  return { uid = tonumber(uid), gid = gid and tonumber(gid) }
end

-- Store one flag's value into the options table.
local function apply(o, f, flag, value, schema)
  local k = f.kind
  if k == "bool" then
    o[f.opt] = value
  elseif k == "value" then
    o[f.opt] = value_of(schema, f.opt, value, flag)
  elseif k == "list" then
    local l = o[f.opt] or {}
    l[#l + 1] = value
    o[f.opt] = l
  elseif k == "nested" then
    local t = o[f.opt] or {}
    local l = t[f.sub] or {}
    l[#l + 1] = value
    t[f.sub], o[f.opt] = l, t
  elseif k == "env" then
    local name, v = value:match("^([^=]+)=(.*)$")
    if not name then fail(fmt("--%s %s: expected NAME=VALUE", flag, value)) end
    local e = o.env or {}
    e[name] = v
    o.env = e
  elseif k == "user" then
    o.user = user_of(value, flag)
  elseif k == "secret" then -- the value itself never on a command line: other users see those
    local host, header, var = value:match("^(.+):([^:=]+)=([%w_]+)$")
    if not host then fail(fmt("--%s %s: expected HOST:HEADER=ENVVAR (the value comes from $ENVVAR)", flag, value)) end
    local l = o.secrets or {}
    l[#l + 1] = { host = host, header = header, value_from_env = var }
    o.secrets = l
  end
end

--- Parse argv (an array) for a subcommand. own: the subcommand's flags
--- {name = {kind = "bool"|"value"|"list", meta =, help =, choices =}}; it
--- picks the backend with own_result.backend before options are checked
--- (pick(cli) -> kind). Returns cli (own flags' values), opts (sandbox
--- options, config file first, flags over it), rest (after "--").
--- Raises {usage = msg} for anything wrong.
function M.parse(argv, own, pick)
  local cli, raw, rest = {}, {}, {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--" then
      for j = i + 1, #argv do rest[#rest + 1] = argv[j] end
      break
    end
    if a:sub(1, 2) ~= "--" or a == "--" then
      rest[#rest + 1] = a -- the first word of a command: the rest is its own
      for j = i + 1, #argv do rest[#rest + 1] = argv[j] end
      cli._positional = true
      break
    end
    local name, inline = a:sub(3):match("^([^=]+)=(.*)$")
    name = name or a:sub(3)
    raw[#raw + 1] = { name = name, inline = inline, pos = i }
    -- consume the value now: whether a flag takes one depends only on its name
    local o = own[name]
    local takes = (o and o.kind ~= "bool") or (not o and not name:find("^no%-") and not M.is_bool(name))
    if takes and inline == nil then
      i = i + 1
      if argv[i] == nil then fail(fmt("--%s needs a value", name)) end
      raw[#raw].value = argv[i]
    else
      raw[#raw].value = inline
    end
    i = i + 1
  end
  -- the subcommand's own flags first: they choose the backend and the config
  local left = {}
  for _, r in ipairs(raw) do
    local o = own[r.name]
    if o then
      if o.kind == "bool" then
        if r.inline ~= nil then fail(fmt("--%s takes no value", r.name)) end
        cli[r.name] = true
      elseif o.kind == "list" then
        local l = cli[r.name] or {}
        l[#l + 1] = r.value
        cli[r.name] = l
      else
        if o.choices and not o.choices[r.value] then
          local c = {}
          for k in pairs(o.choices) do c[#c + 1] = k end
          sort(c)
          fail(fmt("--%s must be one of %s, got '%s'", r.name, concat(c, ", "), r.value))
        end
        cli[r.name] = r.value
      end
    else
      left[#left + 1] = r
    end
  end
  local kind = pick(cli)
  local opts = cli.config and M.load_config(cli.config, kind) or {}
  local flags, schema = M.table(kind), sandbox.schemas[kind]
  for _, r in ipairs(left) do
    local name, value = r.name, r.value
    local f = flags[name]
    if not f and name:find("^no%-") and flags[name:sub(4)] and flags[name:sub(4)].kind == "bool" then
      f, value = flags[name:sub(4)], false
      if r.inline ~= nil then fail(fmt("--%s takes no value", name)) end
    elseif f and f.kind == "bool" then
      if r.inline ~= nil then fail(fmt("--%s takes no value (use --no-%s to turn it off)", name, name)) end
      value = true
    end
    if not f then
      local all = {}
      for k in pairs(flags) do all[#all + 1] = k end
      for k in pairs(own) do all[#all + 1] = k end
      for _, k in ipairs { "container", "overlay", "virtual", "remote" } do
        if k ~= kind and M.table(k)[name] then
          fail(fmt("--%s is not an option of the %s sandbox (it is one of the %s sandbox)", name, kind, k))
        end
      end
      fail(fmt("unknown flag '--%s'%s", name, (options.suggest(name, all):gsub("'([^']+)'%?%)$", "'--%1'?)"))))
    end
    apply(opts, f, name, value, schema)
  end
  return cli, opts, rest, kind
end

--- Does --name take no value (a boolean option of some backend)?
function M.is_bool(name)
  for _, kind in ipairs { "overlay", "virtual", "remote" } do
    local f = M.table(kind)[name]
    if f then return f.kind == "bool" end
  end
  return false
end

-- ---- --config FILE ------------------------------------------------------------

-- Keys a config file may hold besides the backend's options.
M.CONFIG_KEYS = { approve = true, tools = true }

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then fail(fmt("--config: cannot read %s", err)) end
  local s = f:read("*a")
  f:close()
  return s
end

--- A config file: JSON (an object) or Lua (a chunk returning a table, or
--- assigning the options as globals), run with no access to anything.
--- Checked against the backend's schema: an unknown key raises with a
--- suggestion, as in Lua.
function M.load_config(path, kind)
  local text = read_file(path)
  local t
  if path:match("%.json$") or text:match("^%s*{") then
    local v, err = json.decode(text)
    if type(v) ~= "table" then fail(fmt("--config %s: not a JSON object (%s)", path, tostring(err or "not an object"))) end
    t = v
  else
    local env = {}
    local chunk, err
    if setfenv then -- 5.1 and LuaJIT
      chunk, err = loadstring(text, "=" .. path)
      if chunk then setfenv(chunk, env) end
    else
      chunk, err = load(text, "=" .. path, "t", env)
    end
    if not chunk then fail(fmt("--config: %s", err)) end
    local ok, v = pcall(chunk)
    if not ok then fail(fmt("--config: %s", tostring(v))) end
    t = type(v) == "table" and v or env
  end
  local schema = sandbox.schemas[kind]
  for k in pairs(t) do
    if type(k) ~= "string" then fail(fmt("--config %s: keys must be option names", path)) end
    if not schema[k] and not M.CONFIG_KEYS[k] then
      local all = {}
      for n in pairs(schema) do all[n] = true end
      for n in pairs(M.CONFIG_KEYS) do all[n] = true end
      fail(fmt("--config %s: unknown option '%s'%s", path, k, options.suggest(k, all)))
    end
  end
  return t
end

--- Help lines, sorted, for the flags of backend `kind` (a name) or for a
--- table of flags {name = {meta =, help =}} (a subcommand's own).
function M.help(kind)
  local rows = {}
  for name, f in pairs(type(kind) == "table" and kind or M.table(kind)) do
    local left = "--" .. name .. (f.meta and (" " .. f.meta) or "")
    rows[#rows + 1] = fmt("  %-34s %s", left, f.help)
  end
  sort(rows)
  return concat(rows, "\n")
end

return M
