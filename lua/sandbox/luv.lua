-- Drive a sandbox from a libuv loop (luv; Neovim's vim.loop): a turn of the
-- sandbox's pump (sb:poll) runs when its backend fd turns readable (a
-- command printed or ended), when its next deadline comes (a command's
-- timeout, a tool's wait) and when a result is due without either (a
-- file tool's answer, an approval). Nothing here blocks the loop.
--
--   local detach = require("sandbox.luv").attach(sb)              -- luv's default loop
--   local detach = require("sandbox.luv").attach(sb, { uv = vim.loop, schedule = vim.schedule })
local async = require "sandbox.async"
local core = require "sandbox.core"

local M = { HEARTBEAT = 200 }

local function open(sb) return (pcall(core.check_open, sb, "poll")) end

--- attach(sb [, {uv =, schedule =}]): uv is the luv module (default
--- require "luv"); schedule(fn) runs fn where the host allows callbacks
--- (default: at once, in the loop's callback; Neovim: vim.schedule, so
--- callbacks may use the editor's API). Returns detach(): stops the
--- watchers; the sandbox stays open. A sandbox disposed meanwhile detaches
--- itself at the next turn.
function M.attach(sb, o)
  core.check_open(sb, "attach")
  o = o or {}
  local uv = o.uv or require "luv"
  local schedule = o.schedule or function(fn) fn() end
  local fd = sb.has_exec and sb:backend_fd() or nil
  local watcher = fd and uv.new_poll(fd) or nil
  local timer = uv.new_timer()
  local kick = uv.new_timer() -- a turn on the loop's next iteration, never inside the caller
  local requested, detached, unwake = false, false, nil
  local turn

  local function detach()
    if detached then return end
    detached = true
    if unwake then unwake() end
    if watcher then watcher:stop() watcher:close() end
    timer:stop()
    timer:close()
    kick:stop()
    kick:close()
  end

  -- The next deadline: a command's timer or a tool's wait; while commands
  -- run, at least every HEARTBEAT ms, so a call made between turns (a
  -- handle's kill starting its grace timer) is seen even without output.
  local function rearm()
    local a = open(sb) and sb.has_exec and sb:backend_timeout() or -1 -- -1: no command runs
    local b = async.timeout(sb)
    local t = (a < 0 or (b >= 0 and b < a)) and b or a
    if a >= 0 and t > M.HEARTBEAT then t = M.HEARTBEAT end
    timer:stop()
    if t >= 0 then timer:start(t, 0, function() turn() end) end
  end

  -- A turn is asked for once until it runs (the fd stays readable until
  -- the pump reads it: its watcher rests meanwhile).
  local function request()
    if requested or detached then return end
    requested = true
    if watcher then watcher:stop() end
    kick:start(0, 0, function() schedule(function()
      requested = false
      if detached then return end
      if not open(sb) then return detach() end
      local ok, err = pcall(sb.poll, sb)
      if detached then return end
      if watcher then watcher:start("r", turn) end
      rearm()
      if not ok then error(err, 0) end
    end) end)
  end
  turn = request

  if watcher then watcher:start("r", turn) end
  unwake = async.on_wake(sb, request)
  rearm()
  return detach
end

return M
