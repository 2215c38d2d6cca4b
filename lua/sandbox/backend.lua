-- What every backend's constructor does: check the options strictly
-- against the backend's schema plus the parts it has (policy, audit and
-- network always, commands and confinement when it runs them), normalise,
-- make the sandbox in C, publish what the parts show, begin the audit. A backend's module
-- (virtual.lua, container.lua) calls define() with its own options.
local core = require "sandbox.core"
local options = require "sandbox.options"
local policy = require "sandbox.policy"
local exec = require "sandbox.exec"
local confine = require "sandbox.confine"
local net = require "sandbox.net"
local audit = require "sandbox.audit"

local M = {}

--- A constructor for backend `kind` (core[kind] in C). spec: options (its
--- own schema), required (keys), commands (true: exec and confinement
--- options too), confine (false: commands are confined elsewhere, by the
--- engine: no confinement options). The constructor returns the sandbox, or
--- nil, msg, code.
function M.define(kind, spec)
  local who = "sandbox." .. kind
  local parts = { policy.options, audit.options, net.options, spec.options }
  local confined = spec.commands and spec.confine ~= false
  if spec.commands then parts[#parts + 1] = exec.options end
  if confined then parts[#parts + 1] = confine.options end
  if confined then parts[#parts + 1] = net.secret_options end -- the proxy adds them: local commands only
  local schema = options.schema((table.unpack or unpack)(parts))
  local make = core[kind]
  return {
    schema = schema,
    new = function(opts)
      local o = options.check(who, opts, schema, spec.required)
      o = net.normalize(who, o)
      if spec.commands then o = exec.normalize(o, spec.confine == false) end -- confined elsewhere: an engine
      if confined then o = confine.normalize(o) end
      local sb, msg, code = make(o)
      if not sb then return nil, msg, code end
      net.publish(sb, o)
      net.secrets_check(who, sb, o)
      local ok, amsg, acode = audit.start(sb, kind, o)
      if not ok then
        sb:dispose()
        return nil, amsg, acode
      end
      return sb
    end,
  }
end

return M
