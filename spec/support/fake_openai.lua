-- A small OpenAI-compatible chat completions server for the live-mode test:
--   lua5.4 spec/support/fake_openai.lua <portfile> <logfile> <requests>
-- Each conversation: first a read_file call on README.md, then an answer
-- quoting what the tool returned. Every request body is logged (one JSON per line).
local socket = require "socket"
local cjson = require "cjson"

local portfile, logfile, max = arg[1], arg[2], tonumber(arg[3]) or 4
local srv = assert(socket.bind("127.0.0.1", 0))
local _, port = srv:getsockname()
local f = assert(io.open(portfile, "w"))
f:write(port, "\n")
f:close()
srv:settimeout(60)

for _ = 1, max do
  local c = srv:accept()
  if not c then break end
  c:settimeout(10)
  local request = c:receive("*l")
  local len = 0
  repeat
    local h = c:receive("*l")
    local n = h and h:match("^[Cc]ontent%-[Ll]ength:%s*(%d+)")
    if n then len = tonumber(n) end
  until not h or h == ""
  local body = c:receive(len)
  local log = assert(io.open(logfile, "a"))
  log:write(body, "\n")
  log:close()
  local req = cjson.decode(body)
  local last = req.messages[#req.messages]
  local msg
  if last.role == "tool" then
    msg = { role = "assistant", content = "The README starts with: " .. (last.content:match("\t([^\n]*)") or "?") }
  else
    msg = { role = "assistant", content = cjson.null, tool_calls = {
      { id = "call_1", type = "function", ["function"] = { name = "read_file", arguments = '{"path":"README.md"}' } } } }
  end
  local resp = cjson.encode { id = "chatcmpl-1", object = "chat.completion", model = req.model,
    choices = { { index = 0, message = msg, finish_reason = msg.tool_calls and "tool_calls" or "stop" } } }
  local ok = request and request:match("^POST /v1/chat/completions ")
  c:send(("HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s")
    :format(ok and "200 OK" or "404 Not Found", #resp, resp))
  c:close()
end
