-- The find_files tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local fmt = string.format
local concat = table.concat

return {
  description = "Find files and directories whose root-relative path matches a glob pattern: `*` " ..
    "matches within one directory level, `**` any number of levels, `?` one character, `[abc]` a class, " ..
    "`{a,b}` either alternative. Example: `**/*.lua`, `src/**/*.{c,h}`. Like ripgrep, files that " ..
    ".gitignore/.ignore exclude and hidden files are left out unless include_ignored is true. Results are " ..
    "sorted by path, or newest first with sort = \"mtime\"; at most max_results are returned.",
  parameters = S.object({
    pattern = S.string("Glob pattern, e.g. **/*.py"),
    sort = S.string("Order: by path (default) or most recently modified first.", { enum = { "path", "mtime" } }),
    include_ignored = S.boolean("Also list ignored and hidden files (default false)."),
    max_results = S.integer("Most paths to return (default 200).", { minimum = 1, maximum = 10000 }),
  }, { "pattern" }),
  read_only = true,
  run = function(ctx, a)
    local list, msg, code = ctx.sb:glob(a.pattern, { max_results = a.max_results or 200, sort = a.sort,
      ignored = a.include_ignored })
    if not list then return C.fail("Finding " .. a.pattern, msg, code) end
    if #list == 0 then return fmt("No files match %s.", a.pattern) end
    local text = concat(list, "\n")
    if list.truncated then text = text .. fmt("\n[only the first %d matches are shown; use a narrower pattern]", #list) end
    return text
  end,
}
