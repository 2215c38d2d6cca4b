-- What the built-in tools share: the stale-write guard's file versions, the
-- commands' parameters and results, background processes by id.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local core = require "sandbox.core"
local async = require "sandbox.async"
local forked = require "sandbox.forked"

local fmt, concat = string.format, table.concat

local PATHS = "Paths are relative to the sandbox root (absolute paths are accepted when they are inside it)."

-- The version of a file the stale-write guard compares: size and mtime
-- (of what a link leads to).
local function version(sb, path)
  local st = sb:stat(path, { follow = true })
  if not st or st.type ~= "file" then return nil end
  return st.size .. ":" .. string.format("%.9f", st.mtime)
end

-- Versions are kept under the real path: reading CLAUDE.md (a link to
-- AGENTS.md) counts as reading AGENTS.md.
local function key(sb, path) return sb:realpath(path) or core.normalize(forked.real(sb), path) or path end

local function remember(ctx, path)
  ctx.versions[key(ctx.sb, path)] = version(ctx.sb, path)
end

-- Refuse to overwrite a file the agent has not read in its current version.
local function stale(ctx, path, what)
  if not ctx.cfg.stale_guard then return nil end
  local now = version(ctx.sb, path)
  if not now then return nil end -- a new file
  local seen = ctx.versions[key(ctx.sb, path)]
  if seen == nil then
    return fmt("%s refused: %s already exists and you have not read it. Read it with read_file first, then retry.", what, path)
  end
  if seen ~= now then
    return fmt("%s refused: %s changed since you last read it. Read it again with read_file, then retry.", what, path)
  end
  return nil
end

local function fail(what, ...) return nil, T.error(what, ...) end

local function track(ctx, h)
  ctx.procs[h.id] = h
  return fmt("Started process %d (pid %d) in the background. Use process_output with id %d to read its " ..
    "output, and process_kill to stop it.", h.id, h.pid, h.id)
end

local function run_result(ctx, r, msg, code, timeout, what)
  if not r then return fail(what, msg, code) end
  if type(r) ~= "table" or r.exit_code == nil then return track(ctx, r) end
  return T.command(r, ctx.cfg.max_output, timeout)
end

local COMMAND_PARAMS = {
  cwd = S.string("Directory to run in, relative to the sandbox root (default: the root)."),
  timeout_seconds = S.number("Kill the command after this many seconds (default: the sandbox's).",
    { minimum = 0.1, maximum = 3600 }),
  background = S.boolean("Start it and return at once (for servers and long jobs); read its output " ..
    "with process_output."),
}

-- exec options for a tool's command: a foreground one lets the host's
-- on_wait in while it runs (progress, cancellation).
local function exec_opts(ctx, a, name)
  local o = { cwd = a.cwd, timeout = a.timeout_seconds, background = a.background }
  local hook = ctx.cfg.on_wait
  if hook and not a.background then
    o.on_wait = function(h, elapsed) return hook(h, { tool = name, elapsed = elapsed }) end
  end
  return o
end

-- A tool's command that finishes later (tool.start): a foreground one
-- runs with wait = false and its result reaches done from the pump; a
-- background one is started and tracked at once. spawn(opts) is the
-- tool's exec call.
local function start_command(ctx, a, what, spawn, done)
  local timeout = a.timeout_seconds or ctx.cfg.timeout
  local o = { cwd = a.cwd, timeout = a.timeout_seconds, background = a.background, wait = false }
  local answered = false
  local function answer(...)
    if answered then return end
    answered = true
    done(run_result(ctx, ...))
  end
  -- a foreground command's result; a background one's failed start
  o.on_exit = function(r, msg, code)
    if not a.background or not r then answer(r, msg, code, timeout, what) end
  end
  local h, msg, code = spawn(o)
  if not h then return answer(nil, msg, code, timeout, what) end
  if not a.background then return end
  -- a background one is answered with its pid: a RemoteSandbox's engine
  -- names it on a later turn (or its on_exit says it could not start)
  if h.pid ~= 0 then return answer(h, nil, nil, timeout, what) end
  async.watch(ctx.sb, nil, function()
    if not answered and h.pid ~= 0 then answer(h, nil, nil, timeout, what) end
    return answered
  end)
end

-- Work that finishes later (tool.start): begin() starts it in a forked copy
-- of the process (a job: sandbox.search's grep_start or glob_start,
-- sandbox.net's http_start; nil: do it in the turn) and a later pump turn
-- takes the answer; where no process can be started (EAGAIN), now() runs
-- in the turn. render(result, msg, code) makes the model's text.
local function later(ctx, begin, now, render, done)
  local sb = ctx.sb
  local job, msg, code = begin()
  if not job then
    if msg == nil or code == "EAGAIN" then return done(render(now())) end
    return done(render(nil, msg, code))
  end
  async.watch(sb, nil, function()
    if not pcall(core.check_open, sb, "later") then
      job:cancel() -- disposed meanwhile: nobody waits for it
      return true
    end
    local r, m, c = job:result()
    if r == false then return false end
    done(render(r, m, c))
    return true
  end, 0.01)
end

-- The common command parameters plus a tool's own.
local function with(props)
  local t = {}
  for k, v in pairs(COMMAND_PARAMS) do t[k] = v end
  for k, v in pairs(props) do t[k] = v end
  return t
end

local function proc(ctx, id)
  local h = ctx.procs[id]
  if h then return h end
  local ids = {}
  for k in pairs(ctx.procs) do ids[#ids + 1] = k end
  table.sort(ids)
  return nil, fmt("There is no process %d. %s", id,
    #ids > 0 and "Known processes: " .. concat(ids, ", ") .. "." or "No process was started with background=true.")
end

return {
  PATHS = PATHS, version = version, key = key, remember = remember, stale = stale, fail = fail, track = track, run_result = run_result, COMMAND_PARAMS = COMMAND_PARAMS, exec_opts = exec_opts, start_command = start_command, later = later, with = with, proc = proc,
}
