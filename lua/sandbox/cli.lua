-- agent-sandbox, the command line (SPEC §13): `mcp` serves a sandbox to any
-- agent over the Model Context Protocol, `run` runs one confined command
-- with the terminal passed through. Both take the sandbox options as flags
-- (sandbox.cli.flags). main(argv) returns the exit status.
local sandbox = require "sandbox"
local core = require "sandbox.core"
local flags = require "sandbox.cli.flags"
local server = require "sandbox.mcp.server"

local M = {}

local type, pairs, ipairs, next, tostring, tonumber, pcall, fmt =
  type, pairs, ipairs, next, tostring, tonumber, pcall, string.format

local function err(msg) io.stderr:write("agent-sandbox: ", msg, "\n") end

local MCP_FLAGS = {
  dir = { kind = "value", meta = "DIR", help = "serve this directory (a ContainerSandbox; default: the client's first MCP root if it offers roots, else the current directory)" },
  ["allow-broad-dir"] = { kind = "bool", help = "serve the directory even when it is /, your home directory or a directory above it (refused otherwise: an agent would see your keys and every project)" },
  virtual = { kind = "bool", help = "serve an empty in-memory VirtualSandbox instead (files from --config's files)" },
  overlay = { kind = "value", meta = "DIR", help = "copy-on-write over DIR: DIR is not written; review and commit with agent-sandbox review (keep the layers with --state-dir)" },
  remote = { kind = "bool", help = "serve a sandbox on an engine that speaks E2B's API (E2B cloud, CubeSandbox): the key from E2B_API_KEY or --config, never a flag; killed on exit unless --keep" },
  config = { kind = "value", meta = "FILE", help = "options from a Lua table or a JSON object (flags override it)" },
  approve = { kind = "value", meta = "ask|never|always", choices = { ask = true, never = true, always = true },
              help = "destructive tools: ask the user (MCP elicitation), refuse, or run (default: always)" },
  only = { kind = "list", meta = "TOOL", help = "offer only this tool (repeatable)" },
  exclude = { kind = "list", meta = "TOOL", help = "do not offer this tool (repeatable)" },
  help = { kind = "bool", help = "this text" },
}

local RUN_FLAGS = {
  dir = { kind = "value", meta = "DIR", help = "the sandbox's directory, where the command starts (default: the current directory)" },
  config = MCP_FLAGS.config,
  timeout = { kind = "value", meta = "SECONDS", help = "kill the command's tree after this long (default: no limit)" },
  help = { kind = "bool", help = "this text" },
}

local own_help = flags.help -- a subcommand's own flags, as a table

local REVIEW_FLAGS = {
  overlay = { kind = "value", meta = "DIR", help = "the overlay's base directory (required)" },
  ["state-dir"] = { kind = "value", meta = "DIR", help = "its state directory, as given to mcp --state-dir (required)" },
  commit = { kind = "bool", help = "commit the changes (or the PATHS) into DIR" },
  discard = { kind = "bool", help = "discard the changes (or the PATHS)" },
  help = { kind = "bool", help = "this text" },
}

local USAGE = [[
usage: agent-sandbox mcp [--dir DIR | --virtual | --overlay DIR] [flags]
       agent-sandbox run [--dir DIR] [flags] -- CMD ARGS...
       agent-sandbox review --overlay DIR --state-dir S [--commit | --discard] [PATHS...]
       agent-sandbox audit verify|show FILE
       agent-sandbox help [mcp | run | review | audit]

  mcp   a Model Context Protocol server over stdio: the sandbox's file, search
        and command tools, its files as resources
  run   one command confined as a sandbox's commands are (own namespaces, no
        capabilities, seccomp, Landlock, limits); its exit status is passed
        through (128+N when killed by signal N)
  review  what an overlay's agent changed (a git diff), and commit or discard it
  audit   check an audit log's hash chain (--audit-log FILE on mcp and run), or
          print it as a timeline
]]

