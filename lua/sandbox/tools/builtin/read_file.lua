-- The read_file tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local C = require "sandbox.tools.common"
local fmt = string.format

return {
  description = "Read a text file and return it with line numbers (like `cat -n`). " .. C.PATHS ..
    " For long files use offset (first line, 1-based) and limit (number of lines); at most 2000 lines are " ..
    "shown at once and the output says how many lines the file has. Binary files are refused.",
  parameters = S.object({
    path = S.string("File to read."),
    offset = S.integer("Line to start at, 1-based (default 1).", { minimum = 1 }),
    limit = S.integer("Number of lines to show (default 2000).", { minimum = 1, maximum = 10000 }),
  }, { "path" }),
  read_only = true,
  run = function(ctx, a)
    local data, msg, code = ctx.sb:read_file(a.path)
    if not data then return C.fail("Reading " .. a.path, msg, code) end
    if T.is_binary(data) then
      return nil, fmt("%s is a binary file (%d bytes); read_file shows text files only.", a.path, #data)
    end
    C.remember(ctx, a.path)
    return (T.numbered(data, a.offset or 1, a.limit or T.DEFAULT_LIMIT))
  end,
}
