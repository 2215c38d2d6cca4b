-- codecompanion.nvim tools from a sandbox: every tool of sb:tools() as a
-- codecompanion function tool whose command finishes through its
-- output_cb, so the chat (and the editor) go on while a command runs.
--
--   require("codecompanion").setup { interactions = { chat = {
--     tools = require("sandbox.adapters.codecompanion").tools(sb) } } }
--
-- Shapes followed (olimorris/codecompanion.nvim at f1afd02, 2026-08-08):
-- doc/extending/tools.md (a tool table inline in the config: name, schema
-- in OpenAI's function form, cmds, output, opts.require_approval_before),
-- interactions/chat/tools/runtime/runner.lua Runner:run_tool (a cmds
-- function returning nil is asynchronous and ends with output_cb({status,
-- data})), orchestrator.lua (output.success(self, stdout, meta) with the
-- outputs as a list, meta.tools.chat:add_tool_output(self, text)).
local common = require "sandbox.adapters.common"

local M = {}

local function text(list)
  if type(list) ~= "table" then return tostring(list or "") end
  local parts = {}
  for i, v in ipairs(list) do parts[i] = tostring(v) end
  return table.concat(parts, "\n")
end

--- tools(sb [, {tools = sb:tools options, approval = true}]): a table
--- {name = tool} for codecompanion's `tools` setting. Destructive tools ask
--- codecompanion's approval first unless approval = false.
function M.tools(sb, opts)
  local sandbox, tools, o = common.prepare(sb, opts, "codecompanion")
  local schemas = sandbox.tools.to_openai(tools)
  local out = {}
  for i, t in ipairs(tools) do
    out[t.name] = {
      name = t.name,
      description = t.description,
      schema = schemas[i],
      opts = { require_approval_before = t.destructive and o.approval ~= false },
      cmds = {
        function(_, args, run)
          sandbox.tools.dispatch(tools, { name = t.name, arguments = args or {} }, {
            on_done = function(r) run.output_cb { status = r.is_error and "error" or "success", data = r.content } end,
          })
          -- nil: the result comes through output_cb
        end,
      },
      output = {
        prompt = function(self) return ("Run %s in the sandbox with %s?"):format(t.name, vim.inspect(self.args or {})) end,
        success = function(self, stdout, meta) meta.tools.chat:add_tool_output(self, text(stdout)) end,
        error = function(self, stderr, meta) meta.tools.chat:add_tool_output(self, "Error: " .. text(stderr)) end,
        rejected = function(self, meta)
          meta.tools.chat:add_tool_output(self, ("The user declined to run %s. Do not retry it unchanged."):format(t.name))
        end,
      },
    }
  end
  return out
end

return M
