-- Tool tables for LLM agents (SPEC §7): sb:tools(opts), custom tools,
-- exporters to the OpenAI (chat and responses), Anthropic and MCP formats,
-- dispatch of a model's call, and each provider's tool-result message.
local S = require "sandbox.tools.schema"
local B = require "sandbox.tools.builtin"
local exec = require "sandbox.exec"
local options = require "sandbox.options"
local json = require "sandbox.json"
local async = require "sandbox.async"
local forked = require "sandbox.forked"
local audit = require "sandbox.audit"

local M = { schema = S }

--- What an approve function returns when it will answer later, through the
--- reply function it gets as its second argument (a dialog in an editor).
M.PENDING = setmetatable({}, { __tostring = function() return "sandbox.tools.PENDING" end })

-- The sandbox a tool table was built for (dispatch pumps through it).
local owner = setmetatable({}, { __mode = "k" })

local type, pairs, ipairs, pcall, error, tostring, fmt = type, pairs, ipairs, pcall, error, tostring, string.format

local NAME = "^[a-zA-Z0-9_-]+$"

local function valid_name(n) return type(n) == "string" and #n >= 1 and #n <= 64 and n:find(NAME) ~= nil end

-- A model sees what failed, never where in our code: drop the
-- "chunk:line:" prefixes Lua puts on error messages.
local function clean_error(msg)
  msg = tostring(msg)
  local prev
  repeat
    prev = msg
    msg = msg:gsub("^%s*[^%s:]+%.lua:%d+:%s*", ""):gsub("^%s*%[string [^%]]*%]:%d+:%s*", "")
  until msg == prev
  return msg
end
M._clean_error = clean_error

--- A custom tool (Halo's ToolContext): {name, description, parameters,
--- read_only, destructive, execute = function(args, sb) ... end}. execute
--- returns a string, {content =, is_error =}, or nil, "error text".
function M.define(def)
  if type(def) ~= "table" then error("tools.define: expects a table", 2) end
  local allowed = { name = true, description = true, parameters = true, read_only = true,
                    destructive = true, execute = true, open_world = true }
  for k in pairs(def) do
    if not allowed[k] then
      error(fmt("tools.define: unknown field '%s'%s", tostring(k),
        type(k) == "string" and options.suggest(k, allowed) or ""), 2)
    end
  end
  if not valid_name(def.name) then error("tools.define: name must match ^[a-zA-Z0-9_-]{1,64}$", 2) end
  if type(def.description) ~= "string" or def.description == "" then
    error("tools.define: description must be a non-empty string", 2)
  end
  if type(def.execute) ~= "function" then error("tools.define: execute must be a function", 2) end
  local params = def.parameters or S.object({})
  local ok, why = pcall(S.check, params, "parameters")
  if not ok then error(fmt("tools.define '%s': %s", def.name, why), 2) end
  params = S.copy(params)
  setmetatable(params, S.OBJECT)
  params.properties = setmetatable(params.properties or {}, S.OBJECT)
  local read_only = def.read_only == true
  return {
    custom = true,
    name = def.name,
    description = def.description,
    parameters = params,
    read_only = read_only,
    destructive = def.destructive == nil and not read_only or def.destructive == true,
    open_world = def.open_world,
    run = function(ctx, args)
      local r, err = def.execute(args, ctx.sb)
      if type(r) == "table" and r.content == nil and not r.is_error then r = nil end
      if type(r) == "table" then
        if r.is_error then return nil, tostring(r.content) end
        return tostring(r.content or "")
      end
      if r == nil then return nil, tostring(err or "the tool failed") end
      return tostring(r)
    end,
  }
end

local function names(v)
  if type(v) ~= "table" then return nil, "must be an array of tool names" end
  for k in pairs(v) do
    if type(k) ~= "number" or k < 1 or k > #v or k % 1 ~= 0 then return nil, "must be an array of tool names" end
  end
  for i, n in ipairs(v) do
    if type(n) ~= "string" then return nil, fmt("[%d] must be a tool name", i) end
  end
  return v
