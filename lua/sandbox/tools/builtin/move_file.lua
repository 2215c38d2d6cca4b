-- The move_file tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local fmt = string.format

return {
  description = "Move or rename a file or directory. " .. C.PATHS .. " The destination's directory must " ..
    "exist; an existing destination is refused unless overwrite is true.",
  parameters = S.object({
    source = S.string("What to move."),
    destination = S.string("Where to put it (the new path, not a directory to move into)."),
    overwrite = S.boolean("Replace an existing destination (default false)."),
  }, { "source", "destination" }),
  destructive = true,
  run = function(ctx, a)
    local ok, msg, code = ctx.sb:rename(a.source, a.destination, { overwrite = a.overwrite or false })
    if not ok then
      if code == "EEXIST" then
        return nil, fmt("Moving %s failed: %s already exists; pass overwrite=true to replace it.", a.source, a.destination)
      end
      return C.fail("Moving " .. a.source, msg, code)
    end
    ctx.versions[C.key(ctx.sb, a.source)] = nil
    C.remember(ctx, a.destination)
    return fmt("Moved %s to %s.", a.source, a.destination)
  end,
}
