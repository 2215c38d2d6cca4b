-- PDF and Office documents through the sandbox (SPEC §20): files made by
-- real writers (LibreOffice, python-docx, openpyxl, XlsxWriter, pycairo's
-- PDF surface, pptxgenjs), read on every backend by read_document and the read_file
-- tool, the text each holds read back as its writer put it. They are parsed
-- only in the document helper, which runs confined; hostile files (a zip
-- bomb, an endless chain of PDF objects, a package cut short, a parser over
-- its memory cap) are error results within the limits, the host's memory
-- untouched and nothing left running.
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"
local procs = require "support.procs"
local document = require "sandbox.document"
local docparse = require "sandbox.docparse"
local without_layers = require("support.host").without_layers("the parsers run in a confined ContainerSandbox of their own, which fails closed here")
if without_layers then
  describe("documents in their helpers", function() pending(without_layers) end)
  return
end

local PY = "/usr/bin/python3" -- Debian's, with python3-docx, -openpyxl, -xlsxwriter, -cairo (scripts/deps.sh)
local NPM = sh.build:gsub("/build[^/]*$", "/build/npm")

local dir = backends.tmpdir("office")
local made, why = sh.run(("%s spec/support/office.py %s"):format(PY, sh.quote(dir)))
assert(made, "the document writers (python3-docx, -openpyxl, -xlsxwriter, -cairo) failed: " .. tostring(why))
made, why = sh.run(("NODE_PATH=%s/node_modules node spec/support/make_pptx.cjs %s"):format(sh.quote(NPM),
  sh.quote(dir .. "/deck.pptx")))
