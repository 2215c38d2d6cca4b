-- :SandboxRun and :SandboxTool (see lua/sandbox_nvim.lua).
local S = require "sandbox_nvim"

vim.api.nvim_create_user_command("SandboxRun", function(c)
  local buf = S.run(c.fargs[1], { unpack(c.fargs, 2) })
  vim.api.nvim_set_current_buf(buf)
end, { nargs = "+", desc = "Run a command in the sandbox, output in a buffer" })

vim.api.nvim_create_user_command("SandboxTool", function(c)
  local name, json = c.args:match("^(%S+)%s*(.*)$")
  local args = json ~= "" and vim.fn.json_decode(json) or {}
  print(S.tool(name, args))
end, { nargs = "+", desc = "Call a sandbox agent tool: name {json arguments}" })

vim.api.nvim_create_autocmd("VimLeavePre", { callback = S.close })
