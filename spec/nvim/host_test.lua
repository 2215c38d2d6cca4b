-- Runs inside headless Neovim (spec/neovim_spec.lua) with the repository on
-- the runtimepath, as a plugin manager installs it: the plugin's commands,
-- :checkhealth, tools on both backends, and the three ways an agent plugin
-- calls a tool (dispatch with on_done on sandbox.nvim, the avante adapter,
-- the codecompanion adapter), each running a 2 s command while a 10 ms
-- timer measures how long the editor's loop ever waited. Writes what it saw
-- to $SANDBOX_NVIM_OUT and quits.
local out_path = assert(os.getenv("SANDBOX_NVIM_OUT"))
local root = assert(os.getenv("SANDBOX_NVIM_ROOT"))
local uv = vim.loop
local R = { ok = false }

local function finish()
  local f = assert(io.open(out_path, "w"))
  f:write(vim.fn.json_encode(R))
  f:close()
  vim.cmd("qa!")
end

local function fail(err)
  R.error = tostring(err) .. "\n" .. debug.traceback()
  finish()
end

-- The longest gap between a 10 ms timer's ticks beyond its period, over
-- `ms`; then done(stall_ms).
local function stall_over(ms, done)
  local last, worst, t0 = uv.hrtime(), 0, uv.hrtime()
  local timer = uv.new_timer()
  timer:start(10, 10, function()
    local now = uv.hrtime()
    worst = math.max(worst, (now - last) / 1e6 - 10)
    last = now
    if (now - t0) / 1e6 >= ms then
      timer:stop()
      timer:close()
      vim.schedule(function() done(worst) end)
    end
  end)
end

-- Each step calls next() when it is done (all of them from the loop).
local steps = {}
local function run_steps(i)
  i = i or 1
  if not steps[i] then
    R.ok = true
    require("sandbox.nvim").close()
    return finish()
  end
  local ok, err = pcall(steps[i], function() vim.schedule(function() run_steps(i + 1) end) end)
  if not ok then fail(err) end
end

local sandbox
local notes = {}

