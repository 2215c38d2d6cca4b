-- The edit_file tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local fmt = string.format
local concat = table.concat

local function occurrences(s, needle)
  local n, at, lines = 0, 1, {}
  while true do
    local i = s:find(needle, at, true)
    if not i then break end
    n = n + 1
    local _, nl = s:sub(1, i):gsub("\n", "")
    lines[#lines + 1] = nl + 1
    at = i + math.max(#needle, 1)
  end
  return n, lines
end

return {
  description = "Replace text in a file: old_string must appear exactly once (include enough surrounding " ..
    "lines to make it unique), unless replace_all is true. Whitespace and indentation must match exactly. " ..
    C.PATHS .. " Read the file first: editing a file you have not read, or that changed since, is refused.",
  parameters = S.object({
    path = S.string("File to edit."),
    old_string = S.string("Exact text to replace."),
    new_string = S.string("Text to put in its place."),
    replace_all = S.boolean("Replace every occurrence (default false)."),
  }, { "path", "old_string", "new_string" }),
  destructive = true,
  run = function(ctx, a)
    if a.old_string == "" then return nil, "old_string must not be empty; to create or overwrite a file use write_file." end
    if a.old_string == a.new_string then return nil, "old_string and new_string are the same; nothing to change." end
    -- writes never follow a link; an edit of one edits what it leads to
    -- (inside the sandbox), and says so
    local path, via = a.path, nil
    local st = ctx.sb:stat(a.path)
    if st and st.type == "symlink" then
      local real, rmsg, rcode = ctx.sb:realpath(a.path)
      if not real then return C.fail("Editing " .. a.path .. " (a symbolic link)", rmsg, rcode) end
      path, via = real, a.path
    end
    local refused = C.stale(ctx, path, "Editing")
    if refused then return nil, refused end
    local data, msg, code = ctx.sb:read_file(path)
    if not data then return C.fail("Reading " .. path, msg, code) end
    local n, lines = occurrences(data, a.old_string)
    if n == 0 then
      return nil, fmt("old_string was not found in %s. Check it matches the file exactly (whitespace, " ..
        "indentation, line endings); read_file shows the current content.", a.path)
    end
    if n > 1 and not a.replace_all then
      return nil, fmt("old_string appears %d times in %s (lines %s). Add surrounding lines to make it " ..
        "unique, or pass replace_all=true to replace all of them.", n, a.path, concat(lines, ", "))
    end
    local out, pos, parts = {}, 1, 0
    while true do
      local i, j = data:find(a.old_string, pos, true)
      if not i or (parts == 1 and not a.replace_all) then break end
      out[#out + 1] = data:sub(pos, i - 1)
      out[#out + 1] = a.new_string
      pos = j + 1
      parts = parts + 1
    end
    out[#out + 1] = data:sub(pos)
    local ok, wmsg, wcode = ctx.sb:write_file(path, concat(out))
    if not ok then return C.fail("Writing " .. path, wmsg, wcode) end
    C.remember(ctx, path)
    return fmt("Edited %s%s: replaced %d occurrence%s.", path,
      via and fmt(" (%s is a symbolic link to it)", via) or "", parts, parts == 1 and "" or "s")
  end,
}
