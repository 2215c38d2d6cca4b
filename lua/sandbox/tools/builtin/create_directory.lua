-- The create_directory tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local fmt = string.format

return {
  description = "Create a directory, and its missing parents. " .. C.PATHS ..
    " An existing directory is fine.",
  parameters = S.object({ path = S.string("Directory to create.") }, { "path" }),
  run = function(ctx, a)
    local ok, msg, code = ctx.sb:mkdir(a.path)
    if not ok then return C.fail("Creating " .. a.path, msg, code) end
    return fmt("Directory %s is there.", a.path)
  end,
}
