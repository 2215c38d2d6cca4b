-- A minimal Neovim integration of the sandbox (SPEC §14): one sandbox per
-- editor session, rooted at the working directory (or a scratch directory),
-- commands streamed into a scratch buffer, everything driven by Neovim's own
-- loop (vim.loop) so the editor never blocks.
--
--   :SandboxRun {cmd} {args...}   run a confined command, output in a buffer
--   :SandboxTool {name} {json}    call one of the agent tools
--
-- The module (core.so) must be built for LuaJIT: make LUA=luajit, and
-- package.cpath pointing at build-luajit/?.so.
local M = {}

local uv = vim.loop
local sandbox = require "sandbox"

local state = { sb = nil, poll = nil, timer = nil }

--- The session's sandbox, and the loop watchers that drive it.
function M.get(opts)
  if state.sb then return state.sb end
  opts = opts or {}
  local sb = assert(sandbox.container {
    base_dir = opts.base_dir or vim.fn.getcwd(),
    allow_shell = opts.allow_shell or false,
  })
  state.sb = sb
  -- readable backend fd: a command printed, exited or a timer fell due
  state.poll = uv.new_poll(sb:backend_fd())
  state.poll:start("r", function() sb:poll() end)
  -- the backend's own deadlines (timeouts, kill grace) without output
  state.timer = uv.new_timer()
  state.timer:start(50, 50, function() sb:poll() end)
  return sb
end

--- Run cmd with args in the background; each output line is appended to a
--- scratch buffer as it arrives. Returns the buffer and the process handle.
function M.run(cmd, args, opts)
  local sb = M.get(opts)
  local buf = vim.api.nvim_create_buf(true, true)
  local partial = ""
  -- output arrives in a loop callback, where the editor's API is off
  -- limits: whole lines are handed to the main loop with vim.schedule
  local function append(chunk)
    local text = partial .. chunk
    local cut = text:match("^.*()\n")
    if not cut then
      partial = text
      return
    end
    partial = text:sub(cut + 1)
    local lines = vim.split(text:sub(1, cut - 1), "\n", { plain = true })
    vim.schedule(function() vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines) end)
  end
  local h, msg = sb:exec(cmd, args or {}, {
    background = true,
    on_stdout = append,
    on_stderr = append,
    on_exit = function(r) append(partial ~= "" and "\n" or "") append(("[exit %s]\n"):format(tostring(r.exit_code))) end,
  })
  if not h then error(msg, 2) end
  return buf, h
end

--- Call an agent tool by name with a table of arguments; returns its text.
function M.tool(name, args)
  local sb = M.get()
  state.tools = state.tools or sb:tools()
  local t = state.tools[name]
  if not t then error("no tool " .. name, 2) end
  return t.execute(args)
end

--- Stop the watchers and dispose of the sandbox (kills its commands).
function M.close()
  if state.poll then state.poll:stop() state.poll:close() end
  if state.timer then state.timer:stop() state.timer:close() end
  if state.sb then state.sb:dispose() end
  state.sb, state.poll, state.timer, state.tools = nil, nil, nil, nil
end

return M
