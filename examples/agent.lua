-- The demo: an agent loop working in a ContainerSandbox, an OverlaySandbox
-- (the host reviews the diff and commits) and a VirtualSandbox through the
-- same tool tables, with a readable transcript.
--
--   bash scripts/demo.sh            (or: make demo)
--
-- By default the "model" is scripted: a recorded sequence of tool calls in
-- the OpenAI chat format. With OPENAI_BASE_URL set (and OPENAI_API_KEY,
-- OPENAI_MODEL) the same loop talks to any OpenAI-compatible endpoint.
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath

local sandbox = require "sandbox"
local json = sandbox.json
local T = sandbox.tools

local fmt, concat = string.format, table.concat
local out = io.stdout

-- ---- the project the agent works on ---------------------------------------

local PROJECT = {
  ["README.md"] = "# greeter\nA tiny Lua program. Run `lua5.4 src/app.lua`.\n",
  ["src/app.lua"] = "local greet = require('src.greet')\nprint(greet('world'))\n",
  ["src/greet.lua"] = "return function(name)\n  return 'Hello, ' .. name -- TODO: add punctuation\nend\n",
  ["server.lua"] = table.concat({
    "-- a tiny HTTP server for the demo (luasocket)",
    "local socket = require('socket')",
    "local s = assert(socket.bind('127.0.0.1', 8000))",
    "print('listening on 127.0.0.1:8000'); io.stdout:flush()",
    "while true do",
    "  local c = s:accept()",
    "  local line = c:receive('*l')",
    "  print('request: ' .. tostring(line)); io.stdout:flush()",
    "  c:send('HTTP/1.0 200 OK\\r\\nContent-Length: 6\\r\\n\\r\\nhello\\n')",
    "  c:close()",
    "end", "" }, "\n"),
  ["client.lua"] = "local http = require('socket.http')\nlocal body, code = http.request('http://127.0.0.1:8000/status')\nprint(code, body)\n",
}

-- ---- the scripted model ----------------------------------------------------

local function call(id, name, args)
  return { id = id, type = "function", ["function"] = { name = name, arguments = json.encode(args) } }
end

-- One assistant message per turn, in the OpenAI chat format; `needs` names a
-- tool the step uses, so steps are skipped where a sandbox lacks it.
local SCRIPT = {
  { say = "Let me look at the project first.", calls = { call("c1", "list_files", { depth = 2 }) } },
  { calls = { call("c2", "read_file", { path = "src/greet.lua" }) } },
  { say = "I'll resolve the TODO.",
    calls = { call("c3", "edit_file", { path = "src/greet.lua",
      old_string = "'Hello, ' .. name -- TODO: add punctuation", new_string = "'Hello, ' .. name .. '!'" }) } },
  { say = "Checking whether I can peek at the host's users...",
    calls = { call("c4", "read_file", { path = "../../../etc/passwd" }) } },
  { calls = { call("c5", "search_code", { pattern = "TODO" }) } },
  { say = "Now let me run it.", needs = "run_command",
    calls = { call("c6", "run_command", { command = { "lua5.4", "src/app.lua" } }) } },
  { say = "A slow command, to see the timeout.", needs = "run_command",
    calls = { call("c7", "run_command", { command = { "sleep", "30" }, timeout_seconds = 1 }) } },
  { say = "Starting the dev server in the background.", needs = "run_command",
    calls = { call("c8", "run_command", { command = { "lua5.4", "server.lua" }, background = true }) } },
  -- like a model, take the process id from what run_command answered
  { say = "Waiting until it listens.", needs = "process_output",
    calls = function(ids) return { call("c9", "process_output", { id = ids.server, wait_seconds = 5 }) } end },
  { needs = "run_command", calls = { call("c10", "run_command", { command = { "lua5.4", "client.lua" } }) } },
  { needs = "process_output",
    calls = function(ids) return { call("c11", "process_output", { id = ids.server, wait_seconds = 2 }) } end },
  { needs = "process_kill", calls = function(ids) return { call("c12", "process_kill", { id = ids.server }) } end },
  { final = "Done: greet() now ends with an exclamation mark. Reading outside the sandbox was refused." },
}

local function scripted()
  local i = 0
  return function(messages, tools)
    local ids = {}
    for _, m in ipairs(messages) do
      local id = m.role == "tool" and m.content:match("^Started process (%d+)")
      if id then ids.server = tonumber(id) end
    end
    while true do
      i = i + 1
      local step = SCRIPT[i]
      if not step then return { role = "assistant", content = "(end of script)" } end
      if step.final then return { role = "assistant", content = step.final } end
      if not step.needs or tools[step.needs] then
        local calls = type(step.calls) == "function" and step.calls(ids) or step.calls
        return { role = "assistant", content = step.say, tool_calls = calls }
      end
    end
  end
end

-- ---- a live model (any OpenAI-compatible endpoint) --------------------------

