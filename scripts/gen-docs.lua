-- Writes what is generated from the option schemas the constructors check
-- (sandbox.schemas): the LuaCATS type file (types/sandbox.lua, for
-- lua-language-server and lazydev.nvim; each option's type from its
-- checker, or from the schema entry's own `type` where the checker is the
-- option's own) and docs/API.md's option tables (names and defaults from
-- the schemas, the prose from docs/options.lua). The methods are declared
-- below, once; this script checks each exists on a real sandbox, and that
-- every method docs/API.md's table names is declared.
--   lua5.4 scripts/gen-docs.lua [types-out [api-out]]   (make docs; make docs-check diffs)
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"
local options = require "sandbox.options"

local C = options.checkers
local BY_CHECKER = {
  [C.boolean] = "boolean", [C.string] = "string", [C.func] = "function", [C.size] = "integer|string",
  [C.count] = "integer", [C.positive] = "integer", [C.seconds] = "number", [C.abspath] = "string",
  [C.dir] = "string",
}

local function type_of(key, entry)
  if entry.type then return entry.type end
  if BY_CHECKER[entry.check] then return BY_CHECKER[entry.check] end
  local choices = options.choices[entry.check]
  if choices then
    local q = {}
    for i, v in ipairs(choices) do q[i] = ("%q"):format(v) end
    return table.concat(q, "|")
  end
  error(("option '%s': no type for its checker; give the schema entry a `type`"):format(key), 0)
end

local function default_of(v)
  if v == nil then return nil end
  if type(v) == "string" then return ("%q"):format(v) end
  if type(v) == "table" then return next(v) == nil and "{}" or nil end
  return tostring(v)
end

local CLASSES = {
  { "virtual", "sandbox.VirtualOptions", "sandbox.virtual{}: an in-memory tree" },
  { "container", "sandbox.ContainerOptions", "sandbox.container{}: a real directory, every operation beneath its fd" },
  { "overlay", "sandbox.OverlayOptions", "sandbox.overlay{}: copy-on-write over base_dir" },
  { "remote", "sandbox.RemoteOptions", "sandbox.remote{}: a sandbox on an engine that speaks E2B's API" },
}

-- name, parameters (LuaCATS), returns, one line
local METHODS = {
  { "read_file", "path: string", "string?, string?, string?", "The file's content, or nil, msg, code." },
  { "write_file", "path: string, content: string, opts?: {overwrite?: boolean, parents?: boolean}", "true?, string?, string?", "Write atomically; never through a final link." },
  { "read_document", "path: string, opts?: {max_image_bytes?: integer, max_pixels?: integer, max_side?: integer, pages?: string|integer, page_image?: integer, max_rows?: integer}", "table[]?, string?, string?", "The file's parts by its content: an image, PDF pages, Word paragraphs and tables, slides, sheets, notebook cells, or text." },
  { "generate_from_template", "path: string, opts: {template?: string, template_file?: string, variables?: table<string, string|number|boolean>, overwrite?: boolean}", "true?, string?, string?", "Render {{name}} tags in memory and write the result through write_file." },
  { "readdir", "path: string", "{name: string, type: string, is_directory: boolean, size: integer}[]?, string?, string?", "Entries sorted by name." },
  { "exists", "path: string", "boolean?, string?, string?", "Whether path exists (false for denied paths)." },
  { "stat", "path: string, opts?: {follow?: boolean}", "{type: string, size: integer, mtime: number, mode: integer}?, string?, string?", "A path's type, size, mtime and mode." },
  { "mkdir", "path: string, opts?: {parents?: boolean}", "true?, string?, string?", "Make a directory." },
  { "remove", "path: string, opts?: {recursive?: boolean}", "true?, string?, string?", "Remove a file, link or directory." },
  { "rename", "from: string, to: string, opts?: {overwrite?: boolean}", "true?, string?, string?", "Move or rename." },
  { "symlink", "target: string, path: string", "true?, string?, string?", "Make a link; one that would lead out is EESCAPE." },
  { "readlink", "path: string", "string?, string?, string?", "A link's text." },
  { "realpath", "path: string", "string?, string?, string?", "The clean root-relative path path really names." },
  { "glob", "pattern: string, opts?: {max_results?: integer, sort?: \"path\"|\"mtime\", hidden?: boolean, ignored?: boolean}", "string[]?, string?, string?", "Paths matching pattern, as ripgrep lists them." },
  { "grep", "pattern: string, opts?: table", "table?, string?, string?", "Matches as ripgrep finds them (see the README's Search)." },
  { "snapshot", "opts?: {max_bytes?: integer, directories?: boolean}", "table<string, string|true>?, string?, string?", "Every visible file's content." },
  { "exec", "cmd: string, args?: string[], opts?: table", "table?, string?, string?", "Run a command: its result, or a background handle." },
  { "exec_shell", "script: string, opts?: table", "table?, string?, string?", "Run /bin/sh -c script (allow_shell)." },
  { "processes", "", "table[]", "Live background handles, oldest first." },
  { "poll", "timeout?: number", "integer", "Pump I/O, timers and callbacks; the number of live processes." },
  { "backend_fd", "", "integer?, string?, string?", "An fd that turns readable when commands have news." },
  { "backend_timeout", "", "integer", "Milliseconds until a command's timer needs a poll (-1: none)." },
  { "http_get", "url: string, opts?: {timeout?: number, max_bytes?: integer, max_redirects?: integer}", "table?, string?, string?", "GET through the allowlist." },
  { "host_allowed", "host: string, port?: integer", "boolean, string?", "Whether the allowlist admits host." },
  { "audit_state", "", "{events: integer, lines: integer, buffered: integer, lost: integer, error: string?}?", "The audit trail's state (nil without audit)." },
  { "tools", "opts?: table", "table", "Tool tables for agents (see sandbox.tools)." },
  { "dispose", "", "nil", "Close the sandbox (idempotent)." },
  { "close", "", "nil", "The same as dispose." },
}

local out = {}
local function w(s) out[#out + 1] = s end
w("---@meta")
w("-- Generated by scripts/gen-docs.lua from the option schemas (make docs); do not edit.")
w("-- Point lua-language-server (workspace.library) or lazydev.nvim at this directory.")
w("")
for _, c in ipairs(CLASSES) do
  local schema = assert(sandbox.schemas[c[1]], c[1])
  local keys = {}
  for k in pairs(schema) do keys[#keys + 1] = k end
  table.sort(keys)
  w("---" .. c[3])
  w("---@class " .. c[2])
  for _, k in ipairs(keys) do
    local d = default_of(schema[k].default)
    local required = k == "base_dir" and (c[1] == "container" or c[1] == "overlay")
    w(("---@field %s%s %s%s"):format(k, required and "" or "?", type_of(k, schema[k]), d and (" default: " .. d) or ""))
  end
  w("")
end

-- the methods exist on the sandboxes that have them
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local probes = { sandbox.virtual {}, assert(sandbox.container { base_dir = dir, exec = false }) }
for _, m in ipairs(METHODS) do
  local found = false
  for _, sb in ipairs(probes) do found = found or type(sb[m[1]]) == "function" end
  assert(found, "declared method " .. m[1] .. " is no method of a sandbox")
end
for _, sb in ipairs(probes) do sb:dispose() end
os.execute("rmdir " .. dir)
-- and every method the reference's table names is declared
local declared = {}
for _, m in ipairs(METHODS) do declared[m[1]] = true end
local f = assert(io.open("docs/API.md"))
local api = f:read("*a")
f:close()
local section = assert(api:match("\n## Sandbox methods.-\n(.-)\n## "), "docs/API.md has no methods table")
local listed = 0
for name in section:gmatch("\n| `([%w_]+)%(") do
  listed = listed + 1
  assert(declared[name], "docs/API.md's method " .. name .. " is not declared in scripts/gen-docs.lua")
end
assert(listed > 20, "methods listed in docs/API.md: " .. listed)

-- docs/API.md's option tables: each table's rows from docs/options.lua,
-- each default the schema gives written from the schema; every option of
-- every constructor in one of its tables
local PROSE = dofile("docs/options.lua")
local TABLE_SCHEMA = { shared = "virtual", virtual = "virtual", container = "container", overlay = "overlay", remote = "remote" }
local TABLES_OF = { virtual = { "shared", "virtual" }, container = { "shared", "container" },
                    overlay = { "shared", "container", "overlay" }, remote = { "shared", "remote" } }

local function grouped(n)
  local s = tostring(n)
  if n < 10000 then return s end
  return (s:reverse():gsub("(%d%d%d)", "%1 "):reverse():gsub("^ ", ""))
end

local function default_text(entry)
  local v = entry.default
  if v == nil then return "none" end
  if type(v) == "boolean" or type(v) == "string" then return ("`%s`"):format(type(v) == "string" and ("%q"):format(v) or tostring(v)) end
  if type(v) == "table" then return "`{}`" end
  if entry.check == C.size then
    for _, u in ipairs { { 1 << 30, "GiB" }, { 1 << 20, "MiB" }, { 1 << 10, "KiB" } } do
      if v % u[1] == 0 then return ("%d %s"):format(v // u[1], u[2]) end
    end
  end
  return grouped(v)
end

local rows_of = {}
for id, rows in pairs(PROSE) do
  local schema = assert(sandbox.schemas[TABLE_SCHEMA[id]], id)
  local lines = { "| option | default | meaning |", "|---|---|---|" }
  for _, row in ipairs(rows) do
    local names = {}
    for i, n in ipairs(row.names) do
      assert(schema[n] or id == "shared", ("docs/options.lua: %s in the %s table is no option of sandbox.%s"):format(n, id, TABLE_SCHEMA[id]))
      names[i] = "`" .. n .. "`"
    end
    local default = row.default or default_text(assert(schema[row.names[1]], row.names[1]))
    lines[#lines + 1] = ("| %s | %s | %s |"):format(table.concat(names, ", "), default, row.meaning)
  end
  rows_of[id] = table.concat(lines, "\n")
end
for be, ids in pairs(TABLES_OF) do
  local seen = {}
  for _, id in ipairs(ids) do
    for _, row in ipairs(PROSE[id]) do for _, n in ipairs(row.names) do seen[n] = true end end
  end
  for k in pairs(sandbox.schemas[be]) do
    assert(seen[k], ("option %s of sandbox.%s is in none of its tables in docs/options.lua"):format(k, be))
  end
end
local api_out = api:gsub("(<!%-%- options: (%w+) [^\n]*%-%->\n)(.-)(\n<!%-%- /options %-%->)", function(open, id, _, close)
  return open .. assert(rows_of[id], "no table " .. id) .. close
end)

w("---A sandbox: the same methods on every backend (nil, msg, code on failure).")
w("---@class sandbox.Sandbox")
w("---@field kind \"virtual\"|\"container\"|\"overlay\"|\"remote\"")
w("---@field confinement table? what is enforced for commands, one field per layer")
w("---@field limits {max_read_bytes: integer, max_write_bytes: integer} a copy of the size caps")
w("local Sandbox = {}")
w("")
-- A parameter list's entries: split at the commas outside braces and
-- brackets (a table type's fields stay with their parameter).
local function params(s)
  local out, depth, from = {}, 0, 1
  for i = 1, #s + 1 do
    local c = s:sub(i, i)
    if c == "{" or c == "[" or c == "(" then depth = depth + 1
    elseif c == "}" or c == "]" or c == ")" then depth = depth - 1
    elseif (c == "," and depth == 0) or c == "" then
      local p = s:sub(from, i - 1):match("^%s*(.-)%s*$")
      if p ~= "" then out[#out + 1] = p end
      from = i + 1
    end
  end
  return out
end

for _, m in ipairs(METHODS) do
  w("---" .. m[4])
  for _, p in ipairs(params(m[2])) do
    local name, t = p:match("^([%w_?]+):%s*(.+)$")
    if name then w(("---@param %s %s"):format(name, t)) end
  end
  w("---@return " .. m[3])
  local args = {}
  for _, p in ipairs(params(m[2])) do
    local name = p:match("^([%w_]+)%??:")
    if name then args[#args + 1] = name end
  end
  w(("function Sandbox:%s(%s) end"):format(m[1], table.concat(args, ", ")))
  w("")
end

w("---@class sandboxmod")
w("---@field version string")
w("---@field codes string[]")
w("---@field tools table")
w("---@field json table")
w("local M = {}")
w("")
for _, c in ipairs(CLASSES) do
  w(("---@param opts %s"):format(c[2]))
  w("---@return sandbox.Sandbox?, string?, string?")
  w(("function M.%s(opts) end"):format(c[1]))
  w("")
end
w("---What this kernel can enforce.")
w("---@return table")
w("function M.capabilities() end")
w("")
w("---Bytes from 512, \"64KB\", \"1.5GiB\".")
w("---@param v integer|string")
w("---@return integer?, string?")
w("function M.parse_size(v) end")
w("")
w("---One file's unified diff in git's format, and its counts.")
w("---@param old string?")
w("---@param new string?")
w("---@param opts? {path?: string, context?: integer}")
w("---@return string, {added: integer, removed: integer, hunks: integer, binary: boolean}")
w("function M.diff(old, new, opts) end")
w("")
w("return M")

local function write(path, text)
  local o = assert(io.open(path, "w"))
  o:write(text)
  o:close()
end
write(arg[1] or "types/sandbox.lua", table.concat(out, "\n") .. "\n")
write(arg[2] or "docs/API.md", api_out)
