-- sandbox: safe places for agents to work.
--
--   local sandbox = require "sandbox"
--   local vsb = sandbox.virtual { files = { ["README.md"] = "# hi" } }
--
-- The C core (sandbox.core) implements the backends and the methods; this
-- layer checks option tables strictly (each concept's module owns its
-- options) and adds the methods written in Lua. This is the one place where
-- the pieces are wired together: every backend the core offers gets its
-- constructor from its module (sandbox.<kind>).
local core = require "sandbox.core"
local options = require "sandbox.options"
local exec = require "sandbox.exec"
local net = require "sandbox.net"
local tools = require "sandbox.tools"
local json = require "sandbox.json"
local search = require "sandbox.search"
local async = require "sandbox.async"

-- Methods written in Lua join the C ones (one method table, every backend).
local methods = core.methods()
methods.exec = exec.exec
methods.exec_shell = exec.exec_shell
methods.tools = tools.build
methods.http_get = net.http_get
methods.generate_from_template = require("sandbox.template").generate
methods.read_document = require("sandbox.document").read
methods.audit_state = core.audit_state -- {events, lines, buffered, lost, error} or nil
search.attach(methods) -- grep and glob: options checked in Lua
-- a turn of the pump also runs the Lua side's due results (tools' on_done)
methods.poll = async.poll_method(methods.poll)

-- Commands get the network part's proxy variables and exposed ports.
exec.use(net.command)

local M = {
  version = core.version,
  codes = core.codes(),
  tools = tools, -- define, to_openai, to_anthropic, to_mcp, dispatch, result_*
  json = json, -- encode, decode, use (plug another codec), null
  -- set_error_handler(fn | nil): errors raised by exec callbacks go to
  -- fn(err, {callback=, id=, pid=}) instead of the call that ran them
  set_error_handler = core.set_error_handler,
  schemas = {}, -- each backend's option schema (for tools taking the same options)
  --- What this kernel can enforce: {openat2, pidfd, landlock_abi, ...}.
  capabilities = core.capabilities,
  --- Parse a size such as 512, "64KB", "1.5GiB" into bytes (nil, msg if bad).
  parse_size = options.parse_size,
  --- diff(old, new, {path =, context =}): one file's unified diff in git's format.
  diff = function(...) return require("sandbox.diff").diff(...) end, -- loaded when first used
}

-- sandbox.virtual(opts), sandbox.container(opts), ...: see each module.
for _, kind in ipairs(core.backends) do
  local b = require("sandbox." .. kind)
  M[kind] = b.new
  M.schemas[kind] = b.schema
end
M.remote_list = require("sandbox.remote").list -- the engine's sandboxes for a key

return M
