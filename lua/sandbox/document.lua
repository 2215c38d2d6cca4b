-- Documents read through the sandbox (SPEC §20): what a file is, told by
-- the bytes the backend's own read returned (its caps, rules and
-- extension allowlist applied first), never by a host path. So far:
-- images (PNG, JPEG, GIF, WebP), whose size comes from their headers —
-- nothing is decoded, so a hostile file cannot make a decoder allocate —
-- given as image parts under a byte and a pixel cap; Jupyter notebooks
-- (nbformat 4) as cells with their text outputs and images; PDF pages and
-- Word, PowerPoint and Excel files through the confined document helper
-- (sandbox.docparse); text as text.
local json = require "sandbox.json"
local base64 = require "sandbox.base64"
local docparse = require "sandbox.docparse"

local M = {}

local fmt, byte, concat = string.format, string.byte, table.concat

-- The smallest provider's caps (Anthropic's API: 5 MB and 8000 px a side).
-- A PDF page's image: 1568 px on its longer side (what Anthropic's API
-- keeps without scaling it down again). Sheets: 1000 rows each.
M.DEFAULTS = { max_image_bytes = 5 * 1024 * 1024, max_pixels = 8000 * 8000, page_image_side = 1568, max_rows = 1000 }

local function u16be(s, i) local a, b = byte(s, i, i + 1); return a * 256 + b end
local function u16le(s, i) local a, b = byte(s, i, i + 1); return b * 256 + a end
local function u24le(s, i) local a, b, c = byte(s, i, i + 2); return (c * 256 + b) * 256 + a end
local function u32be(s, i) local a, b, c, d = byte(s, i, i + 3); return ((a * 256 + b) * 256 + c) * 256 + d end

-- JPEG: the first start-of-frame marker's height and width, walking the
-- segments from the start (at most the file; every step moves forward).
local function jpeg_size(s)
  local i, n = 3, #s
  while i + 8 <= n do
    if byte(s, i) ~= 0xFF then return nil end
    local m = byte(s, i + 1)
    if m == 0xFF then
      i = i + 1 -- fill bytes
    elseif m == 0xD8 or m == 0x01 or (m >= 0xD0 and m <= 0xD7) then
      i = i + 2 -- markers without a length
    else
      local len = u16be(s, i + 2)
      if len < 2 then return nil end
      if m >= 0xC0 and m <= 0xCF and m ~= 0xC4 and m ~= 0xC8 and m ~= 0xCC then
        return u16be(s, i + 7), u16be(s, i + 5)
      end
      i = i + 2 + len
    end
  end
  return nil
end

-- WebP: the first chunk says the size (VP8X extended, VP8 lossy, VP8L lossless).
local function webp_size(s)
  if #s < 30 then return nil end
  local kind = s:sub(13, 16)
  if kind == "VP8X" then return u24le(s, 25) + 1, u24le(s, 28) + 1 end
  if kind == "VP8 " and s:sub(24, 26) == "\157\1\42" then return u16le(s, 27) % 16384, u16le(s, 29) % 16384 end
  if kind == "VP8L" and byte(s, 21) == 0x2F then
    local b0, b1, b2, b3 = byte(s, 22, 25)
    local bits = ((b3 * 256 + b2) * 256 + b1) * 256 + b0
    return bits % 16384 + 1, math.floor(bits / 16384) % 16384 + 1
  end
  return nil
end

local FORMAT = { ["image/png"] = "PNG", ["image/jpeg"] = "JPEG", ["image/gif"] = "GIF", ["image/webp"] = "WebP" }