steps[#steps + 1] = function(next)
  sandbox = require "sandbox"
  R.lua = jit and jit.version or _VERSION
  R.commands = vim.fn.exists(":SandboxRun") == 2 and vim.fn.exists(":SandboxTool") == 2
  -- the codec: Neovim's own, on the tables the exporters return
  local vt = sandbox.virtual { files = { ["notes.md"] = "# notes\nhello from a fixture\n" } }
  local vtools = vt:tools()
  R.openai_json = vim.json.encode(sandbox.tools.to_openai(vt:tools { only = { "file_exists" } }))
  R.empty_list_json = vim.json.encode(sandbox.tools.to_anthropic({}))
  R.virtual_read = vtools.read_file.execute { path = "notes.md" }
  R.virtual_search = vtools.search_code.execute { pattern = "hello" }
  vt:dispose()
  vim.cmd("checkhealth sandbox")
  R.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  -- the plugin's session, its commands' output caught
  require("sandbox.nvim").setup { base_dir = root, allow_shell = true }
  vim.notify = function(msg, level) notes[#notes + 1] = { msg = msg, level = level } end
  next()
end

-- the loop's own noise: the same timer with nothing of ours running
steps[#steps + 1] = function(next)
  stall_over(1000, function(idle)
    R.idle_stall_ms = idle
    next()
  end)
end

-- :SandboxTool prints the tool's text, once it is done
steps[#steps + 1] = function(next)
  vim.cmd([[SandboxTool write_file {"path": "hello.txt", "content": "hi\n"}]])
  vim.cmd([[SandboxTool read_file {"path": "hello.txt"}]])
  R.tool_notes_at_once = #notes
  local t = uv.new_timer()
  t:start(20, 20, vim.schedule_wrap(function()
    if #notes < 2 then return end
    t:stop()
    t:close()
    R.tool_notes = { notes[1].msg, notes[2].msg }
    next()
  end))
end

-- :SandboxRun honours quoting and streams into a buffer without blocking
steps[#steps + 1] = function(next)
  vim.cmd([[SandboxRun /bin/sh -c 'i=0; while [ $i -lt 200 ]; do echo "line $i"; i=$((i+1)); sleep 0.005; done; printf "%s|" "$@"; echo; sleep 1' sh 'a b' "c d" e\ f]])
  local buf = vim.api.nvim_get_current_buf()
  local sb = require("sandbox.nvim").get()
  local h = sb:processes()[1]
  R.pid = h.pid
  do
    local t = uv.new_timer()
    local worst, last = 0, uv.hrtime()
    t:start(10, 10, function()
      local now = uv.hrtime()
      worst = math.max(worst, (now - last) / 1e6 - 10)
      last = now
      if h:running() then return end
      t:stop()
      t:close()
      vim.schedule(function()
        R.run_stall_ms = worst
        local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        R.lines, R.quoted, R.last_line = #lines, lines[#lines - 1], lines[#lines]
        next()
      end)
    end)
  end
end

-- three agent-plugin paths at once, each a 2 s command
steps[#steps + 1] = function(next)
  local sb, tools = require("sandbox.nvim").get()
  local results = {}
  local call = { name = "run_shell", arguments = { script = "sleep 2; echo finished" } }
  local t0 = uv.hrtime()
  local function got(key) return function(v) results[key] = { v = v, ms = (uv.hrtime() - t0) / 1e6 } end end
  -- 1. dispatch with on_done, pumped by sandbox.nvim (attached by the session)
  sandbox.tools.dispatch(tools, call, { on_done = got("dispatch") })
  R.dispatch_returned_empty = results.dispatch == nil
  -- 2. avante: func(input, opts) returning nil, nil, then on_complete(result, err)
  --    (as llm_tools/init.lua process_tool_use calls it)
  local av = require("sandbox.adapters.avante").tools(sb, { tools = { only = { "run_shell" } } })
  local r1, r2 = av[1].func(call.arguments, { on_log = function() end, on_complete = function(res, err) got("avante")({ res, err }) end })
  R.avante_returned = { r1 == nil, r2 == nil }
  R.avante_fields = av[1].param.fields
  -- 3. codecompanion: cmds[1](tools, args, {output_cb}) returning nil, then
  --    output.success(self, stdout, meta) (runtime/runner.lua, orchestrator.lua)
  local cc = require("sandbox.adapters.codecompanion").tools(sb, { tools = { only = { "run_shell" } } })
  local tool = cc.run_shell
  local chat = { add_tool_output = function(_, _, text) got("codecompanion")(text) end }
  local ret = tool.cmds[1]({}, call.arguments, {
    input = nil,
    output_cb = function(msg)
      if msg.status == "success" then
        tool.output.success(tool, { msg.data }, { tools = { chat = chat }, cmd = tool.cmds[1] })
      else
        tool.output.error(tool, { msg.data }, { tools = { chat = chat }, cmd = tool.cmds[1] })
      end
    end,
  })
  R.codecompanion_returned_nil = ret == nil
  R.codecompanion_schema = vim.json.encode(tool.schema)
  R.codecompanion_approval = tool.opts.require_approval_before
  local worst, last = 0, uv.hrtime()
  local t = uv.new_timer()
  t:start(10, 10, function()
    local now = uv.hrtime()
    worst = math.max(worst, (now - last) / 1e6 - 10)
    last = now
    if not (results.dispatch and results.avante and results.codecompanion) and (now - t0) / 1e6 < 20000 then return end
    t:stop()
    t:close()
    vim.schedule(function()
      R.paths_stall_ms = worst
      R.paths = {
        dispatch = results.dispatch and { content = results.dispatch.v.content, is_error = results.dispatch.v.is_error, ms = results.dispatch.ms },
        avante = results.avante and { result = results.avante.v[1], err = results.avante.v[2], ms = results.avante.ms },
        codecompanion = results.codecompanion and { text = results.codecompanion.v, ms = results.codecompanion.ms },
      }
      next()
    end)
  end)
end

-- the coroutine form: looks blocking, yields while the editor goes on
steps[#steps + 1] = function(next)
  local _, tools = require("sandbox.nvim").get()
  local ticks = 0
  local t = uv.new_timer()
  t:start(10, 10, function() ticks = ticks + 1 end)
  coroutine.wrap(function()
    local r = sandbox.tools.await(tools, { name = "run_shell", arguments = { script = "sleep 0.5; echo awaited" } })
    t:stop()
    t:close()
    R.await = { content = r.content, ticks = ticks }
    next()
  end)()
end

local ok, err = pcall(run_steps)
if not ok then fail(err) end
