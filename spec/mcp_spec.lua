-- agent-sandbox mcp (SPEC §13) against real clients: the official MCP
-- TypeScript SDK's Client over StdioClientTransport (spec/js/mcp_client.mjs)
-- and the MCP Inspector's CLI mode; the JSON-RPC framing rules with raw
-- lines, where a client library would never send the mistakes.
local json = require "sandbox.json"
local sh = require "support.sh"
local procs = require "support.procs"
local backends = require "support.backends"
local hostcan = require "support.host"

local NPM = sh.build:gsub("/build[^/]*$", "/build/npm")
local BIN = (os.getenv("PWD") or ".") .. "/bin/agent-sandbox"

-- The server command line for this suite's Lua (and sanitizer runtime).
local function server_cmd(args)
  return sh.lua(false) .. " " .. sh.quote(BIN) .. " mcp " .. args
end

-- a 2x1 grey PNG (zlib-compressed, CRCs as libpng writes them)
local DOT_PNG = "\137\80\78\71\13\10\26\10\0\0\0\13\73\72\68\82\0\0\0\2\0\0\0\1\8\0\0\0\0\209\73\32\86"
  .. "\0\0\0\11\73\68\65\84\120\156\99\96\248\15\0\1\2\1\0\66\190\188\104\0\0\0\0\73\69\78\68\174\66\96\130"

local function project()
  local dir = backends.tmpdir("mcp")
  assert(sh.run(("cd %s && printf '# notes\\n' > notes.md && printf 'a\\0b\\377' > bin.dat "
    .. "&& echo sp > 'with space.txt' && printf '\\351t\\351\\n' > latin1.txt"):format(dir)))
  return dir
end

-- One SDK scenario: its JSON report. The server is this tree's with `args`,
-- or, with o.argv, that command line as a client configuration names it
-- (run from o.cwd).
local function sdk(scenario, dir, args, env, o)
  o = o or {}
  local server = o.argv or ("sh -c " .. sh.quote("exec " .. server_cmd(args)))
  local cmd = ("%s%sNPM_DIR=%s node %s/spec/js/mcp_client.mjs %s %s -- %s"):format(
    o.cwd and ("cd " .. sh.quote(o.cwd) .. " && ") or "", env or "", sh.quote(NPM), os.getenv("PWD") or ".",
    scenario, sh.quote(dir), server)
  local ok, out = sh.run(cmd)
  local last = out:match("([^\n]*)\n?$")
  local r = json.decode(last)
  assert(type(r) == "table", "no report from the client: " .. out)
  assert(ok and not r.failed, "the client failed: " .. tostring(r.failed) .. "\nserver stderr: " .. tostring(r.stderr))
  return r
end