--- image_info(bytes): {mime_type =, format =, width =, height =} when the
--- bytes are a PNG, JPEG, GIF or WebP image whose header gives its size.
function M.image_info(s)
  local mime, w, h
  if s:sub(1, 8) == "\137PNG\r\n\26\n" and s:sub(13, 16) == "IHDR" and #s >= 24 then
    mime, w, h = "image/png", u32be(s, 17), u32be(s, 21)
  elseif (s:sub(1, 6) == "GIF87a" or s:sub(1, 6) == "GIF89a") and #s >= 10 then
    mime, w, h = "image/gif", u16le(s, 7), u16le(s, 9)
  elseif s:sub(1, 3) == "\255\216\255" then
    mime, w, h = "image/jpeg", jpeg_size(s)
  elseif s:sub(1, 4) == "RIFF" and s:sub(9, 12) == "WEBP" then
    mime, w, h = "image/webp", webp_size(s)
  end
  if not w or w == 0 or h == 0 then return nil end
  return { mime_type = mime, format = FORMAT[mime], width = w, height = h }
end

--- Binary, as git and rg tell it: a NUL in the first 8000 bytes.
function M.is_binary(s)
  local nul = s:find("\0", 1, true)
  return nul ~= nil and nul <= 8000
end

-- read_document's options: positive integers, but pages ("3-5", "4", 4).
local KNOWN = { max_image_bytes = true, max_pixels = true, max_side = true, pages = true, page_image = true,
                max_rows = true }

-- An image part of data, or nil, msg, code over a cap (nil alone: no
-- image). With max_side, an image whose longer side is over it is scaled
-- down in the document helper (decoded there, never here) and re-encoded.
local function image(path, data, opts)
  local img = M.image_info(data)
  if not img then return nil end
  local pixels = img.width * img.height
  local max_pixels = opts.max_pixels or M.DEFAULTS.max_pixels
  local max_bytes = opts.max_image_bytes or M.DEFAULTS.max_image_bytes
  if pixels > max_pixels then
    return nil, fmt("EFBIG: %s is a %d×%d %s image (%.1f megapixels); max_pixels is %d (nothing that large is decoded, " ..
      "not even to scale it down)", path, img.width, img.height, img.format, pixels / 1e6, max_pixels), "EFBIG"
  end
  if opts.max_side and math.max(img.width, img.height) > opts.max_side then
    local small, why, code = docparse.run({ "image", img.mime_type, tostring(opts.max_side) }, data, path)
    if not small then return nil, why, code end
    local scaled = M.image_info(small)
    if not scaled then return nil, fmt("EIO: %s: the scaled image is not one", path), "EIO" end
    scaled.scaled_from = { width = img.width, height = img.height }
    img, data = scaled, small
  end
  if #data > max_bytes then
    return nil, fmt("EFBIG: %s is a %s image of %d bytes; max_image_bytes is %d%s", path, img.format, #data, max_bytes,
      opts.max_side and "" or " (max_side scales it down)"), "EFBIG"
  end
  img.type, img.data = "image", data
  return img
end

-- A notebook field that is a string or a list of strings (nbformat's
-- multiline strings), as one string; anything else "".
local function joined(v)
  if type(v) == "string" then return v end
  if type(v) ~= "table" then return "" end
  local out = {}
  for i, x in ipairs(v) do out[i] = type(x) == "string" and x or "" end
  return concat(out)
end

-- A cell's execution count: a whole number a model can be shown (a hostile
-- notebook's 1e300 or 2.5 is not one: nil, or its floor).
local function count(v)
  if type(v) ~= "number" or not (v >= -2 ^ 53 and v <= 2 ^ 53) then return nil end
  return math.floor(v)
end

-- ANSI colours of tracebacks: not for a model's eyes.
local function plain(s) return (s:gsub("\27%[[%d;]*[A-Za-z]", "")) end