local function live(base, key, model)
  local ltn12 = require "ltn12"
  local http = base:match("^https:") and require("ssl.https") or require("socket.http")
  return function(messages, tools)
    local body = json.encode { model = model, messages = messages, tools = T.to_openai(tools) }
    local chunks = {}
    local ok, status = http.request {
      url = base:gsub("/$", "") .. "/chat/completions", method = "POST",
      headers = { ["Content-Type"] = "application/json", ["Content-Length"] = tostring(#body),
                  ["Authorization"] = "Bearer " .. (key or "") },
      source = ltn12.source.string(body), sink = ltn12.sink.table(chunks),
    }
    if not ok or status ~= 200 then
      error(fmt("the endpoint answered %s: %s", tostring(status), concat(chunks):sub(1, 300)))
    end
    local resp = json.decode(concat(chunks))
    return resp.choices[1].message
  end
end

-- ---- the loop -------------------------------------------------------------

local function show(prefix, text, max_lines)
  local n = 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    if n > max_lines then
      out:write(prefix, "...\n")
      break
    end
    out:write(prefix, line, "\n")
  end
end

local function run_agent(title, sb, model)
  local tools = sb:tools {
    approve = function(c) -- a host-side policy: no deleting in this demo
      if c.name == "delete_file" then return "deleting files is not allowed in this demo" end
      return true
    end,
  }
  out:write(("\n== %s: %s (%s tools) ==\n"):format(title, tostring(sb), #tools))
  local messages = {
    { role = "system", content = "You are a coding agent. Work only with the tools; paths are relative to the project root." },
    { role = "user", content = "Fix the TODO in src/greet.lua, run the program, then try the dev server." },
  }
  for _ = 1, 30 do
    local msg = model(messages, tools)
    messages[#messages + 1] = msg
    if msg.content and msg.content ~= json.null and msg.content ~= "" then show("assistant: ", msg.content, 10) end
    if not msg.tool_calls or msg.tool_calls == json.null or #msg.tool_calls == 0 then break end
    for _, tc in ipairs(msg.tool_calls) do
      out:write(("  -> %s %s\n"):format(tc["function"].name, (tc["function"].arguments:gsub("\\/", "/"))))
      local r = T.dispatch(tools, tc)
      show(r.is_error and "  <- ERROR " or "  <- ", r.content, 14)
      messages[#messages + 1] = T.result_openai(tc.id, r)
    end
  end
  return messages
end

local function tmpdir()
  local p = assert(io.popen("mktemp -d /tmp/sandbox-demo-XXXXXX"))
  local d = p:read("*l")
  p:close()
  return d
end

local base = os.getenv("OPENAI_BASE_URL")
local function model()
  if base and base ~= "" then
    return live(base, os.getenv("OPENAI_API_KEY"), os.getenv("OPENAI_MODEL") or "gpt-4o-mini")
  end
  return scripted()
end

out:write(("sandbox %s; kernel: Landlock ABI %s, openat2 %s; model: %s\n"):format(sandbox.version,
  tostring(sandbox.capabilities().landlock_abi), tostring(sandbox.capabilities().openat2),
  base and ("live at " .. base) or "scripted"))

-- 1. a real directory, confined commands
local dir = tmpdir()
do
  local seed = assert(sandbox.container { base_dir = dir, exec = false })
  for path, content in pairs(PROJECT) do assert(seed:write_file(path, content)) end
  seed:dispose()
  local sb = assert(sandbox.container { base_dir = dir, kill_grace = 0.5 })
  run_agent("ContainerSandbox", sb, model())
  local c = sb.confinement
  out:write(("   (commands ran with %s, network: %s, tree kill by %s)\n"):format(
    c.landlock.enforced and ("Landlock ABI " .. tostring(c.landlock.abi)) or "no Landlock",
    c.network.mode, c.tree_kill.via))
  sb:dispose() -- (on Lua 5.4, `local sb <close> = ...` does this at the end of the block)
end
os.execute("rm -rf " .. dir)

-- 3. the same agent on a real project through an OverlaySandbox: nothing in
-- the project changes until the host has seen the diff and said yes
local function tree_of(path) -- every file's bytes, to check the base is untouched
  local t, r = {}, assert(sandbox.container { base_dir = path, exec = false })
  for _, p in ipairs(assert(r:glob("**", { hidden = true, ignored = true }))) do
    if r:stat(p).type == "file" then t[#t + 1] = p .. "\0" .. r:read_file(p) end
  end
  r:dispose()
  table.sort(t)
  return concat(t, "\1")
end
dir = tmpdir()
do
  local seed = assert(sandbox.container { base_dir = dir, exec = false })
  for path, content in pairs(PROJECT) do assert(seed:write_file(path, content)) end
  seed:dispose()
  local before = tree_of(dir)
  local sb, msg = sandbox.overlay { base_dir = dir, kill_grace = 0.5 }
  if not sb then
    out:write("\n== OverlaySandbox: not here (" .. tostring(msg) .. ")\n")
  else
    run_agent("OverlaySandbox", sb, model())
    local same = tree_of(dir) == before
    out:write(("\n   the project on disk is %s after the agent's turn\n"):format(same and "byte-identical" or "CHANGED"))
    assert(same, "the overlay let a change through to base_dir")
    out:write("   the host reviews:\n")
    for line in assert(sb:diff()):gmatch("[^\n]+") do out:write("   | ", line, "\n") end
    local answer = "y (scripted)"
    if os.getenv("DEMO_ASK") then
      out:write("   commit? [y/N] ")
      out:flush()
      answer = io.read("*l") or ""
    else
      out:write("   commit? [y/N] " .. answer .. "\n")
    end
    if answer:match("^y") then
      local ok, done = assert(sb:commit())
      out:write(("   committed %d change(s); src/greet.lua on disk now says: %s\n"):format(#done,
        io.open(dir .. "/src/greet.lua"):read("*a"):match("'Hello, '[^\n]*")))
    else
      sb:discard()
      out:write("   discarded\n")
    end
    sb:dispose()
  end
end
os.execute("rm -rf " .. dir)

-- 4. the same agent in memory: no host access at all, no commands
do
  local sb = sandbox.virtual { cwd = "/project", files = PROJECT }
  run_agent("VirtualSandbox", sb, model())
  out:write("   (src/greet.lua now says: " .. sb:read_file("src/greet.lua"):match("'Hello, '[^\n]*") .. ")\n")
  sb:dispose()
end
