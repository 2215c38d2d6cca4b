-- The delete_file tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local fmt = string.format

return {
  description = "Delete a file, or a directory (with recursive=true when it is not empty). " .. C.PATHS ..
    " The sandbox root itself cannot be deleted.",
  parameters = S.object({
    path = S.string("File or directory to delete."),
    recursive = S.boolean("Delete a directory with everything in it (default false)."),
  }, { "path" }),
  destructive = true,
  run = function(ctx, a)
    local ok, msg, code = ctx.sb:remove(a.path, { recursive = a.recursive or false })
    if not ok then return C.fail("Deleting " .. a.path, msg, code) end
    ctx.versions[C.key(ctx.sb, a.path)] = nil
    return fmt("Deleted %s.", a.path)
  end,
}
