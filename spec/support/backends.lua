-- The backends a shared behaviour spec runs against. Each entry makes a
-- fresh sandbox from (opts, files); `files` is an initial tree
-- {["a/b.txt"] = "content", ["dir/"] = true}.
local sandbox = require "sandbox"

local M = {}

M.list = {
  {
    name = "virtual",
    new = function(opts, files)
      opts = opts or {}
      opts.files = files
      return sandbox.virtual(opts)
    end,
  },
}

--- Register another backend (the container specs add theirs).
function M.add(entry) M.list[#M.list + 1] = entry end

return M
