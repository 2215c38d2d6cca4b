-- The process_kill tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local fmt = string.format

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
    local r = h:wait(10)
    return r and fmt("Stopped process %d (%s).", a.id, r.signal or ("exit code " .. r.exit_code))
      or fmt("Asked process %d to stop.", a.id)
  end,
}
