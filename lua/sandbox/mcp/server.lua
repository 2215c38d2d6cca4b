-- A Model Context Protocol server over stdio (SPEC §13) for one sandbox:
-- JSON-RPC 2.0, one message per line; initialize with version negotiation;
-- tools/list and tools/call from sb:tools(); progress for long commands and
-- cancellation that kills a command's tree (both through the tools'
-- on_wait hook, which lets the server read its input while a command
-- runs); logging; the sandbox's files as resources; approval of
-- destructive tools through elicitation. The transport is a
-- core.channel: nothing but protocol messages reaches stdout.
local json = require "sandbox.json"
local tools_mod = require "sandbox.tools"
local resources = require "sandbox.mcp.resources"

local M = {}

local type, pairs, ipairs, tostring, pcall, fmt = type, pairs, ipairs, tostring, pcall, string.format
local floor = math.floor

-- What the official SDK speaks (its SUPPORTED_PROTOCOL_VERSIONS), newest first.
M.VERSIONS = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07" }
local KNOWN = {}
for i, v in ipairs(M.VERSIONS) do KNOWN[v] = i end
-- JSON-RPC batches: allowed up to 2025-03-26, removed by 2025-06-18.
local BATCHES = { ["2025-03-26"] = true, ["2024-11-05"] = true, ["2024-10-07"] = true }
local function at_least(v, min) return KNOWN[v] and KNOWN[v] <= KNOWN[min] end

M.PARSE_ERROR, M.INVALID_REQUEST, M.METHOD_NOT_FOUND, M.INVALID_PARAMS, M.INTERNAL =
  -32700, -32600, -32601, -32602, -32603

local LEVELS = { debug = 1, info = 2, notice = 3, warning = 4, error = 5, critical = 6, alert = 7, emergency = 8 }

local function object(t) return setmetatable(t or {}, { __jsontype = "object" }) end

local function valid_id(id)
  return type(id) == "string" or (type(id) == "number" and id == floor(id))
end

-- The local path a file:// URI names (a client's root), or nil.
function M.file_path(uri)
  if type(uri) ~= "string" then return nil end
  local rest = uri:match("^[Ff][Ii][Ll][Ee]://(.*)$")
  if not rest then return nil end
  local host, path = rest:match("^([^/]*)(/.*)$")
  if not path or (host ~= "" and host ~= "localhost") then return nil end
  if path:find("%%[^%x]") or path:find("%%%x?$") then return nil end
  path = path:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
  if path:find("%z") then return nil end
  return path
end

