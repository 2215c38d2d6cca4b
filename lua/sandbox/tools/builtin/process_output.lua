-- The process_output tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local C = require "sandbox.tools.common"
local fmt = string.format
local concat = table.concat

return {
  description = "Read what a background process printed since the last read, and whether it is still " ..
    "running (with its exit code once it ended). wait_seconds waits that long for new output.",
  parameters = S.object({
    id = S.integer("The process id that run_command or run_shell returned."),
    wait_seconds = S.number("Wait up to this long for output (default 0, at most 30).", { minimum = 0, maximum = 30 }),
  }, { "id" }),
  read_only = true,
  needs_exec = true,
  run = function(ctx, a)
    local h, err = C.proc(ctx, a.id)
    if not h then return nil, err end
    local wait = a.wait_seconds or 0
    local out = h:read("stdout", wait)
    -- stdout ended: stderr's end is a moment away (one event later), and then the exit
    local errs = h:read("stderr", out == nil and math.max(wait, 0.2) or 0)
    if out == nil and errs == nil and h:running() then h:wait(math.max(wait, 1)) end
    out, errs = out or "", errs or ""
    local parts = {}
    if h:running() then
      parts[1] = fmt("Process %d is running.", a.id)
    else
      local r = h:wait()
      parts[1] = r.signal and fmt("Process %d was killed by %s.", a.id, r.signal)
          or fmt("Process %d exited with code %d.", a.id, r.exit_code)
    end
    if out ~= "" then parts[#parts + 1] = "stdout:\n" .. T.cap(out, ctx.cfg.max_output) end
    if errs ~= "" then parts[#parts + 1] = "stderr:\n" .. T.cap(errs, ctx.cfg.max_output) end
    if out == "" and errs == "" then parts[#parts + 1] = "(no new output)" end
    return concat(parts, "\n")
  end,
}
