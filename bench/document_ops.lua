-- Documents through the confined helper (SPEC §20): what the confinement
-- costs a read, side by side with the same helper started bare and with
-- Poppler's own pdftotext.
--   lua5.4 bench/document_ops.lua read-document <n> <dir>   sb:read_document (a confined helper per read)
--   lua5.4 bench/document_ops.lua helper <n> <dir>          the helper started bare (os.execute)
--   lua5.4 bench/document_ops.lua pdftotext <n> <dir>       pdftotext (poppler-utils) of the same PDF
-- <dir> holds spec/support/office.py's files. Prints "RESULT <impl> <phase> <ops> <seconds> 1"
-- for the phases pdf (paper.pdf, three pages) and docx (report.docx).
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"
local docparse = require "sandbox.docparse"
local clock = require("sandbox.core").clock

local mode, n, dir = arg[1], tonumber(arg[2]), arg[3]
local FILES = { pdf = { "paper.pdf", "pdf 1 0", "pdf" }, docx = { "report.docx", "docx", "docx" } }

for phase, f in pairs(FILES) do
  local t
  if mode == "read-document" then
    local sb = assert(sandbox.container { base_dir = dir, exec = false })
    t = clock()
    for _ = 1, n do assert(sb:read_document(f[1])) end
    t = clock() - t
    sb:dispose()
  elseif mode == "helper" then
    local cmd = ("%s %s < %s/%s > /dev/null"):format(assert(docparse.path(f[3])), f[2], dir, f[1])
    t = clock()
    for _ = 1, n do assert(os.execute(cmd)) end
    t = clock() - t
  elseif mode == "pdftotext" and phase == "pdf" then
    local cmd = ("pdftotext %s/%s - > /dev/null"):format(dir, f[1])
    t = clock()
    for _ = 1, n do assert(os.execute(cmd)) end
    t = clock() - t
  end
  if t then print(("RESULT %s %s %d %.6f 1"):format(mode == "read-document" and "lua-sandbox-read-document" or mode,
    phase, n, t)) end
end