--- A server. o: channel (core.channel with stdio), sb, tools_opts (for
--- sb:tools, approve and on_wait are the server's), approve ("always",
--- "never", "ask"), instructions, name, version, log (a function for
--- stderr lines, optional). Instead of sb, open = function(root) -> sb |
--- nil, msg: the sandbox is made when first needed, in the first of the
--- client's roots (MCP roots/list) when it offers them (root = that path),
--- else with root = nil.
function M.new(o)
  local S = {
    ch = o.channel, sb = o.sb, approve = o.approve or "always",
    initialized = false, version = nil, client = {}, level = LEVELS.notice,
    queue = {}, responses = {}, cancelled = {}, current = nil, stop = nil, next_id = 0,
  }

  local function send(msg)
    local ok, err = S.ch:write(json.encode(msg) .. "\n")
    if not ok then S.stop = S.stop or ("output closed: " .. tostring(err)) end
  end
  local function respond(id, result) send({ jsonrpc = "2.0", id = id, result = result }) end
  local function respond_error(id, code, message, data)
    send({ jsonrpc = "2.0", id = id == nil and json.null or id, error = { code = code, message = message, data = data } })
  end
  local function notify(method, params) send({ jsonrpc = "2.0", method = method, params = params }) end
  S.send, S.notify = send, notify

  local function log(level, data)
    if S.initialized and LEVELS[level] >= S.level then
      notify("notifications/message", { level = level, logger = "agent-sandbox", data = data })
    end
  end
  S.log = log


  -- ---- input ------------------------------------------------------------------

  -- A message that must be seen at once, even while a tool runs: answers to
  -- our requests, cancellations, pings. Returns true when it was handled.
  local function urgent(m)
    if type(m) ~= "table" or m[1] ~= nil then return false end
    if m.method == nil and m.id ~= nil and (m.result ~= nil or m.error ~= nil) then
      S.responses[m.id] = m
      return true
    end
    if m.method == "notifications/cancelled" and m.id == nil then
      local p = type(m.params) == "table" and m.params or {}
      local rid = p.requestId
      if rid ~= nil then
        S.cancelled[rid] = true
        for i, q in ipairs(S.queue) do -- not started yet: never will be
          if not q.batch and type(q.v) == "table" and q.v.id == rid then table.remove(S.queue, i) break end
        end
      end
      return true
    end
    if m.method == "ping" and valid_id(m.id) and S.current then
      respond(m.id, object())
      return true
    end
    return false
  end

  -- Read one line: {v = value, batch = bool}, or false after answering a
  -- parse error; nil when nothing came (S.stop says if the input ended).
  -- A batch is told by its text ("[..."): decoders give [] and {} alike.
  local function read_one(timeout)
    local line, why, detail = S.ch:read(timeout)
    if line == nil then
      if why == "timeout" then return nil end
      if why == "too_long" then
        respond_error(nil, M.PARSE_ERROR, "Parse error: the message is longer than this server accepts")
        return false
      end
      S.stop = why == "signal" and ("SIG" .. detail) or why == "error" and ("input: " .. tostring(detail)) or "end of input"
      return nil
    end
    if line:find("^%s*$") then return false end
    local v, err = json.decode(line)
    if v == nil then
      respond_error(nil, M.PARSE_ERROR, "Parse error: " .. tostring(err))
      return false
    end
    return { v = v, batch = line:find("^%s*%[") ~= nil }
  end

  --- While a tool runs: take what has arrived without waiting (or up to
  --- `timeout`), handle the urgent part, queue the rest.
  function S.pump(timeout)
    local wait = timeout or 0
    while not S.stop do
      local m = read_one(wait)
      if m == nil then return end
      if m ~= false and (m.batch or not urgent(m.v)) then S.queue[#S.queue + 1] = m end
      wait = 0
    end
  end

  -- ---- approval, progress, cancellation --------------------------------------

  local function elicit(message)
    local caps = S.client.elicitation
    if type(caps) ~= "table" or not at_least(S.version, "2025-06-18") then return nil end
    S.next_id = S.next_id + 1
    local id = "sandbox-" .. S.next_id
    local params = { message = message, requestedSchema = { type = "object", properties = object() } }
    if at_least(S.version, "2025-11-25") then params.mode = "form" end
    send({ jsonrpc = "2.0", id = id, method = "elicitation/create", params = params })
    local cur = S.current
    while not S.stop and not S.responses[id] and not (cur and S.cancelled[cur.id]) do S.pump(0.25) end
    local r = S.responses[id]
    S.responses[id] = nil
    if not r then return false, "the request was cancelled." end
    if r.error then return false, "the client could not ask the user (" .. tostring(r.error.message) .. ")." end
    local action = type(r.result) == "table" and r.result.action
    if action == "accept" then return true end
    return false, action == "decline" and "the user said no." or "the user dismissed the question."
  end

  local function approver(call)
    if S.approve == "always" then return true end
    if S.approve == "never" then return "this server refuses destructive tools (--approve never)" end
    local args = json.encode(call.arguments)
    if #args > 400 then args = args:sub(1, 400) .. "..." end
    local ok, why = elicit(fmt("Allow the agent to run %s %s?", call.name, args))
    if ok == nil then
      return "this server asks before destructive tools (--approve ask), and this client cannot be asked "
        .. "(it did not declare elicitation)."
    end
    log(ok and "info" or "notice", { tool = call.name, approved = ok, why = why })
    return ok or why
  end

  local function on_wait(h, info)
    S.pump(0)
    local cur = S.current
    if not cur then return end
    if S.stop or S.cancelled[cur.id] then
      if not cur.killed then
        cur.killed = true
        h:kill()
      end
      return
    end
    if cur.token ~= nil and info.elapsed >= cur.next_progress then
      local p = floor(info.elapsed)
      cur.next_progress = p + 1
      notify("notifications/progress", { progressToken = cur.token, progress = p,
        message = fmt("%s has run for %d s", info.tool, p) })
    end
  end

  local topts = {}
  for k, v in pairs(o.tools_opts or {}) do topts[k] = v end
  topts.approve, topts.on_wait = approver, on_wait

  local function attach(sb)
    S.sb = sb
    S.resources = resources.new(sb, notify)
    S.tools = sb:tools(topts)
  end
  if S.sb then attach(S.sb) end

  -- The client's first root, asked for once (nil: it offers none, or did
  -- not answer within 10 s).
  local function first_root()
    if type(S.client.roots) ~= "table" then return nil end
    S.next_id = S.next_id + 1
    local id = "sandbox-" .. S.next_id
    send({ jsonrpc = "2.0", id = id, method = "roots/list" })
    local deadline = os.time() + 10
    while not S.stop and not S.responses[id] and os.time() <= deadline do S.pump(0.25) end
    local r = S.responses[id]
    S.responses[id] = nil
    local roots = r and type(r.result) == "table" and r.result.roots
    if type(roots) ~= "table" then return nil end
    for _, root in ipairs(roots) do
      local path = type(root) == "table" and M.file_path(root.uri)
      if path then return path end
    end
    return nil
  end

  -- The sandbox, made now if it is made lazily: true, or nil and why.
  local function ready()
    if S.sb then return true end
    if S.open_failed then return nil, S.open_failed end
    if not o.open then return nil, "this server has no sandbox" end
    local ok, sb, why = pcall(o.open, first_root())
    if ok and sb then
      attach(sb)
      log("info", { sandbox = sb.cwd })
      return true
    end
    S.open_failed = tostring(ok and why or sb)
    return nil, S.open_failed
  end
  S.ready = ready

  -- ---- methods -----------------------------------------------------------------

  local H = {}

  function H.initialize(p)
    if S.version then return nil, M.INVALID_REQUEST, "initialize was already called" end
    if type(p.protocolVersion) ~= "string" then return nil, M.INVALID_PARAMS, "protocolVersion must be a string" end
    S.version = KNOWN[p.protocolVersion] and p.protocolVersion or M.VERSIONS[1]
    S.client = type(p.capabilities) == "table" and p.capabilities or {}
    S.client_info = p.clientInfo
    local caps = {
      tools = object { listChanged = false },
      resources = object { subscribe = true, listChanged = false },
      logging = object(),
    }
    return { protocolVersion = S.version, capabilities = caps,
             serverInfo = { name = o.name or "agent-sandbox", version = o.version or "0" },
             instructions = o.instructions }
  end

  function H.ping() return object() end

  -- methods that work in the sandbox: it is made first
  local function needs_sandbox(f)
    return function(p, id)
      local ok, why = ready()
      if not ok then return nil, M.INTERNAL, "no sandbox to work in: " .. why end
      return f(p, id)
    end
  end

  H["tools/list"] = function(p)
    if p.cursor ~= nil then return nil, M.INVALID_PARAMS, "invalid cursor (this server sends one page)" end
    local list = tools_mod.to_mcp(S.tools)
    if not at_least(S.version, "2025-03-26") then -- annotations came with 2025-03-26
      for _, t in ipairs(list) do t.annotations = nil end
    end
    return { tools = list }
  end

  H["tools/call"] = function(p, id)
    if type(p.name) ~= "string" then return nil, M.INVALID_PARAMS, "params.name must be a tool name" end
    local t = S.tools[p.name]
    if not t then return nil, M.INVALID_PARAMS, "Unknown tool: " .. p.name end
    if p.arguments ~= nil and type(p.arguments) ~= "table" then
      return nil, M.INVALID_PARAMS, "params.arguments must be an object"
    end
    local meta = type(p._meta) == "table" and p._meta or {}
    S.current = { id = id, token = meta.progressToken, next_progress = 1 }
    local ok, r = pcall(t.execute, p.arguments or {})
    local cur = S.current
    S.current = nil
    if not ok then r = { content = "the tool failed: " .. tostring(r), is_error = true } end
    S.resources.check()
    if S.cancelled[id] or cur.killed then return M.NO_RESPONSE end
    log(r.is_error and "warning" or "info", { tool = p.name, isError = r.is_error == true })
    return tools_mod.result_mcp(r)
  end

  H["resources/list"] = function(p)
    local r, why = S.resources.list(p)
    if not r then return nil, M.INVALID_PARAMS, why end
    return r
  end
  H["resources/templates/list"] = function() return S.resources.templates() end
  H["resources/read"] = function(p) return S.resources.read(p) end
  H["resources/subscribe"] = function(p)
    local r, why = S.resources.subscribe(p)
    if not r then return nil, M.INVALID_PARAMS, why end
    return object()
  end
  H["resources/unsubscribe"] = function(p)
    S.resources.unsubscribe(p)
    return object()
  end

  for _, m in ipairs { "tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
                       "resources/subscribe", "resources/unsubscribe" } do
    H[m] = needs_sandbox(H[m])
  end

  H["logging/setLevel"] = function(p)
    if not LEVELS[p.level] then return nil, M.INVALID_PARAMS, "level must be one of debug, info, notice, "
      .. "warning, error, critical, alert, emergency" end
    S.level = LEVELS[p.level]
    return object()
  end

  -- ---- dispatch ------------------------------------------------------------------

  -- One message -> its response (nil for notifications and cancelled requests).
  local function handle(m)
    if type(m) ~= "table" or m[1] ~= nil then
      return { jsonrpc = "2.0", id = json.null, error = { code = M.INVALID_REQUEST, message = "Invalid Request: not an object" } }
    end
    if urgent(m) then return nil end
    local id, method = m.id, m.method
    if id ~= nil and json.is_null(id) then
      return { jsonrpc = "2.0", id = json.null, error = { code = M.INVALID_REQUEST, message = "Invalid Request: id must not be null" } }
    end
    local is_request = id ~= nil
    local function err(code, msg)
      return { jsonrpc = "2.0", id = (is_request and valid_id(id)) and id or json.null,
               error = { code = code, message = msg } }
    end
    if m.jsonrpc ~= "2.0" then return err(M.INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"') end
    if type(method) ~= "string" then return err(M.INVALID_REQUEST, "Invalid Request: method must be a string") end
    if id ~= nil and not valid_id(id) then return err(M.INVALID_REQUEST, "Invalid Request: id must be a string or an integer") end
    local params = m.params
    if params ~= nil and (type(params) ~= "table" or params[1] ~= nil) then return err(M.INVALID_PARAMS, "params must be an object") end
    params = params or {}
    if not is_request then -- notifications: nothing to answer
      if method == "notifications/initialized" then S.initialized = true end
      return nil
    end
    if S.cancelled[id] then return nil end
    if not S.version and method ~= "initialize" and method ~= "ping" then
      return err(M.INVALID_REQUEST, "Invalid Request: the server is not initialized (send initialize first)")
    end
    local h = H[method]
    if not h then return err(M.METHOD_NOT_FOUND, "Method not found: " .. method) end
    local ok, res, code, msg = pcall(h, params, id)
    if not ok then return err(M.INTERNAL, "Internal error: " .. tostring(res)) end
    if res == M.NO_RESPONSE then return nil end
    if res == nil then return err(code, msg) end
    return { jsonrpc = "2.0", id = id, result = res }
  end

  local function handle_any(m)
    if not m.batch then
      local r = handle(m.v)
      if r then send(r) end
      return
    end
    if not S.version or not BATCHES[S.version] then
      respond_error(nil, M.INVALID_REQUEST, fmt("Invalid Request: JSON-RPC batches are not supported in protocol version %s",
        tostring(S.version or "(none negotiated)")))
      return
    end
    if type(m.v) ~= "table" or m.v[1] == nil then
      respond_error(nil, M.INVALID_REQUEST, "Invalid Request: an empty batch")
      return
    end
    local out = setmetatable({}, json.ARRAY)
    for _, x in ipairs(m.v) do
      local r = handle(x)
      if r then out[#out + 1] = r end
    end
    if #out > 0 then send(out) end
  end

  --- Serve until the input ends or a signal asks to stop; the caller
  --- disposes the sandbox. Returns why it stopped.
  function S.run()
    while not S.stop do
      local m = table.remove(S.queue, 1)
      if m == nil then m = read_one(nil) end
      if m ~= nil and m ~= false then handle_any(m) end
    end
    return S.stop
  end

  return S
end

M.NO_RESPONSE = setmetatable({}, { __tostring = function() return "no response" end })

return M