local function help(sub)
  if sub == "mcp" then
    return "usage: agent-sandbox mcp [--dir DIR | --virtual | --overlay DIR | --remote] [flags]\n\n"
      .. own_help(MCP_FLAGS) .. "\n\nsandbox options (--state-dir only with --overlay; --virtual takes the file options):\n"
      .. flags.help("overlay") .. "\n\nwith --remote:\n" .. flags.help("remote") .. "\n"
  elseif sub == "review" then
    return "usage: agent-sandbox review --overlay DIR --state-dir S [--commit | --discard] [PATHS...]\n\n"
      .. own_help(REVIEW_FLAGS) .. "\n"
  elseif sub == "audit" then
    return "usage: agent-sandbox audit verify FILE   check the hash chain (exit 0: intact, 1: not, with the reason)\n"
      .. "       agent-sandbox audit show FILE     the events, one line each\n"
  elseif sub == "run" then
    return "usage: agent-sandbox run [--dir DIR] [flags] -- CMD ARGS...\n\n" .. own_help(RUN_FLAGS)
      .. "\n\nsandbox options:\n" .. flags.help("container") .. "\n"
  end
  return USAGE
end
M.help = help

-- Make the sandbox; a strict option error is a usage error.
local function make(kind, opts)
  local ok, sb, msg = pcall(sandbox[kind], opts)
  if not ok then flags.fail(tostring(sb):gsub("^sandbox%.(%a+): ", "")) end
  if not sb then return nil, msg end
  return sb
end

-- Take the keys a config file may add beside the options.
local function extract(opts, key)
  local v = opts[key]
  opts[key] = nil
  return v
end

local function instructions(kind, where)
  local what = kind == "virtual" and "an in-memory file tree (nothing on the host is touched)"
    or kind == "overlay" and fmt("a copy-on-write view of %s: changes stay in the sandbox until the user "
      .. "reviews and commits them; commands cannot reach outside it", where)
    or kind == "remote" and fmt("%s in a remote sandbox on its own machine (a microVM): nothing runs on the "
      .. "user's computer", where)
    or fmt("the directory %s (a confined container: commands cannot reach outside it)", where)
  return "The tools of this server work in a sandbox: " .. what .. ". Paths are relative to the sandbox root; "
    .. "'..' above it and absolute host paths are refused. The sandbox's files are also listed as resources "
    .. "(sandbox:///path)."
end

