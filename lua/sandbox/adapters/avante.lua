-- avante.nvim tools from a sandbox: every tool of sb:tools() in avante's
-- flat form, finishing through on_complete so the editor goes on while a
-- command runs.
--
--   require("avante").setup { custom_tools = require("sandbox.adapters.avante").tools(sb) }
--
-- Shapes followed (yetone/avante.nvim at a933431, 2026-08-22):
-- lua/avante/types.lua (AvanteLLMTool: name, description, param = {type =
-- "table", fields}, returns, func(input, opts); AvanteLLMToolParamField:
-- name, description, type, optional, choices, items, fields),
-- llm_tools/init.lua process_tool_use (func returning nil, nil finishes
-- later through opts.on_complete(result, err); opts.on_log(text)) and
-- utils/init.lua llm_tool_param_fields_to_json_schema (fields back to a
-- schema). The older func(params, on_log, on_complete) form is accepted too.
local common = require "sandbox.adapters.common"

local M = {}

-- A JSON schema property as avante's field.
local function field(name, p, required)
  local f = { name = name, description = p.description, type = p.type, optional = not required or nil }
  if p.enum then f.choices = p.enum end
  if p.type == "array" and type(p.items) == "table" then f.items = field("items", p.items, true) end
  if p.type == "object" and type(p.properties) == "table" then f.fields = M.fields(p) end
  return f
end

--- A JSON schema object's properties as avante's fields, by name.
function M.fields(schema)
  local req = {}
  for _, n in ipairs(schema.required or {}) do req[n] = true end
  local names = {}
  for n in pairs(schema.properties or {}) do names[#names + 1] = n end
  table.sort(names)
  local out = {}
  for i, n in ipairs(names) do out[i] = field(n, schema.properties[n], req[n]) end
  return out
end

--- tools(sb [, {tools = sb:tools options}]): an array for avante's
--- custom_tools.
function M.tools(sb, opts)
  local sandbox, tools = common.prepare(sb, opts, "avante")
  local out = {}
  for i, t in ipairs(tools) do
    out[i] = {
      name = t.name,
      description = t.description,
      param = { type = "table", fields = M.fields(t.parameters) },
      returns = {
        { name = "result", description = "What the tool did or found, as text", type = "string" },
        { name = "error", description = "Why the tool failed", type = "string", optional = true },
      },
      func = function(input, o, old_on_complete)
        local on_log, on_complete
        if type(o) == "table" then on_log, on_complete = o.on_log, o.on_complete else on_log, on_complete = o, old_on_complete end
        local call = { name = t.name, arguments = input or {} }
        if not on_complete then -- a caller that cannot wait: the blocking form
          local r = sandbox.tools.dispatch(tools, call)
          if r.is_error then return nil, r.content end
          return r.content, nil
        end
        if on_log then on_log(("running %s in the sandbox"):format(t.name)) end
        sandbox.tools.dispatch(tools, call, {
          on_done = function(r)
            if r.is_error then on_complete(nil, r.content) else on_complete(r.content, nil) end
          end,
        })
        return nil, nil -- avante: the result comes through on_complete
      end,
    }
  end
  return out
end

return M
