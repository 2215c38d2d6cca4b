-- The list_files tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local fmt = string.format
local concat = table.concat

return {
  description = "List the files and directories under a directory as an indented tree, with sizes; " ..
    "symbolic links show as `name -> target` (read_file reads through them). " ..
    C.PATHS .. " depth limits how deep it goes (default 2); at most max_entries entries are shown.",
  parameters = S.object({
    path = S.string("Directory to list (default: the sandbox root)."),
    depth = S.integer("How many levels to show (default 2, at most 10).", { minimum = 1, maximum = 10 }),
    max_entries = S.integer("Most entries to show (default 500).", { minimum = 1, maximum = 5000 }),
  }),
  read_only = true,
  run = function(ctx, a)
    local root = a.path or "."
    local depth, max = a.depth or 2, a.max_entries or 500
    local out, count, more = {}, 0, false
    local function walk(dir, level)
      local list, msg, code = ctx.sb:readdir(dir)
      if not list then return msg, code end
      for _, e in ipairs(list) do
        if count >= max then
          more = true
          return
        end
        count = count + 1
        local indent = ("  "):rep(level)
        local full = dir == "." and e.name or dir .. "/" .. e.name
        if e.type == "symlink" then -- shown, not descended into
          out[#out + 1] = fmt("%s%s -> %s", indent, e.name, ctx.sb:readlink(full) or "?")
        elseif e.is_directory then
          out[#out + 1] = indent .. e.name .. "/"
          if level + 1 < depth then walk(full, level + 1) end
        else
          out[#out + 1] = fmt("%s%s (%d bytes)%s", indent, e.name, e.size, e.type == "file" and "" or " [" .. e.type .. "]")
        end
        if more then return end
      end
    end
    local msg, code = walk(root, 0)
    if msg then return C.fail("Listing " .. root, msg, code) end
    if count == 0 then return fmt("%s is empty.", root) end
    if more then out[#out + 1] = fmt("[stopped after %d entries; list a subdirectory or lower depth to see the rest]", max) end
    return concat(out, "\n")
  end,
}