end

local function renames(v)
  if type(v) ~= "table" then return nil, "must be a table {old_name = new_name}" end
  for k, n in pairs(v) do
    if type(k) ~= "string" or not valid_name(n) then
      return nil, fmt("['%s'] must be a name matching ^[a-zA-Z0-9_-]{1,64}$", tostring(k))
    end
  end
  return v
end

local function extra(v)
  if type(v) ~= "table" then return nil, "must be an array of tools made by sandbox.tools.define" end
  for i, t in ipairs(v) do
    if type(t) ~= "table" or not t.custom then return nil, fmt("[%d] is not made by sandbox.tools.define", i) end
  end
  return v
end

local C = options.checkers
local BUILD_OPTS = {
  only = { check = names }, exclude = { check = names, default = {} }, rename = { check = renames, default = {} },
  read_only = { check = C.boolean, default = false }, approve = { check = C.func },
  stale_guard = { check = C.boolean, default = true }, max_output = { check = C.count, default = 20000 },
  extra = { check = extra, default = {} }, on_wait = { check = C.func },
}

-- Every name in only/exclude/rename must be a tool that exists (built in,
-- whether or not this sandbox offers it, or passed in extra): a typo must
-- not silently keep a tool the host meant to remove.
local function check_names(opts)
  local known = {}
  for _, n in ipairs(B.ORDER) do known[n] = true end
  for _, d in ipairs(opts.extra or {}) do known[d.name] = true end
  local function check(n, key)
    if not known[n] then
      error(fmt("tools: option '%s' names an unknown tool '%s'%s", key, n, options.suggest(n, known)), 4)
    end
  end
  for _, n in ipairs(opts.only or {}) do check(n, "only") end
  for _, n in ipairs(opts.exclude or {}) do check(n, "exclude") end
  for n in pairs(opts.rename or {}) do check(n, "rename") end
end

local function set(list)
  local s = {}
  for _, n in ipairs(list or {}) do s[n] = true end
  return s
end

