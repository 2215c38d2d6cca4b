-- :checkhealth sandbox — the build Neovim loads, its Lua, the JSON codec
-- and what this kernel lets the sandbox enforce.
local M = {}

-- Neovim 0.10 has vim.health.start/ok/warn/error; 0.7-0.9 the health
-- module's report_* functions.
local function reporter()
  local h = vim.health
  if h and h.start then return h.start, h.ok, h.warn, h.error end
  h = require "health"
  return h.report_start, h.report_ok, h.report_warn, h.report_error
end

function M.check()
  local start, ok, warn, err = reporter()
  start("sandbox: the module")
  local loaded, core = pcall(require, "sandbox.core")
  if not loaded then
    err("the C module sandbox.core does not load: " .. tostring(core),
      { "build it for Neovim's LuaJIT: make nvim (in the plugin's directory)" })
    return
  end
  local where = package.searchpath and package.searchpath("sandbox.core", package.cpath)
    or vim.api.nvim_get_runtime_file("lua/sandbox/core.so", false)[1]
  ok(("sandbox %s, the C module from %s"):format(tostring(core.version), tostring(where or "the runtimepath")))
  ok("Lua: " .. (jit and jit.version or _VERSION))
  local sandbox = require "sandbox"
  ok("JSON codec: " .. sandbox.json.codec())

  start("sandbox: what this kernel enforces")
  local caps = sandbox.capabilities()
  local names = {}
  for k in pairs(caps) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do
    local v = caps[k]
    local text = k .. ": " .. (type(v) == "table" and vim.inspect(v, { newline = " ", indent = "" }) or tostring(v))
    if v == false or v == 0 then warn(text) else ok(text) end
  end
end

return M
