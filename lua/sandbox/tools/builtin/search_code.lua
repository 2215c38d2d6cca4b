-- The search_code tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local C = require "sandbox.tools.common"
local search = require "sandbox.search"
local fmt = string.format
local concat = table.concat

local function hit_line(h)
  if h.context then return fmt("%s-%d- %s", h.path, h.line, T.cap(h.text, 500)) end
  return fmt("%s:%d: %s", h.path, h.line, T.cap(h.text, 500))
end

-- grep's options for the tool's arguments.
local function query(a)
  return { path = a.path, glob = a.include, type = a.type, literal = a.literal, ignore_case = a.ignore_case,
    multiline = a.multiline, mode = a.output_mode or "content", context = a.context, ignored = a.include_ignored,
    max_results = a.max_results or 100 }
end

-- The model's text for grep's answer.
local function render(a, hits, msg, code)
  local mode = a.output_mode or "content"
  if not hits then return C.fail("Searching for " .. a.pattern, msg, code) end
  if #hits == 0 then return fmt("No matches for %s.", a.pattern) end
  local out = {}
  for i, h in ipairs(hits) do
    out[i] = mode == "files" and h or mode == "count" and fmt("%s: %d", h.path, h.count) or hit_line(h)
  end
  if hits.truncated then
    out[#out + 1] = fmt("[only the first %d results are shown; narrow the search with path, include or type]",
      mode == "content" and (a.max_results or 100) or #hits)
  end
  return concat(out, "\n")
end

return {
  description = "Search file contents with a regular expression (PCRE2 syntax as in ripgrep: \\d, \\w, \\b, " ..
    "(?i), lazy repeats, lookaround) or literal text. output_mode \"content\" (default) returns matching " ..
    "lines as `path:line: text` (context lines as `path-line- text`), \"files\" the paths with a match, " ..
    "\"count\" matches per file. Narrow it with path (a directory or file), include (a glob on file names, " ..
    "e.g. *.lua or src/**/*.{c,h}) or type (e.g. lua, py, js). Like ripgrep, files excluded by " ..
    ".gitignore/.ignore, hidden files and binary files are skipped unless include_ignored is true.",
  parameters = S.object({
    pattern = S.string("Regular expression (PCRE2), or literal text with literal=true."),
    path = S.string("Directory or file to search (default: the sandbox root)."),
    include = S.string("Only files whose name matches this glob, e.g. *.py or src/**/*.c."),
    type = S.string("Only files of this type: c, cpp, css, go, html, java, js, json, lua, md, py, rb, rust, sh, sql, toml, ts, txt, yaml, zig."),
    output_mode = S.string("What to return (default content).", { enum = { "content", "files", "count" } }),
    context = S.integer("Lines of context before and after each match (content mode).", { minimum = 0, maximum = 20 }),
    literal = S.boolean("Treat pattern as plain text (default false)."),
    ignore_case = S.boolean("Match case-insensitively (default false)."),
    multiline = S.boolean("Let a match span lines, e.g. struct \\w+ \\{[^}]*\\} (default false)."),
    include_ignored = S.boolean("Also search ignored and hidden files (default false)."),
    max_results = S.integer("Most matching lines or files (default 100).", { minimum = 1, maximum = 10000 }),
  }, { "pattern" }),
  read_only = true,
  run = function(ctx, a)
    return render(a, ctx.sb:grep(a.pattern, query(a)))
  end,
  -- the search in its own process, its answer taken on a later turn
  start = function(ctx, a, done)
    -- in a forked copy (a RemoteSandbox's opens its own connections)
    C.later(ctx, function()
      return search.grep_start(ctx.sb, a.pattern, query(a))
    end,
      function() return ctx.sb:grep(a.pattern, query(a)) end,
      function(...) return render(a, ...) end, done)
  end,
}

