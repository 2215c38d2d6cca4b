-- Documents read through the sandbox (SPEC §20): what a file is, told by
-- the bytes the backend's own read returned (its caps, rules and
-- extension allowlist applied first), never by a host path. So far:
-- images (PNG, JPEG, GIF, WebP), whose size comes from their headers —
-- nothing is decoded, so a hostile file cannot make a decoder allocate —
-- given as image parts under a byte and a pixel cap; Jupyter notebooks
-- (nbformat 4) as cells with their text outputs and images; text as text.
-- PDF and office files are not read yet (ENOTSUP).
local json = require "sandbox.json"
local base64 = require "sandbox.base64"

local M = {}

local fmt, byte, concat = string.format, string.byte, table.concat

-- The smallest provider's caps (Anthropic's API: 5 MB and 8000 px a side).
M.DEFAULTS = { max_image_bytes = 5 * 1024 * 1024, max_pixels = 8000 * 8000 }

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

local KNOWN = { max_image_bytes = true, max_pixels = true }

-- An image part of data, or nil, msg, code over a cap (nil alone: no image).
local function image(path, data, opts)
  local img = M.image_info(data)
  if not img then return nil end
  local pixels = img.width * img.height
  local max_pixels = opts.max_pixels or M.DEFAULTS.max_pixels
  local max_bytes = opts.max_image_bytes or M.DEFAULTS.max_image_bytes
  if pixels > max_pixels then
    return nil, fmt("EFBIG: %s is a %d×%d %s image (%.1f megapixels); max_pixels is %d (it is not downscaled here)",
      path, img.width, img.height, img.format, pixels / 1e6, max_pixels), "EFBIG"
  end
  if #data > max_bytes then
    return nil, fmt("EFBIG: %s is a %s image of %d bytes; max_image_bytes is %d", path, img.format, #data, max_bytes),
      "EFBIG"
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

-- ANSI colours of tracebacks: not for a model's eyes.
local function plain(s) return (s:gsub("\27%[[%d;]*[A-Za-z]", "")) end

-- One output's parts: its text (stream, text/plain, an error's traceback),
-- its image, or a note naming what is not shown.
local function output_parts(path, o, opts)
  local kind = o.output_type
  if kind == "stream" then return { { type = "text", name = o.name, text = joined(o.text) } } end
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
    return nil, fmt("ENOTSUP: %s is a notebook of nbformat %d; read_document reads nbformat 4", path, nb.nbformat),
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
                 source = joined(c.source), execution_count = type(c.execution_count) == "number" and math.floor(c.execution_count) or nil,
                 outputs = outs }
  end
  return cells
end

--- parts(path, bytes [, opts]): what read_document returns for bytes
--- already read from path (opts checked by the caller).
function M.parts(path, data, opts)
  opts = opts or {}
  local img, why, code = image(path, data, opts)
  if img then return { img } end
  if code then return nil, why, code end
  if path:match("%.ipynb$") then
    local cells
    cells, why, code = notebook(path, data, opts)
    if cells then return cells end
    if code then return nil, why, code end
    return nil, fmt("EINVAL: %s is not a Jupyter notebook (no nbformat and cells in its JSON)", path), "EINVAL"
  end
  if M.is_binary(data) then
    return nil, fmt("ENOTSUP: %s is a binary file of a kind read_document does not read (images: PNG, JPEG, GIF, WebP)",
      path), "ENOTSUP"
  end
  return { { type = "text", text = data } }
end

--- sb:read_document(path [, {max_image_bytes =, max_pixels =}]): the
--- file's parts: {{type = "image", mime_type =, width =, height =, data =}}
--- or {{type = "text", text =}}; nil, msg, code otherwise (EFBIG over a
--- cap, ENOTSUP for other binary files, the read's own errors).
function M.read(sb, path, opts)
  opts = opts or {}
  if type(opts) ~= "table" then return nil, "EINVAL: read_document: options must be a table", "EINVAL" end
  for k, v in pairs(opts) do
    if not KNOWN[k] then return nil, fmt("EINVAL: read_document: unknown option '%s'", tostring(k)), "EINVAL" end
    if type(v) ~= "number" or v < 1 or v % 1 ~= 0 then
      return nil, fmt("EINVAL: read_document: %s must be a positive integer", k), "EINVAL"
    end
  end
  local data, msg, code = sb:read_file(path)
  if not data then return nil, msg, code end
  return M.parts(path, data, opts)
end

return M