assert(made, "pptxgenjs (scripts/npm-deps.sh) could not write the deck: " .. tostring(why))
-- LibreOffice's, made once and kept in the build tree (it takes seconds to start)
local LO = sh.build:gsub("/build[^/]*$", "/build/libreoffice")
made, why = sh.run("bash spec/support/libreoffice.sh " .. sh.quote(LO))
assert(made, "LibreOffice (scripts/deps.sh installs libreoffice-*-nogui) could not write the files: " .. tostring(why))
local LO_DIR = why:match("[^\n]+")

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- What each writer was told to write (spec/support/office.py, make_pptx.cjs).
local REPORT = {
  { type = "paragraph", text = "Quarterly report", style = "Heading1" },
  { type = "paragraph", text = 'Revenue rose, said "the team" – ünïcode too.' },
  { type = "table", rows = { { "region", "total" }, { "north", "two\nlines" } } },
  { type = "paragraph", text = "After the table." },
}
local DECK = {
  { type = "slide", index = 1, title = "Roadmap 2027", text = "First point\nSecond point", notes = "Say hello first." },
  { type = "slide", index = 2, title = "", text = "Only body text, ünïcode\ncell A\ncell B", notes = "" },
}
local INLINE = {
  { type = "sheet", index = 1, name = "Data", truncated = false,
    rows = { { row = 1, cells = { "name", "n" } }, { row = 2, cells = { "x", "42" } }, { row = 3, cells = { "", "", "", "TRUE" } } } },
  { type = "sheet", index = 2, name = "Second", truncated = false, rows = { { row = 1, cells = { "hello" } } } },
}
local SHARED = {
  { type = "sheet", index = 1, name = "Shared", truncated = false,
    rows = { { row = 1, cells = { "alpha", "beta" } }, { row = 2, cells = { "alpha", "", "3.5" } },
             { row = 3, cells = { "FALSE", "7" } } } }, -- a formula: its cached value
}
-- LibreOffice's, from the flat ODF and CSV sources in spec/support/libreoffice.sh
-- (its deck's frames are text boxes, not title placeholders: no title)
local LO_NOTES = {
  { type = "paragraph", text = "Design notes", style = "Heading1" },
  { type = "paragraph", text = "LibreOffice wrote this, ünïcode included.", style = "Normal" },
  { type = "table", rows = { { "key", "value" }, { "a", "1" } } },
  { type = "paragraph", text = "The end.", style = "Normal" },
}
local LO_TALK = {
  { type = "slide", index = 1, title = "", text = "Launch plan\nShip it\nThen rest", notes = "Speak slowly." },
  { type = "slide", index = 2, title = "", text = "Questions", notes = "" },
}
local LO_COUNTS = {
  { type = "sheet", index = 1, name = "counts", truncated = false,
    rows = { { row = 1, cells = { "name", "count" } }, { row = 2, cells = { "alpha", "3" } },
             { row = 3, cells = { "beta", "4.5" } } } },
}
local function page(n, text) return { type = "page", page = n, pages = 3, text = text } end

for _, be in ipairs(backends.list) do
  describe(be.name .. ": PDF and Office documents", function()
    local files = {}
    for _, f in ipairs { "report.docx", "deck.pptx", "inline.xlsx", "shared.xlsx", "long.xlsx", "rows.xlsx", "paper.pdf" } do
      files[f] = read(dir .. "/" .. f)
    end
    for _, f in ipairs { "notes.docx", "talk.pptx", "counts.xlsx" } do files["lo-" .. f] = read(LO_DIR .. "/" .. f) end
    files["notes.txt"] = "a text file that mentions %PDF-1.7 is text\n"
    local new = backends.fresh(be, files, after_each)

    it("read_document: paragraphs and tables, slides with their notes, sheets' rows, as their writers wrote them", function()
      local sb = new()
      assert.same(REPORT, assert(sb:read_document("report.docx")))
      assert.same(DECK, assert(sb:read_document("deck.pptx")))
      assert.same(INLINE, assert(sb:read_document("inline.xlsx")))
      assert.same(SHARED, assert(sb:read_document("shared.xlsx")))
      assert.same(LO_NOTES, assert(sb:read_document("lo-notes.docx")))
      assert.same(LO_TALK, assert(sb:read_document("lo-talk.pptx")))
      assert.same(LO_COUNTS, assert(sb:read_document("lo-counts.xlsx")))
      assert.same({ { type = "text", text = files["notes.txt"] } }, assert(sb:read_document("notes.txt")))
    end)

    it("read_document: a PDF's pages (all, one, a range, to the end) and a page as a PNG image", function()
      local sb = new()
      local all = { page(1, "Page one text"), page(2, ""), page(3, "Third page, ünïcode") }
      assert.same(all, assert(sb:read_document("paper.pdf")))
      assert.same({ all[2] }, assert(sb:read_document("paper.pdf", { pages = 2 })))
      assert.same({ all[1], all[2] }, assert(sb:read_document("paper.pdf", { pages = "1-2" })))
      assert.same({ all[2], all[3] }, assert(sb:read_document("paper.pdf", { pages = " 2 - " })))
      local img = assert(sb:read_document("paper.pdf", { page_image = 3 }))[1]
      -- 300×200 points at two pixels a point
      assert.same({ "image", "image/png", 600, 400, 3 }, { img.type, img.mime_type, img.width, img.height, img.page })
      assert.same({ mime_type = "image/png", format = "PNG", width = 600, height = 400 }, document.image_info(img.data))
      local small = assert(sb:read_document("paper.pdf", { page_image = 1, max_pixels = 300 * 300 }))[1]
      assert.same({ 300, 200 }, { small.width, small.height }, "scaled to fit max_pixels")
    end)

    it("refuses bad page requests and says why", function()
      local sb = new()
      for _, c in ipairs {
        { { pages = "0" }, "EINVAL", "pages must be a page" }, { { pages = "3-2" }, "EINVAL", "ends before it starts" },
        { { pages = "x" }, "EINVAL", "pages must be" }, { { pages = 9 }, "EINVAL", "has 3 pages; pages 9 starts after the last" },
        { { page_image = 4 }, "EINVAL", "page 4 is not in the document %(it has 3%)" },
        { { page_image = 0 }, "EINVAL", "page_image must be a positive integer" },
      } do
        local r, msg, code = sb:read_document("paper.pdf", c[1])
        assert.is_nil(r)
        assert.equal(c[2], code, msg)
        assert.matches(c[3], msg)
      end
    end)

    it("stops a sheet at max_rows (1000 by default) and says it was cut", function()
      local sb = new()
      local s = assert(sb:read_document("long.xlsx"))[1]
      assert.same({ 1000, true, "row 1000" }, { #s.rows, s.truncated, s.rows[1000].cells[1] })
      s = assert(sb:read_document("long.xlsx", { max_rows = 10 }))[1]
      assert.same({ 10, true }, { #s.rows, s.truncated })
      s = assert(sb:read_document("long.xlsx", { max_rows = 5000 }))[1]
      assert.same({ 1500, false }, { #s.rows, s.truncated })
    end)

    it("reads through the read rules and caps first", function()
      assert.equal("EACCES", select(3, new { rules = { deny = { "*.pdf" } } }:read_document("paper.pdf")))
      assert.equal("EACCES", select(3, new { extensions = { read = { ".txt" } } }:read_document("report.docx")))
      assert.equal("EFBIG", select(3, new { max_read_bytes = 1000 }:read_document("deck.pptx")))
    end)

    it("numbers a sheet's row that has no number a sheet can have (2^64 - 1, -1, 0, 1048577, 1x) as the row after the last", function()
      local sb = new()
      local rows = {}
      for i, r in ipairs(assert(sb:read_document("rows.xlsx"))[1].rows) do rows[i] = { r.row, r.cells[1] } end
      assert.same({ { 1, "r1" }, { 2, "r2" }, { 3, "r3" }, { 4, "r4" }, { 5, "r5" }, { 6, "r6" } }, rows)
      local r = sb:tools().read_file.execute { path = "rows.xlsx" }
      assert.is_false(r.is_error, r.content)
      assert.matches("\t2: r2\n", r.content)
    end)

    it("read_file (the tool) shows each document as numbered text, PDF pages on request, a page as an image", function()
      local t = new():tools()
      local r = t.read_file.execute { path = "report.docx" }
      assert.is_false(r.is_error, r.content)
      assert.matches("^     1\t%[report%.docx: a Word document, its text shown; the file itself is binary%]\n" ..
        "     2\t# Quarterly report\n     3\tRevenue rose", r.content)
      assert.matches("\t%[table%]\n%s+%d+\t| region | total |\n%s+%d+\t| north | two lines |\n", r.content)
      r = t.read_file.execute { path = "deck.pptx" }
      assert.matches("\t%-%-%- slide 1: Roadmap 2027\n%s+%d+\tFirst point\n%s+%d+\tSecond point\n%s+%d+\t%[notes%] Say hello first%.",
        r.content)
      r = t.read_file.execute { path = "shared.xlsx" }
      assert.matches("\t%-%-%- sheet 1: Shared\n%s+%d+\t1: alpha | beta\n%s+%d+\t2: alpha |  | 3%.5\n", r.content)
      r = t.read_file.execute { path = "long.xlsx", offset = 1, limit = 2 }
      assert.matches("sheet 1: Sheet %(more rows than shown: the first ones%)", r.content)
      r = t.read_file.execute { path = "paper.pdf", pages = "2-3" }
      assert.matches("^     1\t%[paper%.pdf: a PDF of 3 pages", r.content)
      assert.matches("\t%-%-%- page 2 of 3\n%s+%d+\t%[no text on this page: a scan or a picture%? ask for it with page_image%]",
        r.content)
      assert.matches("\t%-%-%- page 3 of 3\n%s+%d+\tThird page, ünïcode", r.content)
      assert.is_nil(r.content:find("Page one", 1, true))
      r = t.read_file.execute { path = "paper.pdf", page_image = 1 }
      assert.is_false(r.is_error, r.content)
      assert.matches("^paper%.pdf: page 1 of a PDF, as 600×400 PNG image", r.content)
      assert.equal("image/png", r.images[1].mime_type)
      r = t.read_file.execute { path = "report.docx", pages = "1" }
      assert.is_true(r.is_error)
      assert.matches("not a PDF: pages and page_image are for PDFs", r.content)
    end)
  end)
end

describe("the document helper", function()
  local files = {}
  for _, f in ipairs { "bomb.docx", "chain.pdf", "cut.docx", "paper.pdf", "report.docx" } do files[f] = read(dir .. "/" .. f) end
  local sb
  before_each(function() sb = assert(sandbox.virtual { files = files, max_read_bytes = 64 * 1024 * 1024 }) end)
  after_each(function() sb:dispose() end)

  local function kib_peak() return tonumber(read("/proc/self/status"):match("VmHWM:%s*(%d+)")) end

  it("stops a zip bomb (1 GiB of XML in 1 MB) at the inflation cap: EFBIG within seconds, the host's memory untouched", function()
    local peak, t0 = kib_peak(), os.time()
    local r, msg, code = sb:read_document("bomb.docx")
    assert.is_nil(r)
    assert.equal("EFBIG", code)
    assert.matches("inflates past 268435456 bytes %(at word/document%.xml%): a zip bomb", msg)
    assert.is_true(os.time() - t0 < 20)
    assert.is_true(kib_peak() - peak < 32 * 1024, "the host process grew by " .. (kib_peak() - peak) .. " KiB")
    assert.same({}, procs.descendants(sh.pid()), "a process of the helper is left")
  end)

  it("ends a PDF whose objects are an endless chain of references, and a package cut short, with EINVAL", function()
    local r, msg, code = sb:read_document("chain.pdf")
    assert.is_nil(r)
    assert.equal("EINVAL", code, msg)
    r, msg, code = sb:read_document("cut.docx")
    assert.is_nil(r)
    assert.equal("EINVAL", code)
    assert.matches("cut%.docx: not an Office file: its ZIP package does not open", msg)
    assert.same({}, procs.descendants(sh.pid()))
  end)

  it("makes a parser over its memory cap an error result, and the next parse works", function()
    local saved = docparse.LIMITS.memory
    docparse.LIMITS.memory = 30 * 1024 * 1024 -- a page at 2 pixels a point needs more (Poppler, cairo)
    local ok, r, msg, code = pcall(sb.read_document, sb, "paper.pdf", { page_image = 1 })
    docparse.LIMITS.memory = saved
    assert.is_true(ok, r)
    assert.is_nil(r)
    assert.is_truthy(code == "EINVAL" or code == "ENOMEM", msg)
    assert.matches("paper%.pdf: ", msg)
    assert.same({}, procs.descendants(sh.pid()))
    assert.same(REPORT, assert(sb:read_document("report.docx")))
  end)

  it("runs whatever helper it is given confined: no file written outside, no host file read, no network", function()
    local fake = backends.tmpdir("fake-helper")
    local outside = ("/tmp/sb-docparse-escape-%s"):format(procs.marker())
    local script = table.concat({
      "#!/bin/sh",
      "cat > /dev/null",
      "seen=",
      "touch " .. outside .. " 2>/dev/null && seen=\"$seen wrote-tmp\"", -- a private /tmp: not the host's
      "touch ./left-behind 2>/dev/null && seen=\"$seen wrote-dir\"",
      "cat /etc/shadow > /dev/null 2>&1 && seen=\"$seen read-shadow\"",
      "ls /root /home > /dev/null 2>&1 && seen=\"$seen listed-home\"",
      "/usr/bin/python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)' 2>/dev/null && seen=\"$seen network\"",
      "printf '{\"parts\":[],\"seen\":\"%s\"}' \"$seen\"",
    }, "\n") .. "\n"
    local f = assert(io.open(fake .. "/sandbox-docparse", "wb"))
    f:write(script)
    f:close()
    assert(sh.run("chmod 755 " .. sh.quote(fake .. "/sandbox-docparse")))
    docparse.helper = fake .. "/sandbox-docparse"
    local out, msg = docparse.json({ "docx" }, "bytes", "x.docx")
    docparse.helper = nil
    assert.is_table(out, msg)
    for _, what in ipairs { "wrote-dir", "read-shadow", "listed-home", "network" } do
      assert.is_nil(out.seen:find(what, 1, true), what)
    end
    assert.is_nil(io.open(outside), "the helper wrote a host file")
    assert.is_nil(io.open(fake .. "/left-behind"), "the helper wrote in its own directory")
  end)

  it("holds no pump turn while a slow document is parsed (read_file dispatched with on_done)", function()
    local fake = backends.tmpdir("slow-helper")
    local f = assert(io.open(fake .. "/sandbox-docparse", "wb"))
    f:write("#!/bin/sh\ncat > /dev/null\nsleep 1\nprintf '{\"pages\":1,\"parts\":[{\"type\":\"page\",\"page\":1,\"text\":\"late\"}]}'\n")
    f:close()
    assert(sh.run("chmod 755 " .. sh.quote(fake .. "/sandbox-docparse")))
    docparse.helper = fake .. "/sandbox-docparse"
    local clock = require("sandbox.core").clock
    local got, longest, t0 = nil, 0, clock()
    local ok, err = pcall(function()
      sandbox.tools.dispatch(sb:tools(), { name = "read_file", arguments = { path = "paper.pdf" } },
        { on_done = function(r) got = r end })
      assert.is_nil(got, "answered before dispatch returned")
      while not got and clock() - t0 < 20 do
        local a = clock()
        sb:poll(0.01)
        longest = math.max(longest, clock() - a)
      end
    end)
    docparse.helper = nil
    assert(ok, err)
    print(("\n  read_file of a PDF whose parse takes 1 s: answered after %.2f s, the longest pump turn %.1f ms")
      :format(clock() - t0, longest * 1000))
    assert.is_false(got.is_error, got.content)
    assert.matches("page 1 of 1\n%s+%d+\tlate", got.content)
    assert.is_true(clock() - t0 >= 1)
    assert.is_true(longest < 0.5, "a pump turn took " .. longest .. " s")
    assert.same({}, procs.descendants(sh.pid()))
  end)

  it("says how to get the helper when it is not there (ENOTSUP), reading nothing", function()
    docparse.helper = "/nonexistent/sandbox-docparse"
    local r, msg, code = sb:read_document("paper.pdf")
    docparse.helper = nil
    assert.is_nil(r)
    assert.equal("ENOTSUP", code)
    assert.matches("document helpers %(sandbox%-docparse, sandbox%-docrender%) are not built", msg)
  end)
end)
