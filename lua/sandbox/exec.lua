-- Running commands (SPEC §5): the options of commands (schema, defaults,
-- the children's base environment), the exec and exec_shell methods
-- (argument checks, the shell gate, hints on denials). The mechanism
-- (spawn, pipes, timeouts, tree kill) is C; parts that attach to a command
-- (an exposed port) register with exec.use.
local core = require "sandbox.core"
local options = require "sandbox.options"
local async = require "sandbox.async"
local audit = require "sandbox.audit"

local M = {}

local type, pairs, ipairs, error, tostring, fmt = type, pairs, ipairs, error, tostring, string.format
local C = options.checkers

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

local function env(v)
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
M.check_env = env

M.options = {
  exec_timeout = { check = C.seconds, default = 30 },
  env = { check = env, default = {}, type = "table<string, string>" },
  inherit_env = { check = C.boolean, default = false },
  max_background_processes = { check = C.positive, default = 3 },
  max_output_bytes = { check = C.size, default = 1024 * 1024 },
  allow_shell = { check = C.boolean, default = false },
  kill_grace = { check = C.seconds, default = 2 },
}

--- Normalise a container's checked options: the children's base
--- environment (SPEC §2) — by default only PATH, LANG, TERM, NO_COLOR and
--- PAGER plus `env`; the host's secrets never reach a child — as
--- o.environment for the C core, which adds HOME (the root's real path)
--- unless `env` sets it. On an engine (engine = true: a RemoteSandbox) the
--- machine has an environment of its own — the template's PATH (nvm,
--- conda, cargo tools), its LANG — which envd gives every command: only
--- TERM, NO_COLOR and PAGER are added there, and `env` wins over all.
function M.normalize(o, engine)
  local e = {}
  if o.inherit_env then
    for k, v in pairs(core.environ()) do
      if not is_secret(k) then e[k] = v end
    end
    e.HOME = nil
    e.PATH = e.PATH or M.DEFAULT_PATH
  elseif engine then
    e.TERM, e.NO_COLOR, e.PAGER = "dumb", "1", "cat"
  else
    e.PATH, e.LANG, e.TERM, e.NO_COLOR, e.PAGER = M.DEFAULT_PATH, "C.UTF-8", "dumb", "1", "cat"
  end
  for k, v in pairs(o.env) do e[k] = v end
  o.environment = e
  return o
end

-- ---- parts that attach to commands ----------------------------------------------

-- Each: {options = {key = checker}, prepare = function(sb, opts, env) ->
-- state | false | nil, msg, code, started = function(state, h) -> true |
-- nil, msg, code, ended = function(state, result)}.
local hooks = {}
local CALL_OPTS = {
  cwd = { check = C.string }, env = { check = env }, timeout = { check = C.seconds },
  stdin = { check = C.string }, background = { check = C.boolean },
  on_stdout = { check = C.func }, on_stderr = { check = C.func }, on_exit = { check = C.func },
  stdio = { check = options.one_of("pipe", "inherit") },
  on_wait = { check = C.func }, wait_interval = { check = C.seconds }, wait = { check = C.boolean },
}
local SHELL_OPTS = { allow_shell = { check = C.boolean } }
for k, v in pairs(CALL_OPTS) do SHELL_OPTS[k] = v end

--- Attach a part to every command (init.lua wires the network part).
function M.use(hook)
  hooks[#hooks + 1] = hook
  for k, check in pairs(hook.options or {}) do
    CALL_OPTS[k] = { check = check }
    SHELL_OPTS[k] = { check = check }
  end
end

-- ---- the methods ---------------------------------------------------------------

local function unsupported()
  return nil, "ENOTSUP: this sandbox cannot run commands (it is virtual, or exec = false)", "ENOTSUP"
end

-- What a confinement denial looks like in a command's output (Codex's
-- heuristic, widened): a failing command showing one of these gets a hint so
-- a model does not retry blindly.
local DENIAL = { "Permission denied", "Operation not permitted", "Network is unreachable",
                 "not in allowed_hosts", "blocked%-by%-allowlist",
                 "Read%-only file system", "Cannot allocate memory", "Resource temporarily unavailable" }

local NETWORK = {
  allowed = "network access",
  allowed_hosts = "network access only to the sandbox's allowed_hosts (through its proxy; other hosts get HTTP 403)",
  none = "no network",
}

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
          .. (NETWORK[conf.network and conf.network.mode] or "no network")
        break
      end
    end
  end
  return r
end

-- Options that only make sense together: raised, as a programming error.
local function check_combination(opts)
  if opts.stdio == "inherit" then
    for _, k in ipairs { "stdin", "on_stdout", "on_stderr" } do
      if opts[k] ~= nil then error(fmt("exec: option '%s' cannot be used with stdio = \"inherit\"", k), 4) end
    end
  end
  if opts.background and (opts.on_wait or opts.wait_interval) then
    error("exec: on_wait and wait_interval are for foreground commands (a background one returns at once)", 4)
  end
  if opts.wait_interval and not opts.on_wait then error("exec: wait_interval needs on_wait", 4) end
  if opts.wait == false and opts.on_wait then
    error("exec: wait = false cannot have on_wait (its result goes to on_exit)", 4)
  end
end

-- A foreground wait that lets the caller in every wait_interval seconds:
-- on_wait(h, elapsed) may kill the command (a cancelled request) or do
-- other work (a server answering pings); an error it raises kills the
-- command and is re-raised.
local function wait_with(h, opts)
  local step, t0 = opts.wait_interval or 0.1, core.clock()
  while true do
    local r, msg, code = h:wait(step)
    if r or code ~= "EAGAIN" then return r, msg, code end
    local ok, err = pcall(opts.on_wait, h, core.clock() - t0)
    if not ok then
      h:kill("KILL")
      h:wait()
      error(err, 0)
    end
  end
end

-- ---- the audit trail's view of a command ------------------------------------

-- Which of the sandbox's limits a result shows were reached.
local function limits_hit(r)
  local l = {}
  if r.timed_out then l[#l + 1] = "timeout" end
  if r.oom then l[#l + 1] = "memory" end
  if r.pids_limit_hit then l[#l + 1] = "pids" end
  if r.truncated then l[#l + 1] = "output" end
  if r.signal == "SIGXFSZ" then l[#l + 1] = "file_size" end
  return l[1] and l or nil
end

-- The end of a command: who killed it (if anyone), how it ended, what it
-- cost; then the log is written (a command's end is a flush point).
local function audit_end(sb, id, r)
  if r.killed_by then audit.emit(sb, { kind = "command_killed", id = id, by = r.killed_by }) end
  if r.start_failed then
    audit.emit(sb, { kind = "command_end", id = id, start_failed = r.start_failed, error = r.error })
  else
    audit.emit(sb, { kind = "command_end", id = id, exit_code = r.exit_code, signal = r.signal,
                     duration = r.duration, output_bytes = r.output_bytes, limits = limits_hit(r) })
  end
  core.audit_flush(sb, true)
end

local function run(sb, argv, opts)
  check_combination(opts)
  local extra, states = {}, {}
  for i, hk in ipairs(hooks) do
    local st, msg, code = hk.prepare(sb, opts, extra)
    if st == nil then return nil, msg, code end
    states[i] = st
  end
  for k, v in pairs(opts.env or {}) do extra[k] = v end
  local spec = {
    argv = argv, env = extra, cwd = opts.cwd, stdin = opts.stdin, timeout = opts.timeout,
    background = opts.background, keep_stdin = opts.background and opts.stdin == nil and opts.stdio ~= "inherit",
    start_later = opts.wait == false, -- a RemoteSandbox's start is a round trip: heard on a later turn
    inherit_stdio = opts.stdio == "inherit",
    on_stdout = opts.on_stdout, on_stderr = opts.on_stderr, on_exit = opts.on_exit,
    fields = {},
  }
  if opts.wait == false then
    -- the caller's loop pumps; on_exit gets the result a wait would return
    -- (background: the start is not waited for either)
    local on_exit = opts.on_exit
    spec.on_exit = function(r)
      if r.start_failed then -- it never ran: what a start that fails at once returns
        if on_exit then on_exit(nil, r.error, r.start_failed) end
        return
      end
      add_hint(sb, r)
      if on_exit then on_exit(r) end
    end
  end
  for i, st in pairs(states) do
    if st and st.fields then for k, v in pairs(st.fields) do spec.fields[k] = v end end
    if st and hooks[i].ended then
      local prev = spec.on_end
      spec.on_end = function(r)
        if prev then prev(r) end
        hooks[i].ended(st, r)
      end
    end
  end
  local audited, id = audit.on(sb), nil
  if audited then
    local prev = spec.on_end -- last: after the parts (a port's TTL names itself the killer)
    spec.on_end = function(r)
      if prev then prev(r) end
      audit_end(sb, id, r)
    end
  end
  local h, msg, code = core.spawn(sb, spec)
  if not h then
    if audited then
      audit.emit(sb, { kind = "command_refused", argv = argv, cwd = opts.cwd or "/", code = code, message = msg })
    end
    return nil, msg, code
  end
  if audited then
    id = h.id
    audit.emit(sb, { kind = "command_start", id = id, argv = argv, cwd = opts.cwd or "/",
                     env_names = opts.env and audit.names(opts.env) or nil, background = opts.background == true })
  end
  async.stir(sb) -- a host loop turns now: the command's pipes join its loop
  for i, st in pairs(states) do
    if st and hooks[i].started then
      local ok, smsg, scode = hooks[i].started(st, h)
      if not ok then
        h:kill("KILL") -- no port, no command: it ends as killed
        return nil, smsg, scode
      end
    end
  end
  if opts.background or opts.wait == false then return h end
  local r, werr, wcode
  if opts.on_wait then r, werr, wcode = wait_with(h, opts) else r, werr, wcode = h:wait() end
  if not r then return nil, werr, wcode end
  return add_hint(sb, r)
end

local function argv_of(cmd, args)
  if type(cmd) ~= "string" then error("exec: cmd must be a string", 3) end
  if args ~= nil and type(args) ~= "table" then error("exec: args must be an array of strings", 3) end
  local list, why = options.string_list(args or {}, "args")
  if not list then error("exec: " .. why, 3) end
  for i, a in ipairs(list) do
    if a:find("\0", 1, true) then error(fmt("exec: args[%d] contains a NUL byte", i), 3) end
  end
  table.insert(list, 1, cmd)
  return list
end

--- sb:exec(cmd, args, opts): run cmd with args as is (no shell, no word
--- splitting). Foreground: the result table; background: a handle.
function M.exec(sb, cmd, args, opts)
  core.check_open(sb, "exec")
  local argv = argv_of(cmd, args)
  opts = options.check("exec", opts, CALL_OPTS)
  if not sb.has_exec then return unsupported() end
  if cmd == "" then return nil, "EINVAL: empty command", "EINVAL" end
  return run(sb, argv, opts)
end

--- sb:exec_shell(script, opts): /bin/sh -c script, only when the shell is
--- allowed (allow_shell in the sandbox options or in opts).
function M.exec_shell(sb, script, opts)
  core.check_open(sb, "exec_shell")
  if type(script) ~= "string" then error("exec_shell: script must be a string", 2) end
  opts = options.check("exec_shell", opts, SHELL_OPTS)
  if not sb.has_exec then return unsupported() end
  if not (M.shell_allowed(sb) or opts.allow_shell) then
    return nil, "EACCES: shell commands are not allowed in this sandbox (allow_shell is false); "
      .. "run the program directly with exec and an argument list", "EACCES"
  end
  opts.allow_shell = nil
  return run(sb, { "/bin/sh", "-c", script }, opts)
end

--- Is exec_shell allowed by the sandbox's options?
function M.shell_allowed(sb)
  local c = core.exec_config(sb)
  return c ~= nil and c.allow_shell
end

--- The default timeout of a foreground command, in seconds (nil: no commands).
function M.timeout(sb)
  local c = core.exec_config(sb)
  return c and c.timeout or nil
end

return M
