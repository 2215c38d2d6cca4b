-- What the editor adapters share: the sandbox's tools and a loop to
-- finish them on (sandbox.nvim, attached once per sandbox).
local M = {}

local ALLOWED = { tools = true, approval = true }

--- sandbox module, the tool table, the checked options.
function M.prepare(sb, opts, who)
  local sandbox = require "sandbox"
  opts = opts or {}
  if type(opts) ~= "table" then error(who .. ".tools: options must be a table", 3) end
  for k in pairs(opts) do
    if not ALLOWED[k] then error(("%s.tools: unknown option '%s' (allowed: tools, approval)"):format(who, tostring(k)), 3) end
  end
  local tools = sb:tools(opts.tools)
  if not require("sandbox.async").attached(sb) then require("sandbox.nvim").attach(sb) end
  return sandbox, tools, opts
end

return M
