-- The VirtualSandbox (SPEC §2): an in-memory tree. Its options; the
-- constructor (sandbox.virtual) comes from sandbox.backend.
local backend = require "sandbox.backend"
local options = require "sandbox.options"

local M = {}

local type, pairs, next, fmt = type, pairs, next, string.format
local C = options.checkers

local function files(v)
  if type(v) ~= "table" then return nil, "must be a table of path = content" end
  for k, x in pairs(v) do
    if type(k) ~= "string" then return nil, "keys must be path strings" end
    local link = type(x) == "table" and next(x) == "symlink" and next(x, "symlink") == nil
      and type(x.symlink) == "string"
    if type(x) ~= "string" and x ~= true and not link then
      return nil, fmt("['%s'] must be a string (contents), true (a directory) or {symlink = target}", k)
    end
  end
  return v
end

M.options = {
  cwd = { check = C.abspath, default = "/" },
  files = { check = files, type = "table<string, string|true>" },
  max_total_bytes = { check = C.size, default = 64 * 1024 * 1024 },
  max_files = { check = C.count, default = 100000 },
}

local b = backend.define("virtual", { options = M.options })
M.schema, M.new = b.schema, b.new

return M
