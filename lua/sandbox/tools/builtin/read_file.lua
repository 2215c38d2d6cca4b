-- The read_file tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local C = require "sandbox.tools.common"
local D = require "sandbox.document"
local base64 = require("sandbox.base64").encode
local fmt, concat = string.format, table.concat

local MAX_IMAGES = 20 -- images of one notebook attached to one result

-- A notebook's cells as text (numbered like a file, so offset and limit
-- page through it) and its images, attached.
local function notebook(a, cells)
  local lines, images = { fmt("[%s: a Jupyter notebook of %d cells, shown as text; its file is JSON]", a.path, #cells) }, {}
  for _, c in ipairs(cells) do
    lines[#lines + 1] = fmt("--- cell %d (%s)%s", c.index, c.cell_type,
      c.execution_count and fmt(" [%d]", c.execution_count) or "")
    lines[#lines + 1] = c.source
    for _, o in ipairs(c.outputs) do
      if o.type == "image" then
        if #images < MAX_IMAGES then
          images[#images + 1] = { mime_type = o.mime_type, data = base64(o.data) }
          lines[#lines + 1] = fmt(">>> %s image %d×%d (attached, image %d)", o.format, o.width, o.height, #images)
        else
          lines[#lines + 1] = fmt(">>> %s image %d×%d (not attached: %d images at most)", o.format, o.width, o.height, MAX_IMAGES)
        end
      else
        lines[#lines + 1] = fmt(">>> %s:", o.name or "output")
        lines[#lines + 1] = (o.text:gsub("\n$", ""))
      end
    end
  end
  local text = T.numbered(concat(lines, "\n"), a.offset or 1, a.limit or T.DEFAULT_LIMIT)
  return { content = text, images = #images > 0 and images or nil }
end

return {
  description = "Read a text file and return it with line numbers (like `cat -n`). " .. C.PATHS ..
    " For long files use offset (first line, 1-based) and limit (number of lines); at most 2000 lines are " ..
    "shown at once and the output says how many lines the file has. PNG, JPEG, GIF and WebP images are " ..
    "returned as images, Jupyter notebooks as their cells and outputs; other binary files are refused.",
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
      local parts, why, kind = D.parts(a.path, data)
      if kind == "EFBIG" then return nil, fmt("%s cannot be shown: %s.", a.path, why:gsub("^EFBIG: ", "")) end
      local img = parts and parts[1].type == "image" and parts[1]
      if not img then
        return nil, fmt("%s is a binary file (%d bytes); read_file shows text files and images only.", a.path, #data)
      end
      C.remember(ctx, a.path)
      return { content = fmt("%s: a %d×%d %s image (%d bytes), attached.", a.path, img.width, img.height,
        img.format, #data), images = { { mime_type = img.mime_type, data = base64(data) } } }
    end
    C.remember(ctx, a.path)
    if a.path:match("%.ipynb$") then
      local cells, why = D.parts(a.path, data)
      if not cells then return nil, (why:gsub("^%u+: ", "")) .. "." end
      return (notebook(a, cells))
    end
    return (T.numbered(data, a.offset or 1, a.limit or T.DEFAULT_LIMIT))
  end,
}