-- The callable tool: checks, approval, error capture around def.run (or
-- def.start, the form that finishes later).
local function make(ctx, def, name, approve)
  local tool = {
    name = name,
    description = def.description,
    parameters = def.parameters,
    read_only = def.read_only == true,
    destructive = def.destructive == true,
    -- reaches beyond the sandbox (MCP's openWorldHint); custom tools: unknown
    open_world = def.custom and def.open_world or (not def.custom and def.needs_net == true),
    sandbox = ctx.sb,
  }
  local function err(text) return { content = text, is_error = true } end
  -- the model's arguments: the checked table, or nil and the error result
  local function checked(args)
    if args == nil then args = {} end
    if type(args) == "string" then
      local v, derr = json.decode(args)
      if v == nil then return nil, err(fmt("The arguments for %s are not valid JSON (%s). Send a JSON object.", name, derr)) end
      args = v
    end
    local clean, verr = S.validate(def.parameters, args)
    if not clean then return nil, err(fmt("Invalid arguments for %s: %s.", name, verr)) end
    return clean
  end
  -- the approval's answer: nil to go on, or the error result
  local function refused(ok, answer)
    if not ok then return err(fmt("%s was not run: the approval check failed (%s).", name, clean_error(answer))) end
    if answer == true then return nil end
    local why = type(answer) == "string" and answer ~= "" and (": " .. answer) or "."
    return err(fmt("The user declined to run %s%s Do not retry it unchanged.", name, why))
  end
  local function result(ok, text, ferr)
    if not ok then return err(fmt("%s failed unexpectedly: %s", name, clean_error(text))) end
    if text == nil then return err(ferr or (name .. " failed.")) end
    if type(text) == "table" then -- a built-in tool's text with images (read_file)
      return { content = text.content, images = text.images, is_error = false }
    end
    return { content = text, is_error = false }
  end
  -- the audit trail: the approval's question and answer, each call's outcome
  local function note_approval(decision, clean)
    audit.emit(ctx.sb, { kind = "approval", decision = decision, tool = name, path = clean.path or clean.source,
                         argv = clean.command or (clean.script and { "/bin/sh", "-c", clean.script }) or nil })
  end
  local function ask(clean, reply)
    note_approval("asked", clean)
    return pcall(approve, { name = name, arguments = clean, tool = tool }, reply)
  end
  local function decided(ok, answer, clean)
    local no = refused(ok, answer)
    note_approval(no and "refused" or "granted", clean)
    return no
  end
  local function reported(r)
    audit.emit(ctx.sb, { kind = "tool_call", tool = name, ok = not r.is_error })
    return r
  end

  local function execute(args)
    local clean, bad = checked(args)
    if not clean then return bad end
    if tool.destructive and approve then
      local ok, answer = ask(clean, function() end)
      if ok and answer == M.PENDING then
        note_approval("refused", clean)
        return err(fmt("%s was not run: its approval answers later (tools.PENDING), which needs a call that does "
          .. "not block (dispatch with on_done, or tools.await).", name))
      end
      bad = decided(ok, answer, clean)
      if bad then return bad end
    end
    return result(pcall(def.run, ctx, clean))
  end
  function tool.execute(args) return reported(execute(args)) end

  --- tool.start(args, on_done): returns at once; on_done(result) runs from
  --- the sandbox's pump (sb:poll), never before start returns.
  function tool.start(args, on_done_)
    local sb = ctx.sb
    local function on_done(r) return on_done_(reported(r)) end
    local clean, bad = checked(args)
    if not clean then return async.defer(sb, function() on_done(bad) end) end
    local function go()
      if not def.start then
        -- a remote sandbox's calls in copies, the logic here; a local one's
        -- in the turn; either way a document helper's run does not block
        -- (it waits through forked.wait)
        local in_copies, waiting, now = forked.wanted(sb), false, nil
        forked.run(sb, function(s)
          return def.run(in_copies and setmetatable({ sb = s }, { __index = ctx }) or ctx, clean)
        end, function(...)
          local r = result(...)
          if not waiting then now = r return end -- done in this turn, as a call that never waits
          async.finish(sb, function() on_done(r) end)
        end, not in_copies)
        if now then return on_done(now) end
        waiting = true
        return async.begin(sb)
      end
      async.begin(sb)
      local called = false
      local function finish(ok, text, ferr)
        if called then return end
        called = true
        async.finish(sb, function() on_done(result(ok, text, ferr)) end)
      end
      local ok, e = pcall(def.start, ctx, clean, function(text, ferr) finish(true, text, ferr) end)
      if not ok then finish(false, e) end
    end
    if not (tool.destructive and approve) then return async.defer(sb, go) end
    async.begin(sb)
    local answered = false
    local function reply(answer, ok)
      if answered then return end
      answered = true
      async.finish(sb, function()
        local no = decided(ok ~= false, answer, clean)
        if no then return on_done(no) end
        go()
      end)
    end
    local ok, answer = ask(clean, function(a) reply(a) end)
    if ok and answer == M.PENDING then return end
    reply(answer, ok)
  end
  return tool
end

--- sb:tools(opts): an array of tools (and a map by name).
function M.build(sb, opts)
  require("sandbox.core").check_open(sb, "tools")
  opts = options.check("tools", opts, BUILD_OPTS)
  check_names(opts)
  local only, exclude, rename = opts.only and set(opts.only), set(opts.exclude), opts.rename
  local ctx = {
    sb = sb, versions = {}, procs = {},
    cfg = { stale_guard = opts.stale_guard, max_output = opts.max_output, timeout = exec.timeout(sb),
            on_wait = opts.on_wait },
  }
  local defs = {}
  for _, n in ipairs(B.ORDER) do
    local d = B[n]
    local usable = (not d.needs_exec or sb.has_exec) and (not d.needs_shell or exec.shell_allowed(sb))
      and (not d.needs_net or sb.allowed_hosts ~= nil)
    if usable then defs[#defs + 1] = { n, d } end
  end
  for _, d in ipairs(opts.extra) do defs[#defs + 1] = { d.name, d } end
  local out = {}
  for _, nd in ipairs(defs) do
    local n, d = nd[1], nd[2]
    if (not only or only[n]) and not exclude[n] and (not opts.read_only or d.read_only) then
      local name = rename[n] or n
      if out[name] then error(fmt("tools: two tools are named '%s'", name), 2) end
      local t = make(ctx, d, name, opts.approve)
      out[#out + 1] = t
      out[name] = t
    end
  end
  owner[out] = sb
  return out
end

-- ---- exporters --------------------------------------------------------------

local function params_for(t, strict) return strict and S.strict(t.parameters) or t.parameters end

-- The tool list an exporter was given must be what sb:tools() returned (or
-- an array of such tools): a sandbox or a stray table raises at the call.
local function tool_list(who, tools)
  if type(tools) ~= "table" then
    error(fmt("%s: expects the tool table from sb:tools(), got a %s%s", who, type(tools),
      type(tools) == "userdata" and " (a sandbox? call sb:tools() first)" or ""), 3)
  end
  for i, t in ipairs(tools) do
    if type(t) ~= "table" or type(t.name) ~= "string" or type(t.parameters) ~= "table" then
      error(fmt("%s: element %d is not a tool (expected the table from sb:tools())", who, i), 3)
    end
  end
  for k in pairs(tools) do
    local t = tools[k]
    if type(k) ~= "number" and not (type(k) == "string" and type(t) == "table" and t.name == k) then
      error(fmt("%s: expects the tool table from sb:tools(); key '%s' is not a tool", who, tostring(k)), 3)
    end
  end
  return setmetatable({}, S.ARRAY)
end

local EXPORT_OPTS = {
  api = { check = function(v)
    if v ~= "chat" and v ~= "responses" then return nil, "must be 'chat' or 'responses'" end
    return v
  end, default = "chat" },
  strict = { check = C.boolean, default = false },
}

--- OpenAI function tools; api = "chat" (nested, default) or "responses"
--- (flat); strict = true makes every schema strict-mode compatible. The
--- strict field is always sent: the Responses API treats a missing one as
--- strict.
function M.to_openai(tools, o)
  local out = tool_list("to_openai", tools)
  o = options.check("to_openai", o, EXPORT_OPTS)
  local api, strict = o.api, o.strict
  for i, t in ipairs(tools) do
    local fn = { name = t.name, description = t.description, parameters = params_for(t, strict), strict = strict }
    if api == "chat" then
      out[i] = { type = "function", ["function"] = fn }
    else
      fn.type = "function"
      out[i] = fn
    end
  end
  return out
end

--- Anthropic Messages tools: {name, description, input_schema}.
function M.to_anthropic(tools, o)
  local out = tool_list("to_anthropic", tools)
  options.check("to_anthropic", o, {})
  for i, t in ipairs(tools) do
    out[i] = { name = t.name, description = t.description, input_schema = t.parameters }
  end
  return out
end

--- MCP tools: {name, description, inputSchema, annotations}.
function M.to_mcp(tools, o)
  local out = tool_list("to_mcp", tools)
  options.check("to_mcp", o, {})
  for i, t in ipairs(tools) do
    out[i] = { name = t.name, description = t.description, inputSchema = t.parameters,
               annotations = { readOnlyHint = t.read_only, destructiveHint = t.destructive,
                               openWorldHint = t.open_world } }
  end
  return out
end

-- ---- dispatch ---------------------------------------------------------------

-- The tool a call names, or nil and the error result.
local function find(tools, call)
  if type(call) ~= "table" then return nil, { content = "The tool call must be an object.", is_error = true } end
  local fn = type(call["function"]) == "table" and call["function"] or call
  local name = fn.name
  local args = fn.arguments
  if args == nil then args = call.input end
  local t = type(name) == "string" and tools[name]
  if t then return t, args end
  local known = {}
  for _, x in ipairs(tools) do known[#known + 1] = x.name end
  local avail = #known > 0 and table.concat(known, ", ") or "none"
  if type(name) ~= "string" or name == "" then
    return nil, { content = fmt("The tool call has no tool name (expected {name = ..., arguments = {...}}). "
      .. "Available tools: %s.", avail), is_error = true }
  end
  return nil, { content = fmt("There is no tool named %s%s. Available tools: %s.", name,
    options.suggest(name, known), avail), is_error = true }
end

local function sandbox_of(who, tools)
  if type(tools) ~= "table" then error(who .. ": expects the tool table from sb:tools()", 3) end
  local sb = owner[tools] or (type(tools[1]) == "table" and tools[1].sandbox)
  if not sb then error(who .. ": expects the tool table from sb:tools() (this one has no sandbox to run in)", 3) end
  return sb
end

local DISPATCH_OPTS = { on_done = { check = C.func } }

--- Run a model's tool call. call: {name =, arguments = table or JSON},
--- an OpenAI chat tool call ({function = {name, arguments}}), a Responses
--- function_call ({name, arguments}) or an Anthropic tool_use ({name, input}).
--- Returns {content =, is_error =}; never raises for a model's mistake.
--- With opts.on_done: returns nothing at once, and on_done(result) runs
--- from the sandbox's pump (sb:poll, or a host loop: sandbox.nvim, ...).
function M.dispatch(tools, call, opts)
  if opts ~= nil then
    opts = options.check("dispatch", opts, DISPATCH_OPTS)
    if opts.on_done then
      local sb = sandbox_of("dispatch", tools)
      local t, args = find(tools, call)
      if not t then return async.defer(sb, function() opts.on_done(args) end) end
      return t.start(args, opts.on_done)
    end
  end
  local t, args = find(tools, call)
  if not t then return args end
  return t.execute(args)
end

--- dispatch that looks blocking: inside a coroutine, with a host loop
--- attached to the sandbox (sandbox.nvim, sandbox.luv, sandbox.love), it
--- yields until the result is in and the editor or game goes on meanwhile;
--- elsewhere it blocks as dispatch does.
function M.await(tools, call)
  local sb = sandbox_of("await", tools)
  local r, yielded = async.await(sb, function(done) M.dispatch(tools, call, { on_done = done }) end)
  if yielded then return r end
  return M.dispatch(tools, call)
end

--- The tool-result message for each provider. A result's images
--- (r.images: {{mime_type, data = base64}}) go as image blocks where the
--- format has them (Anthropic, MCP); OpenAI's tool results carry text,
--- which then says the image was left out.
local function text_only(r)
  if r.is_error then return "Error: " .. r.content end
  if not r.images or #r.images == 0 then return r.content end
  return r.content .. fmt("\n[%d image(s) not shown: this result format carries text only]", #r.images)
end

function M.result_openai(call_id, r)
  return { role = "tool", tool_call_id = call_id, content = text_only(r) }
end

function M.result_openai_responses(call_id, r)
  return { type = "function_call_output", call_id = call_id, output = text_only(r) }
end

function M.result_anthropic(tool_use_id, r)
  local content = r.content
  if r.images and #r.images > 0 then
    content = { { type = "text", text = r.content } }
    for _, img in ipairs(r.images) do
      content[#content + 1] = { type = "image", source = { type = "base64", media_type = img.mime_type, data = img.data } }
    end
  end
  return { type = "tool_result", tool_use_id = tool_use_id, content = content, is_error = r.is_error == true }
end

function M.result_mcp(r)
  local content = { { type = "text", text = r.content } }
  for _, img in ipairs(r.images or {}) do
    content[#content + 1] = { type = "image", data = img.data, mimeType = img.mime_type }
  end
  return { content = content, isError = r.is_error == true }
end

return M
