-- The file_exists tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local fmt = string.format

return {
  description = "Tell whether a file or directory exists, and what it is. " .. C.PATHS,
  parameters = S.object({ path = S.string("Path to check.") }, { "path" }),
  read_only = true,
  run = function(ctx, a)
    local st, msg, code = ctx.sb:stat(a.path)
    if st then
      return st.type == "file" and fmt("%s exists: a file of %d bytes.", a.path, st.size)
          or fmt("%s exists: a %s.", a.path, st.type)
    end
    if code == "ENOENT" or code == "ENOTDIR" or code == "EACCES" then return fmt("%s does not exist.", a.path) end
    return C.fail("Checking " .. a.path, msg, code)
  end,
}
