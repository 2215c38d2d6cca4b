-- The ContainerSandbox (SPEC §2): a real directory bound to its root fd. Its
-- own options (commands, confinement and network have theirs); the
-- constructor (sandbox.container) comes from sandbox.backend.
local backend = require "sandbox.backend"
local options = require "sandbox.options"

local M = {}

local C = options.checkers

local function dirs(v)
  return options.string_list(v, "", function(s)
    if s == "" then return nil, "must not be empty" end
    return options.no_nul(s)
  end)
end

M.options = {
  base_dir = { check = C.dir },
  create = { check = C.boolean, default = false },
  mode = { check = options.one_of("rw", "r", "w"), default = "rw" },
  read_roots = { check = dirs, type = "string[]" },
  max_disk_usage = { check = C.size },
  -- commands can be held to max_disk_usage only where the kernel limits the
  -- bytes they write (the overlay's upper layer); elsewhere they are
  -- refused, unless the user says the limit binds the file tools only
  max_disk_usage_files_only = { check = C.boolean, default = false },
  resolver = { check = options.one_of("auto", "openat2", "fallback"), default = "auto" },
  exec = { check = C.boolean, default = true },
}
local b = backend.define("container", { options = M.options, required = { "base_dir" }, commands = true })
M.schema, M.new = b.schema, b.new

return M
