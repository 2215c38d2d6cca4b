-- The options every backend shares (SPEC §2): size limits, overwrite and
-- read-only modes, rules, extension allowlists. The C core checks
-- them on every operation (base/policy.c); this module owns their schema
-- and defaults.
local options = require "sandbox.options"

local M = {}

local type, pairs, tostring, fmt = type, pairs, tostring, string.format
local C = options.checkers

local function glob_ok(s)
  if s == "" then return nil, "must not be empty" end
  return options.no_nul(s)
end

local function ext_ok(s)
  if s ~= "" and s:sub(1, 1) ~= "." then
    return nil, fmt("must start with '.' (got '%s'; use \"\" for files without extension)", s)
  end
  return options.no_nul(s)
end

-- {a = {...}, b = {...}} with only the allowed keys, each a string list.
local function sub_table(allowed, each)
  local names = {}
  for k in pairs(allowed) do names[#names + 1] = k end
  table.sort(names)
  local list = table.concat(names, ", ")
  return function(v)
    if type(v) ~= "table" then return nil, "must be a table" end
    local out = {}
    for k, x in pairs(v) do
      if not allowed[k] then
        return nil, fmt("has unknown key '%s' (allowed: %s)%s", tostring(k), list,
          type(k) == "string" and options.suggest(k, allowed) or "")
      end
      local l, why = options.string_list(x, k, each)
      if not l then return nil, why end
      out[k] = l
    end
    return out
  end
end

M.options = {
  max_read_bytes = { check = C.size, default = 10 * 1024 * 1024 },
  max_write_bytes = { check = C.size, default = 5 * 1024 * 1024 },
  allow_overwrite = { check = C.boolean, default = true },
  read_only = { check = C.boolean, default = false },
  allow_escaping_links = { check = C.boolean, default = false },
  rules = { check = sub_table({ deny = true, allow = true }, glob_ok), type = "{deny?: string[], allow?: string[]}" },
  extensions = { check = sub_table({ read = true, write = true }, ext_ok), type = "{read?: string[], write?: string[]}" },
}

return M