-- One output's parts: its text (stream, text/plain, an error's traceback),
-- its image, or a note naming what is not shown.
local function output_parts(path, o, opts)
  local kind = type(o.output_type) == "string" and o.output_type or nil -- a name, or none to show
  if kind == "stream" then
    return { { type = "text", name = type(o.name) == "string" and o.name or nil, text = joined(o.text) } }
  end
  if kind == "error" then
    local tb = {}
    for i, l in ipairs(type(o.traceback) == "table" and o.traceback or {}) do tb[i] = plain(joined(l)) end
    local text = #tb > 0 and concat(tb, "\n") or fmt("%s: %s", joined(o.ename), joined(o.evalue))
    return { { type = "text", name = "error", text = text } }
  end
  local data = type(o.data) == "table" and o.data or {}
  for _, mime in ipairs { "image/png", "image/jpeg", "image/gif", "image/webp" } do
    if type(data[mime]) == "string" or type(data[mime]) == "table" then
      local bytes = base64.decode(joined(data[mime]))
      local img, why, code = image(path, bytes or "", opts)
      if img then return { img } end
      if code then return nil, why, code end
    end
  end
  if data["text/plain"] then return { { type = "text", name = kind, text = joined(data["text/plain"]) } } end
  local kinds = {}
  for k in pairs(data) do kinds[#kinds + 1] = k end
  table.sort(kinds)
  return { { type = "text", name = kind, text = fmt("[%s output not shown]", concat(kinds, ", ")) } }
end

-- A Jupyter notebook (nbformat 4): {type = "cell", index, cell_type,
-- source, execution_count, outputs = {parts}} per cell; nil when the text
-- is not one.
local function notebook(path, data, opts)
  local nb = json.decode(data)
  if type(nb) ~= "table" or type(nb.cells) ~= "table" or type(nb.nbformat) ~= "number" then return nil end
  if nb.nbformat < 4 then
    return nil, fmt("ENOTSUP: %s is a notebook of nbformat %.14g; read_document reads nbformat 4", path, nb.nbformat),
      "ENOTSUP"
  end
  local cells = {}
  for i, c in ipairs(nb.cells) do
    if type(c) ~= "table" then return nil end
    local outs = {}
    for _, o in ipairs(type(c.outputs) == "table" and c.outputs or {}) do
      if type(o) == "table" then
        local ps, why, code = output_parts(path, o, opts)
        if not ps then return nil, why, code end
        for _, p in ipairs(ps) do outs[#outs + 1] = p end
      end
    end
    cells[i] = { type = "cell", index = i, cell_type = type(c.cell_type) == "string" and c.cell_type or "raw",
                 source = joined(c.source), execution_count = count(c.execution_count),
                 outputs = outs }
  end
  return cells
end

-- "3-5", "4", "7-" or 4: first, last (0: to the end); nil, msg if not one.
local function page_range(v)
  if v == nil then return 1, 0 end
  if type(v) == "number" and v >= 1 and v % 1 == 0 then return v, v end
  local a, b = tostring(v):match("^%s*(%d+)%s*%-?%s*(%d*)%s*$")
  a = tonumber(a)
  if not a or a < 1 then return nil, fmt("pages must be a page (4) or a range (\"3-5\", \"7-\"), not %q", tostring(v)) end
  if tostring(v):find("-", 1, true) then
    b = b == "" and 0 or tonumber(b)
    if b ~= 0 and b < a then return nil, fmt("pages %q ends before it starts", tostring(v)) end
    return a, b
  end
  return a, a
end

-- A PDF: its pages' text ({type = "page", page =, pages =, text =}), or
-- with page_image one page as an image part.
local function pdf(path, data, opts)
  if opts.page_image then
    local side = math.min(opts.max_side or M.DEFAULTS.page_image_side,
      math.floor(math.sqrt(opts.max_pixels or M.DEFAULTS.max_pixels)))
    local png, why, code = docparse.run({ "pdf-page", tostring(opts.page_image), tostring(side) }, data, path)
    if not png then return nil, why, code end
    local img
    img, why, code = image(path, png, opts)
    if not img then return nil, why or fmt("EIO: %s: the page's image is not a PNG", path), code or "EIO" end
    img.page = opts.page_image
    return { img }
  end
  local first, last = page_range(opts.pages)
  if not first then return nil, "EINVAL: read_document: " .. last, "EINVAL" end
  local t, why, code = docparse.json({ "pdf", tostring(first), tostring(last) }, data, path)
  if not t then return nil, why, code end
  if t.pages == 0 then return nil, fmt("EINVAL: %s: the PDF has no page that can be read", path), "EINVAL" end
  if first > t.pages then
    return nil, fmt("EINVAL: %s has %d pages; pages %s starts after the last", path, t.pages, tostring(opts.pages)), "EINVAL"
  end
  for _, p in ipairs(t.parts) do p.pages = t.pages end
  return t.parts
end

-- Office files by their extension (the package's bytes must agree: the
-- helper checks the ZIP and its parts).
local OFFICE = { docx = "docx", docm = "docx", pptx = "pptx", pptm = "pptx", xlsx = "xlsx", xlsm = "xlsx" }

local function office(kind, path, data, opts)
  local args = { kind }
  if kind == "xlsx" then args[2] = tostring(opts.max_rows or M.DEFAULTS.max_rows) end
  local t, why, code = docparse.json(args, data, path)
  if not t then return nil, why, code end
  return t.parts
end

--- kind(path, bytes): "image", "pdf", "docx", "pptx", "xlsx", "notebook",
--- "binary" (none of these) or "text": how read_document reads the bytes.
function M.kind(path, data)
  if M.image_info(data) then return "image" end
  -- a PDF may have bytes before its header (readers look in the first KiB);
  -- a text file that mentions "%PDF-" is still text
  local at = data:sub(1, 1024):find("%PDF-", 1, true)
  if at == 1 or (at and M.is_binary(data)) then return "pdf" end
  local ext = path:match("%.(%w+)$")
  local okind = ext and OFFICE[ext:lower()]
  if okind and data:sub(1, 4) == "PK\3\4" then return okind end
  if path:match("%.ipynb$") and not M.is_binary(data) then return "notebook" end
  return M.is_binary(data) and "binary" or "text"
end

--- parts(path, bytes [, opts]): what read_document returns for bytes
--- already read from path (opts checked by the caller).
function M.parts(path, data, opts)
  opts = opts or {}
  local kind = M.kind(path, data)
  if kind == "image" then
    local img, why, code = image(path, data, opts)
    if img then return { img } end
    return nil, why, code
  end
  if kind == "pdf" then return pdf(path, data, opts) end
  if kind == "docx" or kind == "pptx" or kind == "xlsx" then return office(kind, path, data, opts) end
  if kind == "notebook" then
    local cells, why, code = notebook(path, data, opts)
    if cells then return cells end
    if code then return nil, why, code end
    return nil, fmt("EINVAL: %s is not a Jupyter notebook (no nbformat and cells in its JSON)", path), "EINVAL"
  end
  if kind == "binary" then
    return nil, fmt("ENOTSUP: %s is a binary file of a kind read_document does not read (it reads PNG, JPEG, GIF, " ..
      "WebP, PDF, .docx, .pptx, .xlsx and .ipynb)", path), "ENOTSUP"
  end
  return { { type = "text", text = data } }
end

--- sb:read_document(path [, {max_image_bytes =, max_pixels =, max_side =,
--- pages =, page_image =, max_rows =}]): the file's parts: {{type =
--- "image", mime_type =, width =, height =, data =}} (scaled_from = {width,
--- height} when max_side scaled it down), PDF {type = "page", page =,
--- pages =, text =} (page_image = n: that page as an image part), .docx
--- paragraphs and tables, .pptx slides, .xlsx sheets, notebook cells, or
--- {{type = "text", text =}}; nil, msg, code otherwise (EFBIG over a cap,
--- ENOTSUP for other binary files, EINVAL for a malformed document, the
--- read's own errors).
function M.read(sb, path, opts)
  opts = opts or {}
  if type(opts) ~= "table" then return nil, "EINVAL: read_document: options must be a table", "EINVAL" end
  for k, v in pairs(opts) do
    if not KNOWN[k] then return nil, fmt("EINVAL: read_document: unknown option '%s'", tostring(k)), "EINVAL" end
    if k == "pages" then
      local ok, why = page_range(v)
      if not ok then return nil, "EINVAL: read_document: " .. why, "EINVAL" end
    elseif type(v) ~= "number" or v < 1 or v % 1 ~= 0 then
      return nil, fmt("EINVAL: read_document: %s must be a positive integer", k), "EINVAL"
    end
  end
  local data, msg, code = sb:read_file(path)
  if not data then return nil, msg, code end
  return M.parts(path, data, opts)
end

return M
