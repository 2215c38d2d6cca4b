-- Documents through the sandbox (SPEC §20), the part that is here: images
-- told by their bytes (PNG, JPEG, GIF, WebP: sizes from the headers,
-- checked against Pillow reading back the files it wrote), returned by
-- read_document and by the read_file tool as image content, under a byte
-- and a pixel cap; hostile headers refused within those caps. Jupyter
-- notebooks (written by nbformat) as cells with their outputs.
local sandbox = require "sandbox"
local hostcan = require "support.host"
local backends = require "support.backends"
local sh = require "support.sh"
local json = require "sandbox.json"
local document = require "sandbox.document"

local PY = "/usr/bin/python3" -- Debian's, with python3-pil (scripts/deps.sh)

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- Pillow's images and what Pillow says of them; a 100-megapixel PNG bomb.
local dir = backends.tmpdir("images")
local ok, out = sh.run(("%s spec/support/images.py %s"):format(PY, sh.quote(dir)))
assert(ok, "Pillow (python3-pil) could not make the test images: " .. tostring(out))
local MADE = assert(json.decode(out))
assert(sh.run(("%s spec/support/images.py bomb %s 10000"):format(PY, sh.quote(dir .. "/bomb.png"))))
assert(sh.run(("%s spec/support/images.py big %s"):format(PY, sh.quote(dir))))
for _, nb in ipairs { { "nb.ipynb", "" }, { "nb-bomb.ipynb", " " .. sh.quote(dir .. "/bomb.png") } } do
  local okn, why = sh.run(("%s spec/support/images.py notebook %s %s%s"):format(PY, sh.quote(dir .. "/" .. nb[1]),
    sh.quote(dir .. "/3x2.png"), nb[2]))
  assert(okn, "nbformat (python3-nbformat) could not write the test notebook: " .. tostring(why))
end

local function base64_of(path) -- coreutils' encoding, the peer of ours
  local okb, b64 = sh.run("base64 -w0 " .. sh.quote(path))
  assert(okb, b64)
  return (b64:gsub("%s+$", ""))
end

