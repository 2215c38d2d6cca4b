-- The Neovim plugin: :SandboxRun, :SandboxTool and :checkhealth sandbox.
-- Install: see docs/HOSTS.md (lazy.nvim: build = "make nvim").
if vim.g.loaded_agent_sandbox then return end
vim.g.loaded_agent_sandbox = true

local function S() return require "sandbox.nvim" end

-- :SandboxRun cmd args...: quoted as in a shell ('a b' is one argument)
vim.api.nvim_create_user_command("SandboxRun", function(c)
  local argv, why = S().split(c.args)
  if not argv or #argv == 0 then
    return vim.notify("SandboxRun: " .. (why or "expects a command"), vim.log.levels.ERROR)
  end
  local ok, buf = pcall(S().run, argv)
  if not ok then return vim.notify("SandboxRun: " .. tostring(buf), vim.log.levels.ERROR) end
  vim.api.nvim_set_current_buf(buf)
end, { nargs = "+", desc = "Run a command in the sandbox, its output in a buffer" })

-- :SandboxTool name {json}: the tool's text, when it is done
vim.api.nvim_create_user_command("SandboxTool", function(c)
  local name, json = c.args:match("^(%S+)%s*(.*)$")
  local ok, args = pcall(function() return json ~= "" and vim.fn.json_decode(json) or {} end)
  if not ok then return vim.notify("SandboxTool: the arguments are not JSON: " .. tostring(args), vim.log.levels.ERROR) end
  local done, err = pcall(S().tool, name, args, function(r)
    vim.notify(r.content, r.is_error and vim.log.levels.ERROR or vim.log.levels.INFO)
  end)
  if not done then vim.notify("SandboxTool: " .. tostring(err), vim.log.levels.ERROR) end
end, { nargs = "+", desc = "Call a sandbox agent tool: name {json arguments}" })

vim.api.nvim_create_autocmd("VimLeavePre", { callback = function() S().close() end })
