-- The sandbox's files as MCP resources: resources/list (paged),
-- resources/read (text, or base64 for binary files), the URI template, and
-- subscriptions: a subscribed file that a tool call changed (a tool, or a
-- command it ran) gets notifications/resources/updated. URIs are
-- sandbox:///<path beneath the root>, percent-encoded.
local M = {}

local type, pairs, ipairs, tonumber, tostring, fmt = type, pairs, ipairs, tonumber, tostring, string.format
local byte, char = string.byte, string.char

local base64 = require("sandbox.base64").encode

local SCHEME = "sandbox://"
local PAGE = 500
M.MAX_FILES = 100000 -- resources/list stops there (a project, not a home directory)

local function encode_path(p)
  return (p:gsub("[^%w%-%._~/]", function(c) return fmt("%%%02X", byte(c)) end))
end

function M.uri(path)
  if path:sub(1, 1) ~= "/" then path = "/" .. path end
  return SCHEME .. encode_path(path)
end

--- The path a URI names, or nil, why.
function M.path(uri)
  if type(uri) ~= "string" or uri:sub(1, #SCHEME) ~= SCHEME then
    return nil, "resource URIs of this server start with " .. SCHEME .. "/"
  end
  local rest = uri:sub(#SCHEME + 1)
  if rest:sub(1, 1) ~= "/" then return nil, "a resource URI has no host: " .. SCHEME .. "/path" end
  if rest:find("%%[^%x]") or rest:find("%%%x?$") then return nil, "bad percent-encoding in " .. uri end
  local p = rest:gsub("%%(%x%x)", function(h) return char(tonumber(h, 16)) end)
  if p:find("%z") then return nil, "a path must not contain NUL" end
  return p:sub(2) == "" and "." or p:sub(2)
end

local MIME = {
  txt = "text/plain", md = "text/markdown", lua = "text/x-lua", c = "text/x-c", h = "text/x-c",
  py = "text/x-python", js = "text/javascript", ts = "text/x-typescript", json = "application/json",
  html = "text/html", css = "text/css", sh = "text/x-shellscript", toml = "application/toml",
  yaml = "application/yaml", yml = "application/yaml", xml = "application/xml", csv = "text/csv",
  go = "text/x-go", rs = "text/x-rust", png = "image/png", jpg = "image/jpeg", jpeg = "image/jpeg",
  gif = "image/gif", pdf = "application/pdf", zip = "application/zip", gz = "application/gzip",
}

-- By extension; what it cannot tell is known only once the file is read.
local function mime(path, binary)
  local ext = path:match("%.([%w]+)$")
  local m = MIME[ext and ext:lower() or ""]
  if binary == nil then return m end
  return m or (binary and "application/octet-stream" or "text/plain")
end

-- Text a client can show: no NUL (the check rg and git use for "binary")
-- and valid UTF-8, so a JSON string carries it unchanged.
local function is_text(s)
  return not s:find("%z") and require("sandbox.json").utf8(s) == s
end


--- A resource set over sandbox sb. notify(method, params) sends a notification.
function M.new(sb, notify)
  local R = { subs = {} }

  local function entry(path, st)
    return { uri = M.uri(path), name = path, mimeType = mime(path), size = st.size }
  end

  --- resources/list: every file the search tools would show (ignore files
  --- and hidden files honoured), PAGE at a time. nil, msg for a bad cursor.
  function R.list(params)
    local start = 1
    if params.cursor ~= nil then
      start = type(params.cursor) == "string" and tonumber(params.cursor:match("^p(%d+)$") or "")
      if not start or start < 1 then return nil, "invalid cursor" end
    end
    local out, seen = {}, 0
    for _, path in ipairs(sb:glob("**", { max_results = M.MAX_FILES }) or {}) do
      local st = sb:stat(path)
      if st and st.type == "file" then
        seen = seen + 1
        if seen >= start and seen < start + PAGE then out[#out + 1] = entry(path, st) end
        if seen == start + PAGE then return { resources = out, nextCursor = "p" .. seen } end
      end
    end
    return { resources = out }
  end

  function R.templates()
    return { resourceTemplates = { { uriTemplate = SCHEME .. "/{+path}", name = "file",
      description = "A file of the sandbox, by its path beneath the sandbox root.", mimeType = "text/plain" } } }
  end

  --- resources/read -> result | nil, code, msg (code: JSON-RPC error code).
  function R.read(params)
    local path, why = M.path(params.uri)
    if not path then return nil, -32602, why end
    local data, msg, code = sb:read_file(path)
    if not data then
      if code == "ENOENT" or code == "ENOTDIR" then return nil, -32002, "Resource not found: " .. params.uri end
      if code == "EISDIR" then return nil, -32602, params.uri .. " is a directory; list it with resources/list" end
      return nil, -32602, msg
    end
    local item = { uri = params.uri }
    if is_text(data) then
      item.mimeType, item.text = mime(path, false), data
    else
      item.mimeType, item.blob = mime(path, true), base64(data)
    end
    return { contents = { item } }
  end

  local function fingerprint(path)
    local st = sb:stat(path)
    if not st then return "missing" end
    return fmt("%s:%s:%s", st.type, tostring(st.size), tostring(st.mtime))
  end

  function R.subscribe(params)
    local path, why = M.path(params.uri)
    if not path then return nil, why end
    R.subs[params.uri] = { path = path, seen = fingerprint(path) }
    return {}
  end

  function R.unsubscribe(params)
    R.subs[params.uri] = nil
    return {}
  end

  --- After a tool call: tell the client about every subscribed file that changed.
  function R.check()
    for uri, s in pairs(R.subs) do
      local now = fingerprint(s.path)
      if now ~= s.seen then
        s.seen = now
        notify("notifications/resources/updated", { uri = uri })
      end
    end
  end

  return R
end

return M
