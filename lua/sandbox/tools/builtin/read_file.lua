-- The read_file tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local C = require "sandbox.tools.common"
local D = require "sandbox.document"
local docs = require "sandbox.tools.documents"
local base64 = require("sandbox.base64").encode
local fmt = string.format

-- Images a model is shown: at most this long a side (Anthropic's guidance;
-- larger ones are scaled down by the provider anyway, after costing the
-- bytes), scaled down here in the document helper.
local MAX_SIDE = 1568

return {
  description = "Read a text file and return it with line numbers (like `cat -n`). " .. C.PATHS ..
    " For long files use offset (first line, 1-based) and limit (number of lines); at most 2000 lines are " ..
    "shown at once and the output says how many lines the file has. PNG, JPEG, GIF and WebP images are " ..
    "returned as images; PDFs as their text page by page (pages picks some, page_image shows one page as an " ..
    "image); Word, PowerPoint and Excel files (.docx, .pptx, .xlsx) as paragraphs and tables, slides with " ..
    "their notes, and sheets' rows; Jupyter notebooks as their cells and outputs. Other binary files are refused.",
  parameters = S.object({
    path = S.string("File to read."),
    offset = S.integer("Line to start at, 1-based (default 1).", { minimum = 1 }),
    limit = S.integer("Number of lines to show (default 2000).", { minimum = 1, maximum = 10000 }),
    pages = S.string("PDF only: the pages to read, e.g. \"3-5\", \"7\" or \"10-\" (default: all)."),
    page_image = S.integer("PDF only: show this page as an image instead of text (a scan, a figure).",
      { minimum = 1 }),
  }, { "path" }),
  read_only = true,
  run = function(ctx, a)
    local data, msg, code = ctx.sb:read_file(a.path)
    if not data then return C.fail("Reading " .. a.path, msg, code) end
    local kind = D.kind(a.path, data)
    if (a.pages or a.page_image) and kind ~= "pdf" then
      return nil, fmt("%s is not a PDF: pages and page_image are for PDFs; leave them out.", a.path)
    end
    if kind == "text" then
      C.remember(ctx, a.path)
      return (T.numbered(data, a.offset or 1, a.limit or T.DEFAULT_LIMIT))
    end
    if kind == "binary" then
      return nil, fmt("%s is a binary file (%d bytes) of a kind read_file does not show (it shows text, images, " ..
        "PDF, .docx, .pptx, .xlsx and notebooks).", a.path, #data)
    end
    local parts, why, err = D.parts(a.path, data, { pages = a.pages, page_image = a.page_image, max_side = MAX_SIDE })
    if not parts then
      return nil, fmt("%s cannot be shown: %s%s", a.path, (why:gsub("^%u+: ", ""):gsub("%.$", "")),
        err == "EFBIG" and "." or ". If the file is damaged, try another copy; if it is text, read it with grep.")
    end
    C.remember(ctx, a.path)
    local img = parts[1].type == "image" and parts[1]
    if img then
      local what = img.page and fmt("page %d of a PDF, as", img.page) or "a"
      local from = img.scaled_from and fmt(" (scaled down from %d×%d)", img.scaled_from.width, img.scaled_from.height) or ""
      return { content = fmt("%s: %s %d×%d %s image (%d bytes)%s, attached.", a.path, what, img.width, img.height,
        img.format, #img.data, from), images = { { mime_type = img.mime_type, data = base64(img.data) } } }
    end
    return docs.text(a.path, kind, parts, a.offset, a.limit)
  end,
}
