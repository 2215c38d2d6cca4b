-- The process_list tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local fmt = string.format
local concat = table.concat

return {
  description = "List the background processes started in this session, with their status.",
  parameters = S.object({}),
  read_only = true,
  needs_exec = true,
  run = function(ctx)
    local ids = {}
    for id in pairs(ctx.procs) do ids[#ids + 1] = id end
    table.sort(ids)
    if #ids == 0 then return "No background processes were started." end
    local out = {}
    for _, id in ipairs(ids) do
      local h = ctx.procs[id]
      local status
      if h:running() then
        status = "running"
      else
        local r = h:wait()
        status = r.signal and ("killed by " .. r.signal) or ("exited with code " .. r.exit_code)
      end
      out[#out + 1] = fmt("%d\tpid %d\t%s", id, h.pid, status)
    end
    return concat(out, "\n")
  end,
}
