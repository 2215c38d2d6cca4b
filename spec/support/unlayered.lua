-- The suite in a build without Linux's layers (make PORTABLE=1: the code of
-- macOS and the BSDs). There commands are refused unless they are asked for
-- unconfined and with the host's network (spec/platform_spec.lua checks that
-- refusal and its message); every other spec's commands are made so, as a
-- user there must make them. Loaded by spec/support/helper.lua, and through
-- LUA_INIT_5_4 (set by `make test PORTABLE=1`) by every Lua host a spec
-- starts. In a build with the layers it changes nothing.
local patched = setmetatable({}, { __mode = "k" })

local function patch(sandbox)
  if patched[sandbox] then return end
  patched[sandbox] = true
  if type(sandbox.capabilities) ~= "function" or sandbox.capabilities().confine_layers then return end
  for _, kind in ipairs { "container", "overlay" } do
    local make = sandbox[kind]
    sandbox[kind] = function(opts, ...)
      if type(opts) == "table" and opts.exec ~= false then
        if opts.confine == nil then opts.confine = false end
        if opts.allow_outbound == nil and opts.allowed_hosts == nil then opts.allow_outbound = true end
      end
      return make(opts, ...)
    end
  end
end

-- busted loads the module again for every spec file: each copy is patched
-- as it is required
local plain_require = require
require = function(name, ...) -- luacheck: ignore 121
  local m = plain_require(name, ...)
  if name == "sandbox" and type(m) == "table" then patch(m) end
  return m
end

return patch