-- Why a directory is too broad to serve without --allow-broad-dir (/, the
-- home directory or one above it), or nil.
local function too_broad(dir)
  local function clean(p) return (p:gsub("/+$", "")) end
  local d = clean(dir)
  if d == "" then return "the whole file system" end
  for _, home in ipairs { os.getenv("HOME") or "", "/root" } do
    local h = clean(home)
    if h ~= "" and (h == d or h:sub(1, #d + 1) == d .. "/") then
      return h == d and "your home directory" or "a directory above your home directory"
    end
  end
  return nil
end
M.too_broad = too_broad

--- agent-sandbox mcp ...
function M.mcp(argv)
  local cli, opts, rest, kind = flags.parse(argv, MCP_FLAGS, function(c)
    local n = (c.dir and 1 or 0) + (c.virtual and 1 or 0) + (c.overlay and 1 or 0) + (c.remote and 1 or 0)
    if n > 1 then flags.fail("choose one of --dir, --virtual, --overlay and --remote") end
    return c.virtual and "virtual" or c.overlay and "overlay" or c.remote and "remote" or "container"
  end)
  if cli.help then io.stdout:write(help("mcp")) return 0 end
  if #rest > 0 then flags.fail(fmt("mcp takes no command ('%s')", rest[1])) end
  local approve = extract(opts, "approve")
  if approve ~= nil and not MCP_FLAGS.approve.choices[approve] then
    flags.fail("--config: approve must be one of always, ask, never, got " .. tostring(approve))
  end
  approve = cli.approve or approve or "always"
  local topts = extract(opts, "tools") or {}
  if type(topts) ~= "table" then flags.fail("--config: tools must be a table of sb:tools options") end
  if cli.only then topts.only = cli.only end
  if cli.exclude then topts.exclude = cli.exclude end
  -- without --dir the directory comes from the client's roots when it
  -- offers them: the sandbox is made once the client has said
  local lazy = kind == "container" and not cli.dir and not opts.base_dir
  if kind == "container" then opts.base_dir = cli.dir or opts.base_dir or "." end
  if kind == "overlay" then opts.base_dir = cli.overlay end
  -- a sandbox of /, the home directory or above it only when asked for by name
  local function open(root)
    local o = {}
    for k, v in pairs(opts) do o[k] = v end
    if root then o.base_dir = root end
    local sb, msg = make(kind, o)
    if not sb then return nil, msg end
    local broad = (kind == "container" or kind == "overlay") and too_broad(sb.cwd)
    if broad and not cli["allow-broad-dir"] then
      sb:close()
      return nil, fmt("refusing to serve %s (%s): an agent would see every project and key in it; serve a "
        .. "project directory (--dir DIR%s), or add --allow-broad-dir to serve it anyway", sb.cwd, broad,
        root and ", or a narrower root in the client" or "")
    end
    return sb
  end
  -- the transport first: from here on stdout carries protocol messages only
  local ch = core.channel { stdio = true, signals = { "TERM", "INT", "HUP" } }
  local sb, msg
  if not lazy then
    sb, msg = open(nil)
    if not sb then
      ch:close()
      err(msg)
      return 1
    end
  end
  local ok, s = pcall(server.new, {
    channel = ch, sb = sb, open = lazy and open or nil, approve = approve, tools_opts = topts,
    name = "agent-sandbox", version = sandbox.version,
    instructions = lazy and instructions(kind, "the client's first root (or the server's directory)")
      or instructions(kind, sb.cwd),
  })
  if not ok then
    if sb then sb:close() end
    ch:close()
    flags.fail(tostring(s):gsub("^[^:]*:%d+: ", ""))
  end
  local run_ok, why = pcall(s.run)
  if s.sb then s.sb:close() end -- kills and reaps every command
  if lazy and s.open_failed then err(s.open_failed) end
  ch:close()
  if not run_ok then
    err("internal error: " .. tostring(why))
    return 1
  end
  return 0
end

--- agent-sandbox run ... -- CMD ARGS...
function M.run(argv)
  local cli, opts, rest = flags.parse(argv, RUN_FLAGS, function() return "container" end)
  if cli.help then io.stdout:write(help("run")) return 0 end
  if #rest == 0 then flags.fail("run needs a command: agent-sandbox run [flags] -- CMD ARGS...") end
  opts.base_dir = cli.dir or opts.base_dir or "."
  if opts.approve ~= nil or opts.tools ~= nil then flags.fail("--config: approve and tools are options of mcp, not run") end
  local timeout = 86400 * 365
  if cli.timeout then
    timeout = tonumber(cli.timeout)
    if not timeout or timeout <= 0 or timeout > 86400 * 365 then
      flags.fail("--timeout must be a positive number of seconds (at most a year)")
    end
  end
  -- signals to agent-sandbox go to the command's whole tree
  local ch = core.channel { signals = { "TERM", "INT", "HUP", "QUIT" } }
  local sb, msg = make("container", opts)
  if not sb then
    ch:close()
    err(msg)
    return 125
  end
  local args = {}
  for i = 2, #rest do args[#args + 1] = rest[i] end
  local r, emsg, code = sb:exec(rest[1], args, {
    stdio = "inherit", timeout = timeout,
    on_wait = function(h)
      local sig = ch:signal()
      if sig then h:kill(sig) end
    end,
  })
  sb:close()
  ch:close()
  if not r then
    err(emsg)
    return code == "ENOENT" and 127 or code == "EACCES" and 126 or 125
  end
  if r.timed_out then err(fmt("the command ran past --timeout %s and was killed", cli.timeout)) end
  return r.exit_code
end

--- agent-sandbox review ...: print the changes and their diff; commit or
--- discard them. Exit 0, 1 when the commit was refused (EAGAIN: the base
--- changed), 2 for usage errors.
function M.review(argv)
  local cli, opts, rest = flags.parse(argv, REVIEW_FLAGS, function() return "overlay" end)
  if cli.help then io.stdout:write(help("review")) return 0 end
  if not cli.overlay or not cli["state-dir"] then flags.fail("review needs --overlay DIR and --state-dir S") end
  if cli.commit and cli.discard then flags.fail("choose one of --commit and --discard") end
  if next(opts) ~= nil then flags.fail("review takes no sandbox options") end
  local sb, msg = make("overlay", { base_dir = cli.overlay, state_dir = cli["state-dir"], exec = false })
  if not sb then
    err(msg)
    return 1
  end
  local paths = #rest > 0 and rest or nil
  local status = 0
  local d, dmsg = sb:diff(paths)
  if not d then
    err(dmsg)
    status = 1
  elseif cli.commit then
    local ok, cmsg, _, conflicts = sb:commit(paths)
    if ok then
      io.stdout:write(("committed %d change(s) into %s\n"):format(#cmsg, cli.overlay))
    else
      err(cmsg)
      for _, p in ipairs(conflicts or {}) do io.stderr:write("  ", p, "\n") end
      status = 1
    end
  elseif cli.discard then
    assert(sb:discard(paths))
    io.stdout:write("discarded\n")
  else
    for _, c in ipairs(sb:changes()) do
      io.stdout:write(("%-8s %s%s\n"):format(c.kind, c.path, c.from and (" (from " .. c.from .. ")") or ""))
    end
    io.stdout:write(d)
  end
  sb:dispose()
  return status
end

--- agent-sandbox audit verify|show FILE: 0, or 1 when the log does not
--- verify (or cannot be read), 2 for usage errors.
function M.audit(argv)
  local audit = require "sandbox.audit"
  local what, file = argv[1], argv[2]
  if what == "--help" or what == "-h" then io.stdout:write(help("audit")) return 0 end
  if (what ~= "verify" and what ~= "show") or not file or argv[3] then
    flags.fail("audit needs verify or show and one FILE: agent-sandbox audit verify FILE")
  end
  if what == "verify" then
    local ok, n = audit.verify(file)
    if not ok then
      err(file .. ": " .. n)
      return 1
    end
    io.stdout:write(fmt("%s: intact, %d line(s) after the chain's start\n", file, n))
    return 0
  end
  local lines, msg = audit.timeline(file)
  if not lines then
    err(file .. ": " .. msg)
    return 1
  end
  for _, l in ipairs(lines) do io.stdout:write(l, "\n") end
  return 0
end

--- The whole command line: the exit status.
function M.main(argv)
  local sub = argv[1]
  local rest = {}
  for i = 2, #argv do rest[#rest + 1] = argv[i] end
  local ok, status = pcall(function()
    if sub == "mcp" then return M.mcp(rest) end
    if sub == "run" then return M.run(rest) end
    if sub == "review" then return M.review(rest) end
    if sub == "audit" then return M.audit(rest) end
    if sub == "help" or sub == "--help" or sub == "-h" then
      io.stdout:write(help(rest[1]))
      return 0
    end
    if sub == "--version" then
      io.stdout:write("agent-sandbox ", sandbox.version, "\n")
      return 0
    end
    flags.fail(sub and fmt("unknown command '%s' (mcp, run, review, audit, help)", sub) or "a command is needed")
  end)
  if ok then return status end
  if type(status) == "table" and status.usage then
    err(status.usage)
    if sub == "run" then return 125 end
    io.stderr:write("run 'agent-sandbox help", (sub == "mcp" and " mcp" or ""), "' for the flags\n")
    return 2
  end
  err("internal error: " .. tostring(status))
  return sub == "run" and 125 or 1
end

return M