describe("image headers", function()
  it("give the sizes Pillow reads back, for every format and size it wrote", function()
    assert.is_true(#MADE >= 26)
    local mime = { PNG = "image/png", JPEG = "image/jpeg", GIF = "image/gif", WEBP = "image/webp" }
    for _, c in ipairs(MADE) do
      local info = document.image_info(read(dir .. "/" .. c.file))
      assert.is_table(info, c.file)
      assert.same({ mime[c.format], c.width, c.height }, { info.mime_type, info.width, info.height }, c.file)
    end
  end)

  it("read no size from text, truncated headers or other binary formats", function()
    for _, s in ipairs { "", "hello", "\137PNG\r\n\26\n", "\137PNG\r\n\26\n\0\0\0\13IHDR\0\0", "GIF89a\1",
                         "\255\216\255\224\0\16JFIF", "RIFF\0\0\0\0WEBPVP8 ", "%PDF-1.7\n", "PK\3\4" } do
      assert.is_nil(document.image_info(s), ("%q"):format(s))
    end
    -- a zero-sized image is no image
    assert.is_nil(document.image_info("GIF89a\0\0\5\0"))
  end)

  it("never fail on random bytes behind each format's signature (2 000 cases)", function()
    math.randomseed(20261203)
    local sigs = { "\137PNG\r\n\26\n\0\0\0\13IHDR", "GIF89a", "\255\216\255", "RIFF\0\0\0\0WEBPVP8X", "RIFF\0\0\0\0WEBPVP8L",
                   "RIFF\0\0\0\0WEBPVP8 " }
    for i = 1, 2000 do
      local t = { sigs[i % #sigs + 1] }
      for j = 1, math.random(0, 64) do t[j + 1] = string.char(math.random(0, 255)) end
      local info = document.image_info(table.concat(t))
      if info then
        assert.is_true(info.width >= 1 and info.height >= 1 and info.width < 2 ^ 32 and info.height < 2 ^ 32)
      end
    end
  end)
end)

for _, be in ipairs(backends.list) do
  describe(be.name .. ": images", function()
    local files = {
      ["pic.png"] = read(dir .. "/640x480.png"),
      ["photo.jpg"] = read(dir .. "/3x2.progressive.jpg"),
      ["anim.gif"] = read(dir .. "/1000x17.gif"),
      ["pic.webp"] = read(dir .. "/alpha.webp"),
      ["bomb.png"] = read(dir .. "/bomb.png"),
      ["data.bin"] = "\0\1\2\3",
      ["notes.txt"] = "plain\n",
      ["nb.ipynb"] = read(dir .. "/nb.ipynb"),
      ["nb-bomb.ipynb"] = read(dir .. "/nb-bomb.ipynb"),
      ["old.ipynb"] = '{"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "cells": []}',
      ["odd.ipynb"] = '{"nbformat": 3.5, "cells": []}', -- not an integer (fuzz_notebook's finding)
      ["count.ipynb"] = '{"nbformat": 4, "cells": [{"cell_type": "code", "source": "x", "execution_count": 1e300},'
        .. ' {"cell_type": "code", "source": "y", "execution_count": 2.5, "outputs": [{"output_type": "stream",'
        .. ' "name": {}, "text": "out"}, {"output_type": 5, "data": {"text/plain": "five"}}]}]}',
      ["not.ipynb"] = '{"cells": 3}',
      ["pic.ipynb"] = read(dir .. "/1000x17.gif"), -- an image whatever its name (fuzz_notebook's harness missed it)
      ["big.png"] = read(dir .. "/big.png"),
      ["big.jpg"] = read(dir .. "/big.jpg"),
      ["big.webp"] = read(dir .. "/big.webp"),
      ["big.gif"] = read(dir .. "/big.gif"),
    }
    local new = backends.fresh(be, files, after_each)

    it("read_document: an image part with its type, size and bytes; text as text", function()
      local sb = new()
      local parts = assert(sb:read_document("pic.png"))
      assert.same({ "image", "image/png", 640, 480 }, { parts[1].type, parts[1].mime_type, parts[1].width, parts[1].height })
      assert.equal(files["pic.png"], parts[1].data)
      assert.equal("image/webp", assert(sb:read_document("pic.webp"))[1].mime_type)
      assert.same({ { type = "text", text = "plain\n" } }, assert(sb:read_document("notes.txt")))
      local _, msg, code = sb:read_document("data.bin")
      assert.equal("ENOTSUP", code)
      assert.matches("binary file", msg)
    end)

    it("refuses the 100-megapixel PNG by its header, and images over max_image_bytes", function()
      local sb = new()
      local _, msg, code = sb:read_document("bomb.png")
      assert.equal("EFBIG", code)
      assert.matches("10000×10000 PNG image %(100%.0 megapixels%); max_pixels is 64000000", msg)
      _, msg, code = sb:read_document("pic.png", { max_image_bytes = 100 })
      assert.equal("EFBIG", code)
      assert.matches("max_image_bytes is 100", msg)
      assert.equal("EFBIG", select(3, sb:read_document("pic.png", { max_pixels = 640 * 480 - 1 })))
      assert.equal("EINVAL", select(3, sb:read_document("pic.png", { max_bytes = 1 })))
      assert.equal("EINVAL", select(3, sb:read_document("pic.png", { max_pixels = 1.5 })))
    end)

    it("scales an image down to max_side in the document helper: a JPEG stays one, the others become PNG", function()
      -- the helper runs confined, which fails closed without Linux's layers
      if not hostcan.can("images scaled in the document helper", hostcan.layers()) then return end
      local sb = new()
      for _, c in ipairs {
        { "big.png", "image/png", 1568, 1176, 4000, 3000 }, { "big.jpg", "image/jpeg", 1568, 1176, 4000, 3000 },
        { "big.webp", "image/png", 1176, 1568, 3000, 4000 }, { "big.gif", "image/png", 1568, 78, 2000, 100 },
      } do
        local img = assert(sb:read_document(c[1], { max_side = 1568 }))[1]
        assert.same({ c[2], c[3], c[4], c[5], c[6] },
          { img.mime_type, img.width, img.height, img.scaled_from.width, img.scaled_from.height }, c[1])
        local info = document.image_info(img.data)
        assert.same({ c[2], c[3], c[4] }, { info.mime_type, info.width, info.height }, c[1] .. ": its bytes")
      end
      -- within max_side, or without it: the file's own bytes
      local same = assert(sb:read_document("pic.png", { max_side = 1568 }))[1]
      assert.same({ files["pic.png"], nil }, { same.data, same.scaled_from })
      assert.equal(files["big.png"], assert(sb:read_document("big.png"))[1].data)
      -- over max_image_bytes without max_side: the error says what would help
      local _, msg = sb:read_document("big.jpg", { max_image_bytes = 1000 })
      assert.matches("max_image_bytes is 1000 %(max_side scales it down%)", msg)
      -- a decompression bomb is refused by its header, max_side or not: nothing decodes it
      local r, why, code = sb:read_document("bomb.png", { max_side = 100 })
      assert.same({ nil, "EFBIG" }, { r, code })
      assert.matches("nothing that large is decoded", why)
    end)

    it("reads through the read rules and caps first", function()
      assert.equal("EACCES", select(3, new { rules = { deny = { "*.png" } } }:read_document("pic.png")))
      assert.equal("EACCES", select(3, new { extensions = { read = { ".txt" } } }:read_document("pic.png")))
      assert.equal("EFBIG", select(3, new { max_read_bytes = 100 }:read_document("pic.png")))
      assert.equal("EESCAPE", select(3, new():read_document("../pic.png")))
    end)

    it("read_document: a notebook's cells with their outputs, images as image parts", function()
      local cells = assert(new():read_document("nb.ipynb"))
      assert.equal(5, #cells)
      local function shape(c)
        local outs = {}
        for i, o in ipairs(c.outputs) do
          outs[i] = o.type == "image" and { "image", o.mime_type, o.width, o.height, o.data == read(dir .. "/3x2.png") }
            or { o.name, o.text }
        end
        return { c.index, c.cell_type, c.source, c.execution_count, outs }
      end
      assert.same({
        { 1, "markdown", "# Title\nSome *text*.", nil, {} },
        { 2, "code", "print('hi')\n1+1", 1, { { "stdout", "hi\n" }, { "execute_result", "2" } } },
        { 3, "code", "plot()", 2, { { "image", "image/png", 3, 2, true } } },
        { 4, "code", "1/0", 3, { { "error", "ZeroDivisionError: division by zero" } } }, -- its colours taken out
        { 5, "code", "show()", nil, { { "display_data", "[text/html output not shown]" } } },
      }, { shape(cells[1]), shape(cells[2]), shape(cells[3]), shape(cells[4]), shape(cells[5]) })
    end)

    it("refuses notebooks it cannot read: an image output over the caps, nbformat 3, not a notebook", function()
      local sb = new()
      local _, msg, code = sb:read_document("nb-bomb.ipynb")
      assert.equal("EFBIG", code)
      assert.matches("100%.0 megapixels", msg)
      assert.equal("ENOTSUP", select(3, sb:read_document("old.ipynb")))
      _, msg, code = sb:read_document("odd.ipynb")
      assert.same({ "ENOTSUP", true }, { code, msg:find("nbformat 3.5", 1, true) ~= nil })
      if sb.has_exec and be.commands ~= false then -- a notebook of 1 GB (sparse): refused by the read's cap, unparsed
        assert.equal(0, assert(sb:exec("truncate", { "-s", "1G", "huge.ipynb" })).exit_code)
        _, msg, code = sb:read_document("huge.ipynb")
        assert.equal("EFBIG", code)
        assert.matches("max_read_bytes", msg)
      end
      assert.equal("EINVAL", select(3, sb:read_document("not.ipynb")))
      local r = sb:tools().read_file.execute { path = "nb-bomb.ipynb" }
      assert.is_true(r.is_error)
      assert.matches("100%.0 megapixels", r.content)
    end)

    it("read_file (the tool) shows a cell's execution count and an output's name only where they are a whole number and a string", function()
      local r = new():tools().read_file.execute { path = "count.ipynb" }
      assert.is_false(r.is_error, r.content)
      assert.matches("\n%s+%d+\t%-%-%- cell 1 %(code%)\n%s+%d+\tx\n", r.content)
      assert.matches("\n%s+%d+\t%-%-%- cell 2 %(code%) %[2%]\n%s+%d+\ty\n", r.content)
      -- names that are not strings (a hostile notebook's) are not shown
      assert.matches("\n%s+%d+\t>>> output:\n%s+%d+\tout\n%s+%d+\t>>> output:\n%s+%d+\tfive$", r.content)
    end)

    it("read_file (the tool) shows a notebook as its cells, pages through them, and attaches its images", function()
      local t = new():tools()
      local r = t.read_file.execute { path = "nb.ipynb" }
      assert.is_false(r.is_error, r.content)
      assert.matches("^     1\t%[nb%.ipynb: a Jupyter notebook of 5 cells", r.content)
      assert.matches("\n%s+%d+\t%-%-%- cell 2 %(code%) %[1%]\n%s+%d+\tprint%('hi'%)\n", r.content)
      assert.matches("\t>>> stdout:\n%s+%d+\thi\n", r.content)
      assert.matches("\t>>> PNG image 3×2 %(attached, image 1%)", r.content)
      assert.matches("\tZeroDivisionError: division by zero", r.content)
      assert.same({ { mime_type = "image/png", data = base64_of(dir .. "/3x2.png") } }, r.images)
      r = t.read_file.execute { path = "nb.ipynb", offset = 2, limit = 2 }
      assert.matches("^     2\t%-%-%- cell 1 %(markdown%)\n     3\t# Title\n%[showing lines 2%-3 of %d+", r.content)
    end)

    it("a file named .ipynb whose bytes are an image is an image, in read_document and in read_file", function()
      local sb = new()
      local parts = assert(sb:read_document("pic.ipynb"))
      assert.same({ "image", "image/gif", 1000, 17 }, { parts[1].type, parts[1].mime_type, parts[1].width, parts[1].height })
      local r = sb:tools().read_file.execute { path = "pic.ipynb" }
      assert.is_false(r.is_error, r.content)
      assert.equal(("pic.ipynb: a 1000×17 GIF image (%d bytes), attached."):format(#files["pic.ipynb"]), r.content)
    end)

    it("read_file (the tool) returns an image as image content, coreutils' base64 of the file", function()
      if not hostcan.can("images scaled in the document helper for the tool", hostcan.layers()) then return end
      local t = new():tools()
      local r = t.read_file.execute { path = "pic.png" }
      assert.is_false(r.is_error, r.content)
      assert.equal(("pic.png: a 640×480 PNG image (%d bytes), attached."):format(#files["pic.png"]), r.content)
      assert.equal(1, #r.images)
      assert.equal("image/png", r.images[1].mime_type)
      assert.equal(base64_of(dir .. "/640x480.png"), r.images[1].data)
      r = t.read_file.execute { path = "photo.jpg" }
      assert.is_false(r.is_error, r.content)
      assert.matches("3×2 JPEG image", r.content)
      r = t.read_file.execute { path = "bomb.png" }
      assert.is_true(r.is_error)
      assert.matches("cannot be shown: .*100%.0 megapixels", r.content)
      r = t.read_file.execute { path = "big.webp" }
      assert.is_false(r.is_error, r.content)
      assert.matches("^big%.webp: a 1176×1568 PNG image %(%d+ bytes%) %(scaled down from 3000×4000%), attached%.$", r.content)
      assert.equal("image/png", r.images[1].mime_type)
      r = t.read_file.execute { path = "data.bin" }
      assert.is_true(r.is_error)
      assert.matches("binary file %(4 bytes%) of a kind read_file does not show", r.content)
    end)
  end)
end

describe("image results in each provider's format", function()
  local sb = sandbox.virtual { files = { ["a.gif"] = read(dir .. "/3x2.gif") } }
  local r = sb:tools().read_file.execute { path = "a.gif" }
  sb:dispose()
  local data = base64_of(dir .. "/3x2.gif")

  it("MCP: a text block, then an image block", function()
    assert.same({ content = { { type = "text", text = r.content }, { type = "image", data = data, mimeType = "image/gif" } },
                  isError = false }, sandbox.tools.result_mcp(r))
  end)

  it("Anthropic: text and image blocks in the tool_result", function()
    local m = sandbox.tools.result_anthropic("tu_1", r)
    assert.same({ type = "text", text = r.content }, m.content[1])
    assert.same({ type = "image", source = { type = "base64", media_type = "image/gif", data = data } }, m.content[2])
  end)

  it("OpenAI (text only): the text says the image was left out", function()
    assert.matches("%[1 image%(s%) not shown", sandbox.tools.result_openai("c1", r).content)
    assert.matches("%[1 image%(s%) not shown", sandbox.tools.result_openai_responses("c1", r).output)
  end)
end)
