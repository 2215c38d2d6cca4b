-- generate_from_template (SPEC §20, the seed's filegen): `{{name}}`
-- substituted in memory, the result written through the sandbox's own
-- write (its rules, extensions, caps and the double overwrite gate).
--
-- Syntax: `{{name}}` or `{{ name }}`, a name being letters, digits, `_`,
-- `.` and `-` (not first); `\{{` is a literal `{{`. Values are strings,
-- numbers or booleans, inserted as they are and never scanned again (a
-- value cannot add a tag). Anything else that opens with `{{` is an error
-- naming its line, as is every variable the template uses and the call
-- does not give.
local M = {}

local fmt, concat = string.format, table.concat

local NAME = "^[%a_][%w_.%-]*$"

local function line_of(text, at)
  local n = 1
  for _ in text:sub(1, at - 1):gmatch("\n") do n = n + 1 end
  return n
end

-- The variables as strings, or nil and why.
local function values(vars)
  if vars == nil then return {} end
  if type(vars) ~= "table" then return nil, "variables must be a table of name = value" end
  local out = {}
  for k, v in pairs(vars) do
    if type(k) ~= "string" or not k:match(NAME) then
      return nil, fmt("variable name %s is not a name (letters, digits, _ . -)", fmt("%q", tostring(k)))
    end
    local t = type(v)
    if t == "string" then out[k] = v
    elseif t == "number" or t == "boolean" then out[k] = tostring(v)
    else return nil, fmt("variable '%s' is a %s: give a string, number or boolean", k, t) end
  end
  return out
end

--- render(text, vars [, max_bytes]): the text with every tag replaced, or
--- nil, msg, code (EINVAL: a malformed tag or missing variables, all
--- named; EFBIG: the result would pass max_bytes).
function M.render(text, vars, max_bytes)
  if type(text) ~= "string" then return nil, "template must be a string", "EINVAL" end
  local vals, why = values(vars)
  if not vals then return nil, why, "EINVAL" end
  local out, size, missing, seen = {}, 0, {}, {}
  local function add(s)
    size = size + #s
    if max_bytes and size > max_bytes then return false end
    out[#out + 1] = s
    return true
  end
  local pos = 1
  while true do
    local open = text:find("{{", pos, true)
    if not open then
      add(text:sub(pos))
      break
    end
    if open > 1 and text:sub(open - 1, open - 1) == "\\" then -- \{{: a literal {{
      if not add(text:sub(pos, open - 2) .. "{{") then break end
      pos = open + 2
    else
      local close = text:find("}}", open + 2, true)
      local name = close and text:sub(open + 2, close - 1):match("^%s*(.-)%s*$")
      if not name or not name:match(NAME) then
        return nil, fmt("template line %d: '{{' starts no {{name}} (write \\{{ for a literal '{{')",
          line_of(text, open)), "EINVAL"
      end
      local v = vals[name]
      if v == nil and not seen[name] then missing[#missing + 1] = name end
      seen[name] = true
      if not add(text:sub(pos, open - 1)) or (v and not add(v)) then break end
      pos = close + 2
    end
  end
  if max_bytes and size > max_bytes then
    return nil, fmt("the result would pass %d bytes (max_write_bytes)", max_bytes), "EFBIG"
  end
  if #missing > 0 then
    table.sort(missing)
    return nil, "template variables missing: " .. concat(missing, ", "), "EINVAL"
  end
  return concat(out)
end

--- sb:generate_from_template(path, {template = text | template_file = path,
--- variables = {...}, overwrite = false}): renders and writes path; true,
--- or nil, msg, code. An existing file is replaced only with overwrite =
--- true here and allow_overwrite on the sandbox (both: EEXIST otherwise).
local function bad(why) return nil, "EINVAL: generate_from_template: " .. why, "EINVAL" end

function M.generate(sb, path, opts)
  if type(path) ~= "string" then return bad("path must be a string") end
  if type(opts) ~= "table" then return bad("an options table is needed ({template =, variables =})") end
  for k in pairs(opts) do
    if k ~= "template" and k ~= "template_file" and k ~= "variables" and k ~= "overwrite" then
      return bad(fmt("unknown option '%s' (template, template_file, variables, overwrite)", tostring(k)))
    end
  end
  local text = opts.template
  if (text == nil) == (opts.template_file == nil) then return bad("give exactly one of template and template_file") end
  if opts.template_file ~= nil and type(opts.template_file) ~= "string" then return bad("template_file must be a path") end
  if opts.template_file ~= nil then
    local msg, code
    text, msg, code = sb:read_file(opts.template_file) -- the read's caps and rules apply
    if not text then return nil, msg, code end
  end
  -- built no bigger than the write may be (the write checks it again)
  local cap = sb.limits and sb.limits.max_write_bytes
  local out, msg, code = M.render(text, opts.variables, cap and cap >= 0 and cap or nil)
  if not out then return nil, code .. ": generate_from_template: " .. msg, code end
  local ok
  ok, msg, code = sb:write_file(path, out, { overwrite = opts.overwrite == true })
  if not ok and code == "EEXIST" then
    msg = msg .. (opts.overwrite == true and " (the sandbox does not allow overwriting: allow_overwrite = false)"
      or " (pass overwrite = true to replace it)")
  end
  if not ok then return nil, msg, code end
  return true
end

return M
