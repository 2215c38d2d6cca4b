-- sandbox: safe places for Lua agents to work.
--
--   local sandbox = require "sandbox"
--   local vsb = sandbox.virtual { files = { ["README.md"] = "# hi" } }
--
-- The C core (sandbox.core) implements both backends and every method; this
-- layer checks option tables strictly and adds what is better written in Lua.
local core = require "sandbox.core"
local options = require "sandbox.options"
local exec = require "sandbox.exec"
local net = require "sandbox.net"
local tools = require "sandbox.tools"
local json = require "sandbox.json"

-- Methods written in Lua join the C ones (one method table, every backend).
local methods = core.methods()
methods.exec = exec.exec
methods.exec_shell = exec.exec_shell
methods.tools = tools.build
methods.http_get = net.http_get
methods.host_allowed = core.host_allowed

local M = {
  version = core.version,
  codes = core.codes(),
  tools = tools, -- define, to_openai, to_anthropic, to_mcp, dispatch, result_*
  json = json, -- encode, decode, use (plug another codec), null
  -- set_error_handler(fn | nil): errors raised by exec callbacks go to
  -- fn(err, {callback=, id=, pid=}) instead of the call that ran them
  set_error_handler = core.set_error_handler,
}

--- A VirtualSandbox: an in-memory file tree, no host access at all.
function M.virtual(opts)
  local o = options.check("sandbox.virtual", opts, options.virtual)
  net.check_sandbox("sandbox.virtual", o)
  local sb, msg, code = core.virtual(o)
  if not sb then return nil, msg, code end
  net.attach(sb, o)
  return sb
end

--- A ContainerSandbox: a real directory, every operation bound to its root
--- fd. Returns nil, msg, code when the root cannot be opened.
function M.container(opts)
  local o = options.check("sandbox.container", opts, options.container)
  net.check_sandbox("sandbox.container", o)
  local sb, msg, code = core.container(o)
  if not sb then return nil, msg, code end
  if sb.has_exec then exec.attach(sb, o) end
  net.attach(sb, o)
  return sb
end

--- What this kernel can enforce: {openat2, pidfd, landlock_abi, ...}.
M.capabilities = core.capabilities

--- Parse a size such as 512, "64KB", "1.5GiB" into bytes (nil, msg if bad).
M.parse_size = options.parse_size

return M
