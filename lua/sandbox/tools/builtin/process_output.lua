-- The process_output tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local C = require "sandbox.tools.common"
local async = require "sandbox.async"
local core = require "sandbox.core"
local fmt = string.format
local concat = table.concat

-- The model's text: the process's state and the output read this time.
local function report(ctx, id, h, out, errs)
  local parts = {}
  if h:running() then
    parts[1] = fmt("Process %d is running.", id)
  else
    local r = h:wait()
    parts[1] = r.signal and fmt("Process %d was killed by %s.", id, r.signal)
        or fmt("Process %d exited with code %d.", id, r.exit_code)
  end
  if out ~= "" then parts[#parts + 1] = "stdout:\n" .. T.cap(out, ctx.cfg.max_output) end
  if errs ~= "" then parts[#parts + 1] = "stderr:\n" .. T.cap(errs, ctx.cfg.max_output) end
  if out == "" and errs == "" then parts[#parts + 1] = "(no new output)" end
  return concat(parts, "\n")
end

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
    return report(ctx, a.id, h, out or "", errs or "")
  end,
  -- the same, waiting for output on the pump's turns instead of here
  start = function(ctx, a, done)
    local h, err = C.proc(ctx, a.id)
    if not h then return done(nil, err) end
    local out, errs = {}, {}
    async.watch(ctx.sb, core.clock() + (a.wait_seconds or 0), function(expired)
      local o, e = h:read("stdout", 0), h:read("stderr", 0)
      if o then out[#out + 1] = o end
      if e then errs[#errs + 1] = e end
      local got = (o and o ~= "") or (e and e ~= "")
      if not (expired or got or not h:running()) then return false end
      done(report(ctx, a.id, h, concat(out), concat(errs)))
      return true
    end)
  end,
}
