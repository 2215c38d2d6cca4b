-- Running commands (SPEC §5): argument checks, the child's environment, the
-- shell gate. The mechanism (spawn, pipes, timeouts, tree kill) is C.
local core = require "sandbox.core"
local options = require "sandbox.options"
local net = require "sandbox.net"

local M = {}

local type, pairs, ipairs, error, fmt = type, pairs, ipairs, error, string.format
local sort, concat = table.sort, table.concat

-- Per-sandbox settings, by sandbox object (weak: the sandbox owns its life).
local settings = setmetatable({}, { __mode = "k" })

M.DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

-- Host variables never passed on by inherit_env (Codex's defaults, widened).
local SECRET = { "KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION" }

local function is_secret(name)
  local up = name:upper()
  for _, w in ipairs(SECRET) do
    if up:find(w, 1, true) then return true end
  end
  return false
end

local function check_env(v, who)
  if type(v) ~= "table" then return nil, "must be a table of NAME = value strings" end
  for k, x in pairs(v) do
    if type(k) ~= "string" or k == "" or k:find("[=%z]") then
      return nil, fmt("has an invalid variable name %q", tostring(k))
    end
    if type(x) ~= "string" or x:find("%z") then
      return nil, fmt("['%s'] must be a string without NUL", k)
    end
  end
  return v
end
options.checkers.env = check_env

--- Remember a container's exec settings (from its checked options).
function M.attach(sb, o)
  settings[sb] = {
    env = o.env or {},
    inherit_env = o.inherit_env or false,
    timeout = o.exec_timeout or 30,
    allow_shell = o.allow_shell or false,
  }
end

--- Is exec_shell allowed by the sandbox's options?
function M.shell_allowed(sb)
  local s = settings[sb]
  return s ~= nil and s.allow_shell
end

--- The default timeout of a foreground command, in seconds.
function M.timeout(sb)
  local s = settings[sb]
  return s and s.timeout or nil
end

--- The environment a child gets (SPEC §2): by default only PATH, HOME (the
--- root), LANG, TERM, NO_COLOR and PAGER plus the configured variables; the
--- host's secrets never reach a child.
function M.environment(sb, extra)
  local s = settings[sb]
  local env = {}
  if s.inherit_env then
    for k, v in pairs(core.environ()) do
      if not is_secret(k) then env[k] = v end
    end
  else
    env.PATH = M.DEFAULT_PATH
    env.LANG = "C.UTF-8"
    env.TERM = "dumb"
    env.NO_COLOR = "1"
    env.PAGER = "cat"
  end
  env.HOME = sb.cwd
  local conf = sb.confinement
  if conf and conf.tmpdir then env.TMPDIR = conf.tmpdir end -- /tmp itself is out of reach
  for k, v in pairs(s.env) do env[k] = v end
  for k, v in pairs(extra or {}) do env[k] = v end
  local list = {}
  for k, v in pairs(env) do list[#list + 1] = k .. "=" .. v end
  sort(list)
  return list, env.PATH
end

local EXEC_OPTS = {
  cwd = "string", env = "env", timeout = "seconds", stdin = "string", background = "boolean",
  on_stdout = "func", on_stderr = "func", on_exit = "func",
}
for k, v in pairs(net.EXEC_OPTS) do EXEC_OPTS[k] = v end
local SHELL_OPTS = {}
for k, v in pairs(EXEC_OPTS) do SHELL_OPTS[k] = v end
SHELL_OPTS.allow_shell = "boolean"

local function unsupported()
  return nil, "ENOTSUP: this sandbox cannot run commands (it is virtual, or exec = false)", "ENOTSUP"
end

-- What a confinement denial looks like in a command's output (Codex's
-- heuristic, widened): a failing command showing one of these gets a hint so
-- a model does not retry blindly.
local DENIAL = { "Permission denied", "Operation not permitted", "Network is unreachable",
                 "not in allowed_hosts", "blocked%-by%-allowlist",
                 "Read%-only file system", "Cannot allocate memory", "Resource temporarily unavailable" }

local function add_hint(sb, r)
  local conf = sb.confinement
  if not conf or r.exit_code == 0 then return r end
  if r.oom then
    r.hint = "the sandbox's memory_limit was reached and the command was killed"
  elseif r.pids_limit_hit then
    r.hint = "the sandbox's pids_limit refused to start more processes"
  elseif r.signal == "SIGXFSZ" then
    r.hint = "the sandbox's file_size_limit was exceeded"
  elseif not r.timed_out then
    local text = r.stderr .. "\n" .. r.stdout
    for _, pat in ipairs(DENIAL) do
      if text:find(pat) then
        r.sandbox_denied = true
        r.hint = "the sandbox denied this: commands may write only inside the sandbox root, "
          .. "read only system directories and the root, and have "
          .. (conf.network == "allowed" and "network access"
            or conf.network:find("^allowed_hosts") and "network access only to the sandbox's allowed_hosts "
              .. "(through its proxy; other hosts get HTTP 403)"
            or "no network")
        break
      end
    end
  end
  return r
end

local function run(sb, argv, opts)
  local port_env, port, pcode = net.expose(sb, opts)
  if port_env == nil then return nil, port, pcode end
  local extra, msg, code = net.proxy_env(sb)
  if not extra then return nil, msg, code end
  for k, v in pairs(port_env or {}) do extra[k] = v end
  for k, v in pairs(opts.env or {}) do extra[k] = v end
  local env, path = M.environment(sb, extra)
  local timeout = opts.timeout
  if timeout == nil and not opts.background then timeout = settings[sb].timeout end
  local spec = {
    argv = argv, env = env, path = path, cwd = opts.cwd, stdin = opts.stdin,
    background = opts.background, keep_stdin = opts.background and opts.stdin == nil,
    timeout = timeout, on_stdout = opts.on_stdout, on_stderr = opts.on_stderr, on_exit = opts.on_exit,
  }
  for k, v in pairs(port or {}) do spec[k] = v end
  local h
  h, msg, code = core.spawn(sb, spec)
  if not h then return nil, msg, code end
  if opts.background then return h end
  local r, werr, wcode = h:wait()
  if not r then return nil, werr, wcode end
  return add_hint(sb, r)
end

--- sb:exec(cmd, args, opts): run cmd with args as is (no shell, no word
--- splitting). Foreground: the result table; background: a handle.
function M.exec(sb, cmd, args, opts)
  core.check_open(sb, "exec")
  if type(cmd) ~= "string" then error("exec: cmd must be a string", 2) end
  if args ~= nil and type(args) ~= "table" then error("exec: args must be an array of strings", 2) end
  local argv = { cmd }
  for i, a in ipairs(args or {}) do
    if type(a) ~= "string" then error(fmt("exec: args[%d] must be a string", i), 2) end
    argv[#argv + 1] = a
  end
  opts = options.check("exec", opts, EXEC_OPTS)
  if not sb.has_exec or not settings[sb] then return unsupported() end
  if cmd == "" then return nil, "EINVAL: empty command", "EINVAL" end
  return run(sb, argv, opts)
end

--- sb:exec_shell(script, opts): /bin/sh -c script, only when the shell is
--- allowed (allow_shell in the sandbox options or in opts).
function M.exec_shell(sb, script, opts)
  core.check_open(sb, "exec_shell")
  if type(script) ~= "string" then error("exec_shell: script must be a string", 2) end
  opts = options.check("exec_shell", opts, SHELL_OPTS)
  if not sb.has_exec or not settings[sb] then return unsupported() end
  if not (settings[sb].allow_shell or opts.allow_shell) then
    return nil, "EACCES: shell commands are not allowed in this sandbox (allow_shell is false); "
      .. "run the program directly with exec and an argument list", "EACCES"
  end
  opts.allow_shell = nil
  return run(sb, { "/bin/sh", "-c", script }, opts)
end

return M
