-- The process_kill tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local async = require "sandbox.async"
local core = require "sandbox.core"
local fmt = string.format

local WAIT = 10 -- seconds the tool waits for the end (SIGKILL follows SIGTERM after the grace period)

local function stopped(id, r)
  return r and fmt("Stopped process %d (%s).", id, r.signal or ("exit code " .. r.exit_code))
    or fmt("Asked process %d to stop.", id)
end

return {
  description = "Stop a background process and everything it started (SIGTERM, then SIGKILL).",
  parameters = S.object({ id = S.integer("The process id.") }, { "id" }),
  destructive = true,
  needs_exec = true,
  run = function(ctx, a)
    local h, err = C.proc(ctx, a.id)
    if not h then return nil, err end
    if not h:running() then return fmt("Process %d had already ended.", a.id) end
    h:kill()
    return stopped(a.id, h:wait(WAIT))
  end,
  -- the same, waiting for the end on the pump's turns instead of here
  start = function(ctx, a, done)
    local h, err = C.proc(ctx, a.id)
    if not h then return done(nil, err) end
    if not h:running() then return done(fmt("Process %d had already ended.", a.id)) end
    h:kill()
    async.watch(ctx.sb, core.clock() + WAIT, function(expired)
      if h:running() and not expired then return false end
      done(stopped(a.id, not h:running() and h:wait(0) or nil))
      return true
    end)
  end,
}
