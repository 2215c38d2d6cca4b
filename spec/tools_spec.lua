-- Tool tables (SPEC §7): what a model sees and gets, on every backend;
-- provider formats encoded with cjson; dispatch; approval; custom tools.
local sandbox = require "sandbox"
local backends = require "support.backends"
local cjson = require "cjson"

local T = sandbox.tools

local FILES = {
  ["README.md"] = "# demo\n",
  ["src/main.lua"] = "local function greet(n)\n  return 'hi ' .. n\nend\nprint(greet('x'))\nprint(greet('y'))\n",
  ["src/util.lua"] = "-- TODO: helpers\nreturn {}\n",
  ["data.bin"] = "\0\1\2binary",
}

local function ok(r)
  assert.is_false(r.is_error, r.content)
  return r.content
end

local function bad(r, pattern)
  assert.is_true(r.is_error, r.content)
  if pattern then assert.matches(pattern, r.content) end
  return r.content
end

for _, be in ipairs(backends.list) do
  describe(be.name .. " tools:", function()
    local sb, t
    before_each(function()
      local opts = be.kind ~= "virtual" and { allow_shell = true, kill_grace = 0.2 } or {}
      -- (the remote backend has no local confinement to turn off)
      if be.kind ~= "virtual" and be.kind ~= "remote" and os.getenv("SANDBOX_TEST_UNCONFINED") then opts.confine = false end
      sb = be.new(opts, FILES)
      t = sb:tools()
    end)
    after_each(function() sb:dispose() end)

    it("has the SPEC's tools, with valid names and flags", function()
      local want = { "read_file", "write_file", "edit_file", "list_files", "find_files", "search_code",
                     "file_exists", "delete_file", "create_directory", "move_file", "generate_from_template" }
      if be.kind ~= "virtual" then
        for _, n in ipairs { "run_command", "run_shell", "process_output", "process_kill", "process_list" } do
          want[#want + 1] = n
        end
      end
      local names = {}
      for i, x in ipairs(t) do
        names[i] = x.name
        assert.matches("^[a-zA-Z0-9_-]+$", x.name)
        assert.is_true(#x.name <= 64)
        assert.is_true(#x.description > 40, x.name)
        assert.is_boolean(x.read_only)
        assert.is_boolean(x.destructive)
        assert.is_false(x.read_only and x.destructive)
        assert.equal("object", x.parameters.type)
        assert.equal(x, t[x.name])
      end
      assert.same(want, names)
      for _, n in ipairs { "read_file", "list_files", "find_files", "search_code", "file_exists" } do
        assert.is_true(t[n].read_only, n)
      end
      for _, n in ipairs { "write_file", "edit_file", "delete_file", "move_file", "generate_from_template" } do
        assert.is_true(t[n].destructive, n)
      end
    end)

    describe("read_file", function()
      it("numbers lines", function()
        assert.equal("     1\t# demo", ok(t.read_file.execute { path = "README.md" }))
      end)

      it("reads a window with offset and limit, and says how many lines there are", function()
        local text = ok(t.read_file.execute { path = "src/main.lua", offset = 2, limit = 2 })
        assert.equal("     2\t  return 'hi ' .. n\n     3\tend\n[showing lines 2-3 of 5; use offset=4 to read on]", text)
        assert.matches("past its end", ok(t.read_file.execute { path = "src/main.lua", offset = 50 }))
      end)

      it("cuts very long lines and notes it", function()
        sb:write_file("long.txt", ("x"):rep(3000) .. "\nshort\n")
        local text = ok(t.read_file.execute { path = "long.txt" })
        assert.matches("%[%.%.%. line cut: 1000 more characters%]", text)
        assert.matches("short", text)
      end)

      it("refuses binary files clearly", function()
        bad(t.read_file.execute { path = "data.bin" }, "binary file")
      end)

      it("turns errors into actionable messages", function()
        bad(t.read_file.execute { path = "nope.lua" }, "does not exist.*list_files")
        bad(t.read_file.execute { path = "../../etc/passwd" }, "outside the sandbox")
        bad(t.read_file.execute { path = "src" }, "directory")
      end)
    end)

    describe("write_file and edit_file", function()
      it("creates files and parents", function()
        assert.matches("Created src/new/x.txt %(5 bytes%)", ok(t.write_file.execute { path = "src/new/x.txt", content = "hello" }))
        assert.equal("hello", sb:read_file("src/new/x.txt"))
      end)

      it("refuses to overwrite a file that was not read, then allows it after reading", function()
        bad(t.write_file.execute { path = "README.md", content = "x" }, "have not read it.*read_file first")
        assert.equal("# demo\n", sb:read_file("README.md"))
        ok(t.read_file.execute { path = "README.md" })
        ok(t.write_file.execute { path = "./README.md", content = "new" })
        assert.equal("new", sb:read_file("README.md"))
        ok(t.write_file.execute { path = "README.md", content = "again" }) -- its own write counts as read
      end)

      it("refuses to edit a file that changed since it was read", function()
        ok(t.read_file.execute { path = "src/util.lua" })
        local deadline = os.time() + 2
        local before = sb:stat("src/util.lua").mtime
        repeat sb:write_file("src/util.lua", "changed by someone else\n") until sb:stat("src/util.lua").mtime ~= before or os.time() > deadline
        bad(t.edit_file.execute { path = "src/util.lua", old_string = "changed", new_string = "x" }, "changed since you last read it")
      end)

      it("can switch the stale-write guard off", function()
        local t2 = sb:tools { stale_guard = false }
        ok(t2.write_file.execute { path = "README.md", content = "blind" })
      end)

      it("edits an exact match, and explains no match and several matches", function()
        ok(t.read_file.execute { path = "src/main.lua" })
        bad(t.edit_file.execute { path = "src/main.lua", old_string = "nothing like this", new_string = "x" },
          "not found.*whitespace")
        bad(t.edit_file.execute { path = "src/main.lua", old_string = "print(greet", new_string = "x" },
          "appears 2 times in src/main.lua %(lines 4, 5%).*replace_all")
        assert.equal("Edited src/main.lua: replaced 1 occurrence.",
          ok(t.edit_file.execute { path = "src/main.lua", old_string = "'hi '", new_string = "'hello '" }))
        assert.equal("Edited src/main.lua: replaced 3 occurrences.",
          ok(t.edit_file.execute { path = "src/main.lua", old_string = "greet(", new_string = "welcome(", replace_all = true }))
        assert.matches("print%(welcome%('x'%)%)\nprint%(welcome%('y'%)%)", sb:read_file("src/main.lua"))
        bad(t.edit_file.execute { path = "src/main.lua", old_string = "", new_string = "x" }, "must not be empty")
      end)
    end)

    describe("listing and searching", function()
      it("list_files shows a tree with sizes, and caps entries", function()
        local text = ok(t.list_files.execute {})
        assert.equal(("README.md (7 bytes)\ndata.bin (9 bytes)\nsrc/\n  main.lua (%d bytes)\n  util.lua (27 bytes)")
          :format(#FILES["src/main.lua"]), text)
        assert.equal("README.md (7 bytes)\ndata.bin (9 bytes)\nsrc/", ok(t.list_files.execute { depth = 1 }))
        assert.matches("stopped after 2 entries", ok(t.list_files.execute { max_entries = 2 }))
        bad(t.list_files.execute { path = "nope" }, "does not exist")
      end)

      it("find_files globs and notes truncation", function()
        assert.equal("src/main.lua\nsrc/util.lua", ok(t.find_files.execute { pattern = "**/*.lua" }))
        assert.matches("only the first 1 matches", ok(t.find_files.execute { pattern = "**", max_results = 1 }))
        assert.equal("No files match *.py.", ok(t.find_files.execute { pattern = "*.py" }))
      end)

      it("search_code returns path:line: text, with include and notes", function()
        assert.equal("src/util.lua:1: -- TODO: helpers", ok(t.search_code.execute { pattern = "TODO" }))
        assert.equal("src/main.lua:4: print(greet('x'))\nsrc/main.lua:5: print(greet('y'))",
          ok(t.search_code.execute { pattern = "print", include = "*.lua" }))
        assert.matches("only the first 1 results", ok(t.search_code.execute { pattern = "e", max_results = 1 }))
        assert.equal("src/main.lua\nsrc/util.lua", ok(t.search_code.execute { pattern = "return", output_mode = "files", type = "lua" }))
        assert.matches("^src/main.lua: %d+", ok(t.search_code.execute { pattern = "print", output_mode = "count" }))
        assert.matches("src/main.lua%-3%- ", ok(t.search_code.execute { pattern = "print", include = "*.lua", context = 1 }))
        assert.equal("No matches for zzz.", ok(t.search_code.execute { pattern = "zzz" }))
        bad(t.search_code.execute { pattern = "(" }, "regular expression")
      end)

      it("file_exists says what is there", function()
        assert.equal("README.md exists: a file of 7 bytes.", ok(t.file_exists.execute { path = "README.md" }))
        assert.equal("src exists: a directory.", ok(t.file_exists.execute { path = "src" }))
        assert.equal("nope does not exist.", ok(t.file_exists.execute { path = "nope" }))
        bad(t.file_exists.execute { path = "../x" }, "outside the sandbox")
      end)
    end)

    describe("changing the tree", function()
      it("create_directory, move_file and delete_file", function()
        ok(t.create_directory.execute { path = "out/deep" })
        assert.equal("Moved README.md to out/R.md.", ok(t.move_file.execute { source = "README.md", destination = "out/R.md" }))
        ok(t.write_file.execute { path = "x.md", content = "x" })
        bad(t.move_file.execute { source = "x.md", destination = "out/R.md" }, "already exists; pass overwrite=true")
        ok(t.move_file.execute { source = "x.md", destination = "out/R.md", overwrite = true })
        bad(t.delete_file.execute { path = "out" }, "not empty; pass recursive=true")
        assert.equal("Deleted out.", ok(t.delete_file.execute { path = "out", recursive = true }))
        assert.is_false(sb:exists("out"))
        bad(t.delete_file.execute { path = "." }, "cannot be removed")
      end)
    end)

    describe("bad calls from a model", function()
      it("never raise: wrong types, missing and unknown arguments, malformed JSON", function()
        bad(t.read_file.execute { path = 42 }, "argument 'path' must be a string")
        bad(t.read_file.execute {}, "missing required argument 'path'")
        bad(t.read_file.execute { path = "a", colour = "red" }, "unknown argument 'colour'.*takes: limit, offset, page_image, pages, path")
        bad(t.read_file.execute("{not json"), "not valid JSON")
        bad(t.read_file.execute(42), "must be a JSON object")
        bad(t.read_file.execute { path = "README.md", offset = 0 }, "at least 1")
        bad(t.read_file.execute { path = "README.md", offset = 1.5 }, "must be an integer")
        assert.matches("demo", ok(t.read_file.execute('{"path": "README.md", "offset": null}')))
      end)
    end)

    if be.commands == false then
      it("run_command fails closed where commands cannot run, saying why", function()
        bad(t.run_command.execute { command = { "true" } }, "namespace")
      end)
    elseif be.kind ~= "virtual" then
      describe("commands", function()
        local function run(args) return t.run_command.execute(args) end

        it("run_command reports exit code, duration and output", function()
          local text = ok(run { command = { "sh", "-c", "echo out; echo err >&2; exit 3" } })
          assert.matches("^Exit code: 3\nDuration: [%d.]+ s\nstdout:\nout\n\nstderr:\nerr\n$", text)
        end)

        it("run_command reports a timeout with partial output", function()
          local text = ok(run { command = { "sh", "-c", "echo started; sleep 5" }, timeout_seconds = 0.3 })
          assert.matches("timed out after 0.30 s and was killed %(SIGTERM%)", text)
          assert.matches("started", text)
        end)

        it("run_command reports signals and long output with the dropped amount", function()
          assert.matches("killed by SIGKILL %(exit code 137%)", ok(run { command = { "sh", "-c", "kill -KILL $$" } }))
          local t2 = sb:tools { max_output = 1000 }
          local text = ok(t2.run_command.execute { command = { "seq", "1", "100000" } })
          assert.matches("characters omitted", text)
          assert.matches("^Exit code: 0", text)
          assert.matches("\n1\n2\n3\n", text)
          assert.matches("99999\n100000\n$", text)
        end)

        it("lets the host's on_wait in while a foreground command runs (progress, cancellation)", function()
          local calls = {}
          local t2 = sb:tools { on_wait = function(h, info)
            calls[#calls + 1] = info.tool
            if info.elapsed > 0.3 then h:kill() end
          end, exclude = { "run_shell" } }
          local text = ok(t2.run_command.execute { command = { "sleep", "10" } })
          assert.matches("killed by SIGTERM", text)
          assert.is_true(#calls >= 2)
          assert.equal("run_command", calls[1])
          calls = {}
          ok(t2.run_command.execute { command = { "sleep", "0.2" }, background = true })
          assert.same({}, calls, "a background start is not waited for")
        end)

        it("reports spawn failures as errors with advice", function()
          bad(run { command = { "no-such-program" } }, "command not found")
          bad(run { command = {} }, "needs at least 1 item")
          bad(run { command = { "ls" }, cwd = "../.." }, "outside the sandbox")
        end)

        it("runs background processes and reads, lists and kills them", function()
          local text = ok(run { command = { "sh", "-c", "echo ready; sleep 30" }, background = true })
          local id = tonumber(text:match("Started process (%d+)"))
          assert.matches("process_output with id " .. id, text)
          local out = ok(t.process_output.execute { id = id, wait_seconds = 5 })
          assert.matches("Process " .. id .. " is running%.\nstdout:\nready", out)
          assert.matches(id .. "\tpid %d+\trunning", ok(t.process_list.execute {}))
          assert.matches("Stopped process " .. id, ok(t.process_kill.execute { id = id }))
          assert.matches("killed by SIGTERM", ok(t.process_list.execute {}))
          bad(t.process_output.execute { id = 999 }, "no process 999.*Known processes: " .. id)
        end)

        it("process_output waits for the exit once both streams have ended", function()
          local text = ok(run { command = { "sh", "-c", "echo bye; exec >&- 2>&-; sleep 0.3; exit 4" }, background = true })
          local id = tonumber(text:match("Started process (%d+)"))
          -- the command closes its output 0.3 s before it exits: a call after
          -- the end of both streams waits for the exit instead of saying
          -- "running" (a confined command's output may end only at its exit)
          local out = ""
          for _ = 1, 3 do
            out = out .. ok(t.process_output.execute { id = id, wait_seconds = 1 })
            if out:find("exited") then break end
          end
          assert.matches("Process " .. id .. " exited with code 4", out)
          assert.matches("bye", out)
        end)

        it("offers run_shell only when the shell is allowed", function()
          assert.equal("a|b\n", ok(t.run_shell.execute { script = "printf 'a|b\\n' | cat" }):match("stdout:\n(.*)$"))
          local s2 = be.new({ confine = os.getenv("SANDBOX_TEST_UNCONFINED") and false or nil })
          local t2 = s2:tools()
          assert.is_nil(t2.run_shell)
          assert.is_table(t2.run_command)
          s2:dispose()
        end)
      end)
    end
  end)
end

describe("tool sets", function()
  local sb
  before_each(function() sb = sandbox.virtual { files = FILES } end)
  after_each(function() sb:dispose() end)

  it("only, exclude, rename and read_only select and name tools", function()
    local t = sb:tools { only = { "read_file", "write_file", "list_files" }, exclude = { "list_files" },
                         rename = { read_file = "view" } }
    assert.equal(2, #t)
    assert.same({ "view", "write_file" }, { t[1].name, t[2].name })
    assert.is_table(t.view)
    local ro = sb:tools { read_only = true }
    for _, x in ipairs(ro) do assert.is_true(x.read_only, x.name) end
    assert.is_nil(ro.write_file)
    assert.has_error(function() sb:tools { rename = { read_file = "bad name" } } end)
    assert.has_error(function() sb:tools { rename = { read_file = "list_files" } } end, "tools: two tools are named 'list_files'")
    assert.has_error(function() sb:tools { onyl = {} } end)
  end)

  it("approve runs before destructive tools only, and a refusal reaches the model with its reason", function()
    local asked = {}
    local answer = true
    local t = sb:tools { stale_guard = false, approve = function(call)
      asked[#asked + 1] = call.name .. ":" .. (call.arguments.path or "")
      return answer
    end }
    ok(t.read_file.execute { path = "README.md" })
    ok(t.list_files.execute {})
    ok(t.write_file.execute { path = "a.txt", content = "1" })
    answer = false
    assert.equal("The user declined to run delete_file. Do not retry it unchanged.",
      bad(t.delete_file.execute { path = "a.txt" }))
    answer = "deleting is not allowed today"
    bad(t.delete_file.execute { path = "a.txt" }, "declined to run delete_file: deleting is not allowed today")
    assert.is_true(sb:exists("a.txt"))
    assert.same({ "write_file:a.txt", "delete_file:a.txt", "delete_file:a.txt" }, asked)
    local t2 = sb:tools { approve = function() error("approval UI crashed") end }
    bad(t2.create_directory.execute { path = "d" } and t2.delete_file.execute { path = "README.md" }, "approval check failed")
  end)

  it("custom tools share validation, approval, exporters and dispatch", function()
    local approvals = 0
    local upper = T.define {
      name = "shout",
      description = "Return a file's content in upper case.",
      parameters = T.schema.object({ path = T.schema.string("The file.") }, { "path" }),
      read_only = false,
      execute = function(args, s)
        local data, msg = s:read_file(args.path)
        if not data then return nil, msg end
        return data:upper()
      end,
    }
    local t = sb:tools { extra = { upper }, approve = function() approvals = approvals + 1 return true end }
    assert.equal("# DEMO\n", ok(t.shout.execute { path = "README.md" }))
    assert.equal(1, approvals)
    bad(t.shout.execute { path = 1 }, "must be a string")
    bad(t.shout.execute { path = "nope" }, "ENOENT")
    assert.equal("# DEMO\n", T.dispatch(t, { name = "shout", arguments = '{"path":"README.md"}' }).content)
    assert.equal("shout", T.to_mcp(t)[#t].name)
    assert.has_error(function() T.define { name = "x y", description = "d", execute = print } end)
    assert.has_error(function() T.define { name = "x", description = "d" } end)
    assert.has_error(function() T.define { name = "x", description = "d", execute = print, extra = 1 } end)
    local noargs = T.define { name = "now", description = "The time.", read_only = true, execute = function() return "noon" end }
    local enc = cjson.encode(noargs.parameters)
    assert.matches('"properties":{}', enc)
    assert.same({ type = "object", properties = {}, additionalProperties = false }, cjson.decode(enc))
  end)
end)

describe("provider formats", function()
  local sb, t
  before_each(function()
    sb = assert(sandbox.container { base_dir = backends.tmpdir("fmt"), allow_shell = true,
      confine = not os.getenv("SANDBOX_TEST_UNCONFINED") })
    t = sb:tools { only = { "read_file", "process_list" } }
  end)
  after_each(function() sb:dispose() end)

  local function j(v) return cjson.decode(cjson.encode(v)) end

  it("OpenAI chat: nested function, empty objects as {}", function()
    local out = T.to_openai(t)
    local enc = cjson.encode(out[2])
    assert.matches('"properties":{}', enc)
    assert.is_nil(enc:find("%[%]"))
    local rf = j(out)[1]
    assert.equal("function", rf.type)
    assert.equal("read_file", rf["function"].name)
    assert.same({ "path" }, rf["function"].parameters.required)
    assert.is_false(rf["function"].parameters.additionalProperties)
    assert.is_false(rf["function"].strict) -- sent explicitly: a missing one means strict to the Responses API
  end)

  it("OpenAI strict mode: every property required, optional ones nullable", function()
    local out = j(T.to_openai(t, { api = "chat", strict = true }))
    local p = out[1]["function"].parameters
    assert.is_true(out[1]["function"].strict)
    assert.same({ "limit", "offset", "page_image", "pages", "path" }, p.required)
    assert.same({ "integer", "null" }, p.properties.offset.type)
    assert.equal("string", p.properties.path.type)
    assert.is_false(p.additionalProperties)
    local empty = cjson.encode(T.to_openai(t, { strict = true })[2]["function"].parameters)
    assert.matches('"properties":{}', empty)
    assert.is_nil(empty:find("[]", 1, true))
    assert.same({ type = "object", properties = {}, additionalProperties = false }, cjson.decode(empty))
    -- the tool still accepts what a strict model sends: nulls for omitted ones
    assert.is_false(t.read_file.execute('{"path":"x","offset":null,"limit":null}').content:find("Invalid") ~= nil)
  end)

  it("OpenAI responses: flat function", function()
    local out = j(T.to_openai(t, { api = "responses", strict = false }))
    assert.same({ "function", "read_file", false }, { out[1].type, out[1].name, out[1].strict })
    assert.equal("object", out[1].parameters.type)
    assert.has_error(function() T.to_openai(t, { api = "completions" }) end)
  end)

  it("Anthropic: name, description, input_schema", function()
    local out = j(T.to_anthropic(t))
    assert.same({ "description", "input_schema", "name" }, (function()
      local k = {} for x in pairs(out[1]) do k[#k + 1] = x end table.sort(k) return k end)())
    local enc = cjson.encode(T.to_anthropic(t)[2])
    assert.matches('"properties":{}', enc)
    assert.is_nil(enc:find("[]", 1, true))
  end)

  it("MCP: inputSchema and annotations", function()
    local out = j(T.to_mcp(t))
    assert.same({ readOnlyHint = true, destructiveHint = false, openWorldHint = false }, out[1].annotations)
    assert.equal("object", out[1].inputSchema.type)
  end)

  it("dispatch accepts each provider's call shape, and bad calls become errors", function()
    sb:write_file("a.txt", "A")
    local want = "     1\tA"
    assert.equal(want, T.dispatch(t, { name = "read_file", arguments = { path = "a.txt" } }).content)
    assert.equal(want, T.dispatch(t, { id = "c1", type = "function",
      ["function"] = { name = "read_file", arguments = '{"path":"a.txt"}' } }).content)
    assert.equal(want, T.dispatch(t, { type = "function_call", call_id = "c2", name = "read_file",
      arguments = '{"path":"a.txt"}' }).content)
    assert.equal(want, T.dispatch(t, { type = "tool_use", id = "t1", name = "read_file", input = { path = "a.txt" } }).content)
    bad(T.dispatch(t, { name = "read_file", arguments = '{"path": "a.txt"' }), "not valid JSON")
    bad(T.dispatch(t, { name = "rm_rf", arguments = "{}" }), "no tool named rm_rf.*read_file, process_list")
    bad(T.dispatch(t, "nonsense"), "must be an object")
  end)

  it("wraps results in each provider's message shape", function()
    local okr, err = { content = "fine", is_error = false }, { content = "broke", is_error = true }
    assert.same({ role = "tool", tool_call_id = "c1", content = "fine" }, T.result_openai("c1", okr))
    assert.same({ role = "tool", tool_call_id = "c1", content = "Error: broke" }, T.result_openai("c1", err))
    assert.same({ type = "function_call_output", call_id = "c2", output = "Error: broke" },
      T.result_openai_responses("c2", err))
    assert.same({ type = "tool_result", tool_use_id = "t1", content = "broke", is_error = true },
      T.result_anthropic("t1", err))
    assert.same({ content = { { type = "text", text = "fine" } }, isError = false }, T.result_mcp(okr))
    assert.same({ content = { { type = "text", text = "fine" } }, isError = false },
      cjson.decode(cjson.encode(T.result_mcp(okr))))
  end)
end)
