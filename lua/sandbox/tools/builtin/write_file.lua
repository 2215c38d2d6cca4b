-- The write_file tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local fmt = string.format

return {
  description = "Create a file, or replace an existing file's whole content. " .. C.PATHS ..
    " Parent directories are created. To change part of a file prefer edit_file. Replacing a file you " ..
    "have not read (or that changed since you read it) is refused: read it first.",
  parameters = S.object({
    path = S.string("File to write."),
    content = S.string("The complete new content."),
  }, { "path", "content" }),
  destructive = true,
  run = function(ctx, a)
    local refused = C.stale(ctx, a.path, "Writing")
    if refused then return nil, refused end
    local existed = ctx.sb:exists(a.path)
    local ok, msg, code = ctx.sb:write_file(a.path, a.content)
    if not ok then return C.fail("Writing " .. a.path, msg, code) end
    C.remember(ctx, a.path)
    return fmt("%s %s (%d bytes).", existed and "Replaced" or "Created", a.path, #a.content)
  end,
}
