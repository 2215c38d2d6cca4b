-- Documents as a model reads them in read_file's result: the parts of
-- sandbox.document as numbered text (so offset and limit page through a
-- long one as through a file), images attached.
local T = require "sandbox.tools.text"
local base64 = require("sandbox.base64").encode

local M = {}

local fmt, concat = string.format, table.concat

local MAX_IMAGES = 20 -- images of one document attached to one result

local function add(lines, s) lines[#lines + 1] = (s:gsub("\n+$", "")) end

-- A table's row on one line (cells' own line breaks as spaces).
local function row(cells)
  local out = {}
  for i, c in ipairs(cells) do out[i] = (c:gsub("%s*\n%s*", " ")) end
  return concat(out, " | ")
end

local function notebook(lines, cells, images)
  for _, c in ipairs(cells) do
    add(lines, fmt("--- cell %d (%s)%s", c.index, c.cell_type, c.execution_count and fmt(" [%d]", c.execution_count) or ""))
    add(lines, c.source)
    for _, o in ipairs(c.outputs) do
      if o.type == "image" then
        if #images < MAX_IMAGES then
          images[#images + 1] = { mime_type = o.mime_type, data = base64(o.data) }
          add(lines, fmt(">>> %s image %d×%d (attached, image %d)", o.format, o.width, o.height, #images))
        else
          add(lines, fmt(">>> %s image %d×%d (not attached: %d images at most)", o.format, o.width, o.height, MAX_IMAGES))
        end
      else
        add(lines, fmt(">>> %s:", o.name or "output"))
        add(lines, o.text)
      end
    end
  end
end

local RENDER = {
  page = function(lines, p)
    add(lines, fmt("--- page %d of %d", p.page, p.pages))
    add(lines, p.text ~= "" and p.text or "[no text on this page: a scan or a picture? ask for it with page_image]")
  end,
  paragraph = function(lines, p)
    local level = (p.style or ""):match("^Heading(%d)$")
    add(lines, level and ("#"):rep(tonumber(level)) .. " " .. p.text or p.style == "Title" and "# " .. p.text or p.text)
  end,
  table = function(lines, p)
    add(lines, "[table]")
    for _, r in ipairs(p.rows) do add(lines, "| " .. row(r) .. " |") end
  end,
  slide = function(lines, p)
    add(lines, fmt("--- slide %d%s", p.index, p.title ~= "" and ": " .. p.title:gsub("\n", " ") or ""))
    if p.text ~= "" then add(lines, p.text) end
    if p.notes ~= "" then add(lines, "[notes] " .. p.notes) end
  end,
  sheet = function(lines, p)
    add(lines, fmt("--- sheet %d: %s%s", p.index, p.name, p.truncated and " (more rows than shown: the first ones)" or ""))
    for _, r in ipairs(p.rows) do add(lines, fmt("%d: %s", r.row, row(r.cells))) end
  end,
}

local WHAT = { pdf = "a PDF", docx = "a Word document", pptx = "a PowerPoint deck", xlsx = "an Excel workbook",
               notebook = "a Jupyter notebook" }

--- text(path, kind, parts, offset, limit): {content =, images =} for
--- read_file (kind as sandbox.document.kind says).
function M.text(path, kind, parts, offset, limit)
  local lines, images = {}, {}
  if kind == "notebook" then
    add(lines, fmt("[%s: a Jupyter notebook of %d cells, shown as text; its file is JSON]", path, #parts))
    notebook(lines, parts, images)
  else
    local of = kind == "pdf" and parts[1] and fmt(" of %d pages", parts[1].pages) or ""
    add(lines, fmt("[%s: %s%s, its text shown; the file itself is binary]", path, WHAT[kind], of))
    for _, p in ipairs(parts) do RENDER[p.type](lines, p) end
  end
  local text = T.numbered(concat(lines, "\n"), offset or 1, limit or T.DEFAULT_LIMIT)
  return { content = text, images = #images > 0 and images or nil }
end

return M