-- Raw lines in, raw lines out: {lines = decoded messages, raw =, err =}.
local function raw(lines_in, args, dir)
  dir = dir or project()
  local tmp = backends.tmpdir("mcpio")
  local f = assert(io.open(tmp .. "/in", "wb"))
  f:write(table.concat(lines_in, "\n"), "\n")
  f:close()
  local ok, out = sh.run(("%s < %s/in > %s/out 2> %s/err"):format(server_cmd(args or ("--dir " .. dir)), tmp, tmp, tmp))
  local text = sh.read_file(tmp .. "/out")
  local msgs = {}
  for l in text:gmatch("[^\n]+") do
    local v = json.decode(l)
    assert(type(v) == "table", "not a JSON message on stdout: " .. l)
    msgs[#msgs + 1] = v
  end
  return { ok = ok, msgs = msgs, raw = text, err = sh.read_file(tmp .. "/err"), out = out }
end

local function init(version)
  return json.encode { jsonrpc = "2.0", id = 0, method = "initialize",
    params = { protocolVersion = version or "2025-11-25", capabilities = {}, clientInfo = { name = "raw", version = "1" } } }
end

local function by_id(msgs, id)
  for _, m in ipairs(msgs) do if m.id == id then return m end end
end

describe("agent-sandbox mcp, with the MCP SDK's client", function()
  it("initializes, lists the tools, and runs every tool kind", function()
    local dir = project()
    local f = assert(io.open(dir .. "/dot.png", "wb"))
    f:write(DOT_PNG)
    f:close()
    -- a one-page PDF by cairo (python3-cairo), read by page and as an image
    assert(sh.run(("/usr/bin/python3 -c %s %s"):format(sh.quote("import cairo, sys\n" ..
      "s = cairo.PDFSurface(sys.argv[1], 200, 100); c = cairo.Context(s); c.move_to(10, 50)\n" ..
      "c.show_text('From the PDF'); c.show_page(); s.finish()"), sh.quote(dir .. "/paper.pdf"))))
    local r = sdk("tools", dir, "--dir " .. sh.quote(dir) .. " --allow-shell")
    assert.equal("agent-sandbox", r.server.name)
    assert.is_table(r.capabilities.tools)
    assert.is_true(r.capabilities.resources.subscribe)
    assert.is_table(r.capabilities.logging)
    assert.matches("sandbox", r.instructions)
    for _, n in ipairs { "read_file", "write_file", "edit_file", "list_files", "find_files", "search_code",
      "file_exists", "delete_file", "create_directory", "move_file", "generate_from_template", "run_command", "run_shell",
      "process_output", "process_kill", "process_list" } do
      assert.truthy(r.annotations[n], n)
    end
    assert.is_true(r.annotations.read_file.readOnlyHint)
    assert.is_true(r.annotations.delete_file.destructiveHint)
    local c = r.calls
    for name, res in pairs(c) do
      if name ~= "traversal" and name ~= "absolute" and name ~= "bad_args" then
        assert.is_false(res.isError, name .. ": " .. res.text)
      end
    end
    assert.matches("hello\n%s+2\tworld", c.read_file.text)
    assert.matches("src/hello.txt:2: there", c.search_code.text)
    assert.matches("hello\nthere", c.run_command.text)
    assert.matches("42", c.run_shell.text)
    assert.matches("started", c.process_output.text)
    assert.matches("done", c.process_output.text)
    assert.matches("exited with code 0", c.process_output.text)
    assert.equal("Created made/gen.txt from the template (3 bytes).", c.generate_from_template.text)
    -- an image as MCP image content, through the SDK's result schema
    assert.same({ { type = "text" }, { type = "image", mimeType = "image/png", data = require("sandbox.base64").encode(DOT_PNG) } },
      r.image)
    assert.matches("1\tv=7", c.generated.text)
    -- a PDF: its page's text, and the page as image content (read by the
    -- document helper, which runs confined: refused, saying so, without Linux's layers)
    if hostcan.can("a PDF read through MCP", hostcan.layers()) then
      assert.matches("%-%-%- page 1 of 1\n%s+%d+\tFrom the PDF", r.pdf.text)
      assert.same({ "text", "image", "image/png" }, { r.page_image[1].type, r.page_image[2].type, r.page_image[2].mimeType })
      assert.matches("page 1 of a PDF, as 400×200 PNG image", r.page_image[1].text)
    else
      assert.matches("confinement could not be set up", r.pdf.text, 1, true)
    end
    assert.equal("42\n", sh.read_file(dir .. "/answer.txt"))
    assert.is_nil(sh.read_file(dir .. "/made/hello.txt"), "delete_file removed the directory")
    -- refusals are tool results the model can read, not protocol errors
    assert.is_true(c.traversal.isError)
    assert.matches("climbs above the sandbox root", c.traversal.text)
    assert.is_true(c.absolute.isError)
    assert.is_nil(c.absolute.text:find("root:x:0:0", 1, true))
    assert.is_true(c.bad_args.isError)
    assert.matches("unknown argument 'nope'", c.bad_args.text)
    assert.equal(-32602, r.unknown_tool.code)
    assert.equal(-32601, r.unknown_method.code)
  end)

  it("writes --audit-log: each tool call with its outcome, approvals, commands, a log that verifies", function()
    local dir = project()
    local log = backends.tmpdir("mcpaudit") .. "/audit.log"
    sdk("tools", dir, "--dir " .. sh.quote(dir) .. " --allow-shell --audit-log " .. sh.quote(log))
    local ok, n = require("sandbox.audit").verify(log)
    assert.is_true(ok, n)
    local calls, kinds = {}, {}
    for l in sh.read_file(log):gmatch("[^\n]+") do
      local e = json.decode(l)
      kinds[e.kind] = (kinds[e.kind] or 0) + 1
      if e.kind == "tool_call" then calls[#calls + 1] = e end
    end
    for _, k in ipairs { "created", "file", "command_start", "command_end", "approval", "tool_call", "disposed" } do
      assert.truthy(kinds[k], k)
    end
    local seen = {}
    for _, c in ipairs(calls) do seen[c.tool .. ":" .. tostring(c.ok)] = true end
    assert.truthy(seen["read_file:true"])
    assert.truthy(seen["run_command:true"])
    assert.truthy(seen["read_file:false"], "the traversal the client tried is a failed call")
  end)

  it("sends progress for a command that runs over a second, and a cancelled command loses its whole tree", function()
    local dir = project()
    local marker = procs.marker()
    local r = sdk("progress", dir, "--dir " .. sh.quote(dir) .. " --allow-shell --kill-grace 0.5", "MARKER=" .. marker .. " ")
    assert.is_true(#r.progress >= 2, json.encode(r.progress))
    for i = 2, #r.progress do assert.is_true(r.progress[i].progress > r.progress[i - 1].progress) end
    assert.matches("run_command has run for", r.progress[1].message)
    assert.is_false(r.result.isError)
    assert.is_true(r.running_before >= 3, "the tree was running")
    assert.equal("McpError", r.cancel)
    assert.matches("still here", r.after)
    assert.equal(0, r.running_after, "a process of the cancelled command is left")
    assert.equal(0, #procs.find("sleep " .. marker))
  end)

  it("serves the files as resources: list, text and binary reads, subscriptions to changes", function()
    local dir = project()
    local r = sdk("resources", dir, "--dir " .. sh.quote(dir) .. " --allow-shell")
    local uris = {}
    for _, e in ipairs(r.list) do uris[#uris + 1] = e.uri end
    assert.same({ "sandbox:///bin.dat", "sandbox:///latin1.txt", "sandbox:///notes.md", "sandbox:///with%20space.txt" }, uris)
    assert.equal("sandbox:///{+path}", r.templates[1].uriTemplate)
    assert.equal("# notes\n", r.text.text)
    assert.equal("text/markdown", r.text.mimeType)
    assert.equal("YQBi/w==", r.binary.blob) -- a\0b\377
    assert.is_nil(r.binary.text)
    assert.equal("sp\n", r.spaced.text)
    assert.equal("6XTpCg==", r.latin1.blob) -- invalid UTF-8 without a NUL is still no text
    assert.is_nil(r.latin1.text)
    assert.equal(-32002, r.missing.error)
    assert.equal(-32602, r.escape.error)
    assert.matches("climbs above", r.escape.message)
    assert.equal(-32602, r.foreign.error)
    assert.same({ "sandbox:///notes.md" }, r.after_tool)
    assert.same({ "sandbox:///notes.md", "sandbox:///later.txt" }, r.after_command)
    assert.same(r.after_command, r.after_unsubscribe, "an unsubscribed file was reported")
  end)

  it("--approve ask asks through elicitation, and refuses where the client cannot be asked", function()
    local dir = project()
    local r = sdk("approve", dir, "--dir " .. sh.quote(dir) .. " --approve ask")
    assert.is_false(r.accepted.isError)
    assert.is_true(r.declined.isError)
    assert.matches("declined to run write_file", r.declined.text)
    assert.equal(2, #r.asked, "read-only tools are not asked about")
    assert.matches("write_file", r.asked[1])
    assert.is_true(r.no_capability.isError)
    assert.matches("cannot be asked", r.no_capability.text)
    assert.equal("x", sh.read_file(dir .. "/yes.txt"))
    assert.is_nil(sh.read_file(dir .. "/no.txt"))
    assert.is_nil(sh.read_file(dir .. "/plain.txt"))
  end)

  it("logs at the level the client sets", function()
    local dir = project()
    local r = sdk("logging", dir, "--dir " .. sh.quote(dir))
    assert.equal(0, r.default_level)
    assert.equal(2, #r.logs)
    assert.same({ "info", "warning" }, { r.logs[1].level, r.logs[2].level })
    assert.equal("read_file", r.logs[2].data.tool)
  end)

  it("disposes the sandbox at end of input and on SIGTERM: no process left", function()
    local dir = project()
    local marker = procs.marker()
    local r = sdk("shutdown", dir, "--dir " .. sh.quote(dir), "MARKER=" .. marker .. " ")
    for _, how in ipairs { "eof", "sigterm" } do
      local said = how .. ": " .. json.encode(r[how])
      assert.equal(1, r[how].before, said)
      assert.equal(0, r[how].after, "a command outlived the server, " .. said)
      assert.is_false(r[how].server_alive, said)
    end
  end)

  it("works with the MCP Inspector's CLI mode", function()
    local dir = project()
    local insp = NPM .. "/node_modules/.bin/mcp-inspector"
    local home = backends.tmpdir("inspector-home")
    local base = ("HOME=%s node %s --cli sh -c %s"):format(home, insp,
      sh.quote("exec " .. server_cmd("--dir " .. sh.quote(dir))))
    local ok, out = sh.run(base .. " --method tools/list")
    assert(ok, out)
    local list = json.decode(out)
    assert.is_table(list and list.tools, out)
    assert.is_true(#list.tools >= 10)
    ok, out = sh.run(base .. " --method tools/call --tool-name read_file --tool-arg path=notes.md")
    assert(ok, out)
    local res = json.decode(out)
    assert.is_false(res.isError)
    assert.matches("# notes", res.content[1].text)
  end)
end)

describe("agent-sandbox mcp, the documented client configurations (docs/CLI.md)", function()
  local section = assert(sh.read_file("docs/CLI.md"))
  -- the README's commands name agent-sandbox on PATH: this tree's bin/, run by lua5.4 from build/
  local path_env = ("env -u SANDBOX_BUILD PATH=%s/bin:$PATH "):format(os.getenv("PWD") or ".")

  it("the Claude Code .mcp.json block starts a server the SDK's client can use", function()
    local block = assert(section:match("```json\n(.-)```"), "no .mcp.json block")
    local cfg = assert(json.decode(block), "the .mcp.json block is not JSON")
    local server = cfg.mcpServers["agent-sandbox"]
    assert.equal("agent-sandbox", server.command)
    local dir = project()
    local args = {}
    for _, a in ipairs(server.args) do args[#args + 1] = sh.quote(a) end
    local report = sdk("tools", dir, nil, path_env, { cwd = dir, argv = server.command .. " " .. table.concat(args, " ") })
    assert.equal(16, #report.tools) -- run_shell included: the block passes --allow-shell
    assert.equal("42\n", sh.read_file(dir .. "/answer.txt"))
    -- and exactly the block's command line, from the project directory, answers initialize
    local ok, out = sh.run(("cd %s && printf '%%s\\n' %s | %s%s %s"):format(sh.quote(dir), sh.quote(init()),
      path_env, server.command, table.concat(args, " ")))
    assert(ok, out)
    assert.matches('"serverInfo":{"name":"agent%-sandbox"', out)
  end)

  it("the Codex config.toml block says the same as the .mcp.json block", function()
    local toml = assert(section:match("```toml\n(.-)```"), "no config.toml block")
    local cfg = json.decode(assert(section:match("```json\n(.-)```"))).mcpServers["agent-sandbox"]
    local tmp = backends.tmpdir("toml")
    local f = assert(io.open(tmp .. "/config.toml", "w"))
    f:write(toml)
    f:close()
    local ok, out = sh.run(("python3 -c 'import json,sys,tomllib; print(json.dumps(tomllib.load(open(sys.argv[1],\"rb\"))))' %s")
      :format(tmp .. "/config.toml"))
    assert(ok, out)
    local parsed = json.decode(out).mcp_servers["agent-sandbox"]
    assert.equal(cfg.command, parsed.command)
    assert.same(cfg.args, parsed.args)
  end)

  it("the Inspector line lists the tools", function()
    local line = assert(section:match("npx @modelcontextprotocol/inspector (%-%-cli [^\n]+)"), "no Inspector line")
    local dir = project()
    local ok, out = sh.run(("cd %s && HOME=%s %snode %s/node_modules/.bin/mcp-inspector %s"):format(sh.quote(dir),
      backends.tmpdir("inspector-home"), path_env, NPM, line))
    assert(ok, out)
    assert.is_true(#json.decode(out).tools >= 10)
  end)
end)

describe("agent-sandbox mcp, the protocol's rules", function()
  it("negotiates the version: each it knows is kept, an unknown one gets the latest", function()
    for _, case in ipairs {
      { "2025-11-25", "2025-11-25" }, { "2025-06-18", "2025-06-18" }, { "2025-03-26", "2025-03-26" },
      { "2024-11-05", "2024-11-05" }, { "2024-10-07", "2024-10-07" }, { "1999-01-01", "2025-11-25" },
    } do
      local r = raw { init(case[1]) }
      assert.equal(case[2], r.msgs[1].result.protocolVersion, case[1])
    end
  end)

  it("leaves out tool annotations for clients older than 2025-03-26", function()
    local list = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    local old = raw { init("2024-11-05"), list }
    local new = raw { init("2025-03-26"), list }
    assert.is_nil(by_id(old.msgs, 1).result.tools[1].annotations)
    assert.is_table(by_id(new.msgs, 1).result.tools[1].annotations)
  end)

  it("takes batches where the version allows them (up to 2025-03-26) and refuses them after", function()
    local batch = '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},'
      .. '{"jsonrpc":"2.0","id":2,"method":"nope"}]'
    local r = raw { init("2025-03-26"), batch, "[]" }
    local answers = r.msgs[2]
    assert.equal(2, #answers, r.raw)
    assert.same({}, by_id(answers, 1).result)
    assert.equal(-32601, by_id(answers, 2).error.code)
    assert.equal(-32600, r.msgs[3].error.code)
    r = raw { init("2025-06-18"), batch }
    assert.equal(-32600, r.msgs[2].error.code)
    assert.matches("batches are not supported in protocol version 2025%-06%-18", r.msgs[2].error.message)
  end)

  it("answers malformed messages with the JSON-RPC error codes, and keeps serving", function()
    local r = raw {
      "{not json", "42", '"text"', '{"id":5,"method":"ping"}', '{"jsonrpc":"2.0","id":null,"method":"ping"}',
      '{"jsonrpc":"2.0","id":6,"method":"tools/list"}', -- before initialize
      '{"jsonrpc":"2.0","id":7,"method":"ping"}', -- ping is always fine
      init(),
      '{"jsonrpc":"2.0","id":8,"method":"no/such/method"}',
      '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope"}}',
      '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{}}',
      '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"read_file","arguments":"notes.md"}}',
      '{"jsonrpc":"2.0","id":12,"method":"logging/setLevel","params":{"level":"loud"}}',
      '{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"cursor":"x"}}',
      '{"jsonrpc":"2.0","id":14,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}',
      '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.md"}}}\r',
      '{"jsonrpc":"2.0","id":"s","method":"ping"}',
    }
    local m = r.msgs
    local expect = {
      { json.null, -32700 }, { json.null, -32600 }, { json.null, -32600 }, { 5, -32600 }, { json.null, -32600 },
      { 6, -32600 },
    }
    for i, e in ipairs(expect) do
      assert.equal(e[2], m[i].error and m[i].error.code, "message " .. i .. ": " .. json.encode(m[i]))
      if e[1] ~= json.null then assert.equal(e[1], m[i].id) else assert.is_true(json.is_null(m[i].id)) end
    end
    assert.same({}, by_id(m, 7).result)
    assert.equal(-32601, by_id(m, 8).error.code)
    for _, id in ipairs { 9, 10, 11, 12, 13 } do assert.equal(-32602, by_id(m, id).error.code, id) end
    assert.equal(-32600, by_id(m, 14).error.code)
    assert.matches("# notes", by_id(m, 15).result.content[1].text) -- CRLF framing accepted
    assert.same({}, by_id(m, "s").result)
    -- every line of stdout is one JSON-RPC message
    for _, x in ipairs(m) do assert.equal("2.0", x.jsonrpc) end
    assert.is_true(r.ok, r.err)
  end)

  it("writes nothing but protocol messages to stdout, whatever a tool prints", function()
    local r = raw { init(), '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_command",'
      .. '"arguments":{"command":["sh","-c","echo NOT-PROTOCOL; echo NOT-PROTOCOL >&2"]}}}' }
    assert.equal(2, #r.msgs)
    for l in r.raw:gmatch("[^\n]+") do assert.matches("^{.*}$", l) end
    assert.matches("NOT%-PROTOCOL", by_id(r.msgs, 1).result.content[1].text)
  end)

  it("keeps fd 1 for the protocol: a stray print goes to stderr", function()
    local tmp = backends.tmpdir("channel")
    local ok, out = sh.run(("printf 'short\\n%%s\\nlast-no-newline' %s | %s -e %s > %s/out 2> %s/err"):format(("x"):rep(40), sh.lua(false), sh.quote([[
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      package.cpath = "]] .. sh.build .. [[/?.so;" .. package.cpath
      local core = require "sandbox.core"
      local ch = core.channel { stdio = true, max_line = 16 }
      print("stray")
      io.stdout:flush()
      assert(ch:write("protocol\n"))
      local l1 = ch:read(1)
      local a, why = ch:read(1)
      local l3 = ch:read(1)
      local b, eof = ch:read(1)
      io.stderr:write(table.concat({ l1, tostring(a), why, l3, tostring(b), eof }, ","), "\n")
      ch:close()]]), tmp, tmp))
    assert(ok, out)
    assert.equal("protocol\n", sh.read_file(tmp .. "/out"))
    assert.matches("stray\nshort,nil,too_long,last%-no%-newline,nil,eof", sh.read_file(tmp .. "/err"))
  end)

  it("serves a VirtualSandbox from a Lua config, with the config's tools and approval", function()
    local tmp = backends.tmpdir("mcpcfg")
    local f = assert(io.open(tmp .. "/cfg.lua", "w"))
    f:write('files = { ["docs/a.txt"] = "from the config\\n" }\nmax_read_bytes = "1KB"\n'
      .. 'approve = "never"\ntools = { exclude = { "delete_file" } }\n')
    f:close()
    local r = raw({ init(),
      '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"docs/a.txt"}}}',
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"b.txt","content":"x"}}}',
    }, "--virtual --config " .. tmp .. "/cfg.lua")
    local names = {}
    for _, t in ipairs(by_id(r.msgs, 1).result.tools) do names[t.name] = true end
    assert.is_nil(names.delete_file)
    assert.is_nil(names.run_command, "a VirtualSandbox runs no commands")
    assert.matches("from the config", by_id(r.msgs, 2).result.content[1].text)
    assert.is_true(by_id(r.msgs, 3).result.isError)
    assert.matches("refuses destructive tools", by_id(r.msgs, 3).result.content[1].text)
    for _, case in ipairs { { 'approve = "maybe"', "approve must be one of" },
                            { 'tools = { exclud = {} }', "unknown option 'exclud'" } } do
      f = assert(io.open(tmp .. "/bad.lua", "w"))
      f:write(case[1])
      f:close()
      local ok, out = sh.run(server_cmd("--virtual --config " .. tmp .. "/bad.lua") .. " < /dev/null")
      assert.is_false(ok)
      assert.matches(case[2], out)
    end
  end)

  it("survives hundreds of mangled messages, answering each that needs it, stdout all JSON", function()
    math.randomseed(20)
    local valid = {
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.md"}}}',
      '{"jsonrpc":"2.0","id":"x","method":"resources/read","params":{"uri":"sandbox:///notes.md"}}',
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
      '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":null}}',
    }
    local junk = { "{", "}", "[", "]", '"', ":", ",", "null", "\\u0000", "\0", "\255", "1e999", "-", "true" }
    local lines_in = { init() }
    for i = 1, 300 do
      local s = valid[i % #valid + 1]
      for _ = 1, math.random(0, 3) do
        local at = math.random(1, #s)
        s = s:sub(1, at - 1) .. junk[math.random(#junk)] .. s:sub(at + 1)
      end
      lines_in[#lines_in + 1] = s
    end
    lines_in[#lines_in + 1] = '{"jsonrpc":"2.0","id":"last","method":"ping"}'
    local r = raw(lines_in)
    assert.is_true(r.ok, r.err)
    assert.same({}, by_id(r.msgs, "last").result)
    assert.is_true(#r.msgs > 50)
    assert.is_nil(r.err:find("internal error", 1, true), r.err)
    for _, m in ipairs(r.msgs) do
      if m.error then assert.is_nil(m.error.message:find("Internal error", 1, true), m.error.message) end
    end
  end)

  it("serves an OverlaySandbox: the agent's writes wait for agent-sandbox review --commit", function()
    local dir, state = project(), backends.tmpdir("mcpstate")
    os.remove(state) -- made by the server
    local call = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"made.txt","content":"by the agent\\n"}}}'
    local r = raw({ init(), call }, "--overlay " .. dir .. " --state-dir " .. state)
    assert.is_false(by_id(r.msgs, 1).result.isError, r.raw)
    assert.is_nil(sh.read_file(dir .. "/made.txt"), "the base was written")
    local review = sh.lua(false) .. " " .. sh.quote(BIN) .. " review --overlay " .. dir .. " --state-dir " .. state
    local ok, out = sh.run(review)
    assert(ok, out)
    assert.matches("added%s+made%.txt", out)
    assert.matches("%+by the agent", out)
    ok, out = sh.run(review .. " --commit")
    assert(ok, out)
    assert.matches("committed 1 change", out)
    assert.equal("by the agent\n", sh.read_file(dir .. "/made.txt"))
  end)

  it("serves a RemoteSandbox (--remote): every tool kind on the engine, the sandbox killed at exit", function()
    local peer_lib = require "support.e2b_peer"
    local KEY = "mcp-spec-remote-key-0123"
    local peer = peer_lib.start(KEY)
    local function listed()
      local code, body = peer_lib.http("GET", peer.api .. "/v2/sandboxes", { ["X-API-Key"] = KEY })
      assert.equal(200, code, body)
      return #json.decode(body)
    end
    local where = "--remote --api-url " .. peer.api .. " --envd-url " .. peer.envd
    local ok, why = pcall(function()
      local r = sdk("tools", project(), where .. " --allow-shell", "E2B_API_KEY=" .. KEY .. " ")
      assert.matches("remote sandbox", r.instructions)
      for name, res in pairs(r.calls) do
        if name ~= "traversal" and name ~= "absolute" and name ~= "bad_args" then
          assert.is_false(res.isError, name .. ": " .. res.text)
        end
      end
      assert.matches("hello\n%s+2\tworld", r.calls.read_file.text)
      assert.matches("src/hello.txt:2: there", r.calls.search_code.text)
      assert.matches("42", r.calls.run_shell.text)
      assert.matches("exited with code 0", r.calls.process_output.text)
      assert.is_true(r.calls.traversal.isError)
      assert.is_true(r.calls.absolute.isError)
      assert.is_nil(r.calls.absolute.text:find("root:x:0:0", 1, true))
      assert.equal(0, listed()) -- the server's sandbox went with it
      -- the key is never a flag (a command line is every user's to read), and --keep leaves the sandbox
      local function serve(env, args) return sh.run(env .. " " .. server_cmd(where .. args) .. " < /dev/null 2>&1 >/dev/null") end
      local ok1, out1 = serve("env -u E2B_API_KEY", " --api-key " .. KEY)
      assert.is_false(ok1)
      assert.matches("unknown flag '%-%-api%-key'", out1)
      local ok2, out2 = serve("env -u E2B_API_KEY", " --keep")
      assert.is_false(ok2)
      assert.matches("api_key", out2)
      assert.equal(0, listed())
      assert(serve("env E2B_API_KEY=" .. KEY, " --keep"))
      assert.equal(1, listed())
    end)
    peer.stop()
    assert(ok, why)
  end)

  it("without --dir serves the client's first root when it offers roots", function()
    local dir = project()
    local r = sdk("roots", dir, "", nil, { cwd = "/" }) -- started in /, which it would refuse
    assert.equal(1, r.asked)
    assert.matches("notes%.md", r.list)
    assert.matches(dir:gsub("%p", "%%%0"), r.pwd)
  end)

  it("refuses to serve /, the home directory or one above it unless --allow-broad-dir says so", function()
    local list = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
    local function served(args, cwd, home)
      local tmp = backends.tmpdir("mcpbroad")
      local f = assert(io.open(tmp .. "/in", "wb"))
      f:write(init(), "\n", list, "\n")
      f:close()
      sh.run(("cd %s && HOME=%s %s < %s/in > %s/out 2> %s/err"):format(sh.quote(cwd), sh.quote(home),
        server_cmd(args), tmp, tmp, tmp))
      local m = by_id((function()
        local t = {}
        for l in (sh.read_file(tmp .. "/out") or ""):gmatch("[^\n]+") do t[#t + 1] = json.decode(l) end
        return t
      end)(), 1)
      return m, (sh.read_file(tmp .. "/err") or "")
    end
    local home = project()
    -- without --dir, from / and from the home directory: no tools, the reason
    for _, c in ipairs { { "/", "the whole file system" }, { home, "your home directory" },
                         { home:match("^(.*)/[^/]+$"), "above your home" } } do
      local m, err = served("", c[1], home)
      assert.is_table(m and m.error, c[1])
      assert.matches("refusing to serve", m.error.message)
      assert.matches(c[2], m.error.message)
      assert.matches("%-%-allow%-broad%-dir", err .. m.error.message)
    end
    -- named with --dir, it is refused before serving; with --allow-broad-dir it serves
    local r = raw({ init(), list }, "--dir " .. sh.quote(home) .. " --allow-broad-dir")
    assert.is_table(by_id(r.msgs, 1).result.tools)
    local ok, out = sh.run(("HOME=%s %s < /dev/null"):format(sh.quote(home), server_cmd("--dir " .. sh.quote(home))))
    assert.is_false(ok)
    assert.matches("refusing to serve", out)
  end)

  it("--read-only binds run_command too: a command changes nothing", function()
    local dir = project()
    local call = json.encode { jsonrpc = "2.0", id = 1, method = "tools/call",
      params = { name = "run_command", arguments = { command = { "sh", "-c", "echo x > made.txt; rm notes.md; echo end" } } } }
    local r = raw({ init(), call }, "--dir " .. sh.quote(dir) .. " --read-only")
    local res = by_id(r.msgs, 1).result
    -- without Linux's layers nothing binds a command to it: refused, saying why
    assert.matches(hostcan.layers() and "Read%-only file system" or "only confinement", json.encode(res))
    assert.is_nil(sh.read_file(dir .. "/made.txt"))
    assert.equal("# notes\n", sh.read_file(dir .. "/notes.md"))
  end)

  it("exits 0 at end of input, and refuses bad flags before serving", function()
    local r = raw { init() }
    assert.is_true(r.ok, r.err)
    for _, case in ipairs {
      { "--max-read-byte 10", "unknown flag '%-%-max%-read%-byte' %(did you mean '%-%-max%-read%-bytes'%?%)" },
      { "--virtual --allow-shell", "%-%-allow%-shell is not an option of the virtual sandbox" },
      { "--approve maybe", "%-%-approve must be one of always, ask, never" },
      { "--dir /x --virtual", "choose one of" },
      { "--overlay /nonexistent-overlay-base", "nonexistent" },
      { "--dir /tmp --state-dir /tmp/x", "not an option of the container sandbox" },
      { "--max-read-bytes 10XB", "'10XB' is not a size" },
      { "--dir /nonexistent-dir-for-mcp", "nonexistent" },
    } do
      local ok, out = sh.run(server_cmd(case[1]) .. " < /dev/null")
      assert.is_false(ok, case[1])
      assert.matches(case[2], out, 1)
    end
  end)
end)
