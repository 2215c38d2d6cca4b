-- sandbox.diff(old, new, opts): one file's unified diff in git's format
-- (the hunks come from C: csrc/review/diff.c). The review of an overlay
-- builds on it; a host can show an agent's edit with it.
local core = require "sandbox.core"
local options = require "sandbox.options"

local M = {}

local type, error, fmt, byte = type, error, string.format, string.byte
local concat = table.concat

local function context(v)
  if not options.is_integer(v) or v < 0 or v > 100000 then return nil, "must be an integer from 0 to 100000" end
  return v
end

local OPTS = {
  path = { check = options.checkers.string, default = "file" },
  context = { check = context, default = 3 },
}

local ESC = { [7] = "\\a", [8] = "\\b", [9] = "\\t", [10] = "\\n", [11] = "\\v", [12] = "\\f", [13] = "\\r",
              [34] = '\\"', [92] = "\\\\" }

--- A path as git writes it in headers: C-quoted when it holds control
--- bytes, quotes, backslashes or non-ASCII (core.quotePath's default).
function M.quote(p)
  if not p:find('[%c"\\\128-\255]') then return p end
  local out = { '"' }
  for i = 1, #p do
    local c = byte(p, i)
    out[#out + 1] = ESC[c] or ((c < 32 or c >= 127) and fmt("\\%03o", c)) or p:sub(i, i)
  end
  out[#out + 1] = '"'
  return concat(out)
end

local function name(prefix, path) return M.quote(prefix .. path) end

--- old, new: the file's contents, or nil where it does not exist. Returns
--- the diff ("" when nothing changed) and {added, removed, hunks, binary}.
function M.diff(old, new, opts)
  if old ~= nil and type(old) ~= "string" then error("diff: old must be a string or nil", 2) end
  if new ~= nil and type(new) ~= "string" then error("diff: new must be a string or nil", 2) end
  if old == nil and new == nil then error("diff: old and new cannot both be nil", 2) end
  local o = options.check("diff", opts, OPTS)
  local hunks, added, removed, nh, binary = core.diff(old or "", new or "", o.context)
  local st = { added = added, removed = removed, hunks = nh, binary = binary }
  if old ~= nil and new ~= nil and nh == 0 then return "", st end
  local a, b = name("a/", o.path), name("b/", o.path)
  local head = { fmt("diff --git %s %s\n", a, b) }
  if old == nil then head[2] = "new file mode 100644\n" end
  if new == nil then head[2] = "deleted file mode 100644\n" end
  local from, to = old and a or "/dev/null", new and b or "/dev/null"
  local tab = o.path:find(" ", 1, true) and "\t" or "" -- git's mark of a name with a space
  if binary then
    head[#head + 1] = fmt("Binary files %s and %s differ\n", from, to)
  elseif hunks ~= "" then
    head[#head + 1] = fmt("--- %s%s\n+++ %s%s\n", from, old and tab or "", to, new and tab or "")
    head[#head + 1] = hunks
  end
  return concat(head), st
end

return M
