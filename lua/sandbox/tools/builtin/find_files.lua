-- The find_files tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local search = require "sandbox.search"
local fmt = string.format
local concat = table.concat

local function query(a) return { max_results = a.max_results or 200, sort = a.sort, ignored = a.include_ignored } end

-- The model's text for glob's answer.
local function render(a, list, msg, code)
  if not list then return C.fail("Finding " .. a.pattern, msg, code) end
  if #list == 0 then return fmt("No files match %s.", a.pattern) end
  local text = concat(list, "\n")
  if list.truncated then text = text .. fmt("\n[only the first %d matches are shown; use a narrower pattern]", #list) end
  return text
end

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
    return render(a, ctx.sb:glob(a.pattern, query(a)))
  end,
  -- the walk in its own process, its answer taken on a later turn
  start = function(ctx, a, done)
    -- in a forked copy (a RemoteSandbox's opens its own connections)
    C.later(ctx, function()
      return search.glob_start(ctx.sb, a.pattern, query(a))
    end,
      function() return ctx.sb:glob(a.pattern, query(a)) end,
      function(...) return render(a, ...) end, done)
  end,
}
