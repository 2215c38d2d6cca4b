-- Neovim: drive a sandbox from the editor's loop, and the editor session
-- behind the plugin's commands (plugin/sandbox.lua).
--
--   local detach = require("sandbox.nvim").attach(sb)
--
-- Everything the sandbox calls back (command output, exits, tool results
-- from dispatch with on_done, tools.await, the adapters) runs in Neovim's
-- main loop through vim.schedule, where the editor's API may be used; the
-- editor never waits for a command, a search or an approval.
local M = {}

local function sandbox() return require "sandbox" end

--- attach(sb): pump sb from vim.loop; returns detach().
function M.attach(sb)
  return require("sandbox.luv").attach(sb, { uv = vim.loop, schedule = vim.schedule })
end

-- ---- the editor session ------------------------------------------------------

local state = {} -- sb, detach, tools, opts

--- setup(opts): the session's sandbox options (sandbox.container's, e.g.
--- {base_dir =, allow_shell =}); base_dir defaults to the working directory.
--- Takes effect for the next sandbox (close() ends the current one).
function M.setup(opts)
  if opts ~= nil and type(opts) ~= "table" then error("sandbox.nvim.setup: expects a table of options", 2) end
  state.opts = opts or {}
end

--- The session's sandbox (made on first use) and its tools.
function M.get()
  if state.sb then return state.sb, state.tools end
  local o = {}
  for k, v in pairs(state.opts or {}) do o[k] = v end
  o.base_dir = o.base_dir or vim.fn.getcwd()
  local sb, msg = sandbox().container(o)
  if not sb then error(msg, 0) end
  state.sb, state.tools = sb, sb:tools()
  state.detach = M.attach(sb)
  return sb, state.tools
end

--- Split a command line as a POSIX shell would split words: 'single' and
--- "double" quotes, backslash escapes; no expansion of any kind.
function M.split(line)
  local words, cur, i, n, have = {}, {}, 1, #line, false
  while i <= n do
    local c = line:sub(i, i)
    if c == "'" then
      local j = line:find("'", i + 1, true)
      if not j then return nil, "unterminated ' quote" end
      cur[#cur + 1], have, i = line:sub(i + 1, j - 1), true, j + 1
    elseif c == '"' then
      local j, buf = i + 1, {}
      while true do
        local d = line:sub(j, j)
        if d == "" then return nil, 'unterminated " quote' end
        if d == '"' then break end
        if d == "\\" and line:sub(j + 1, j + 1):find('^["\\$`]') then
          d, j = line:sub(j + 1, j + 1), j + 1
        end
        buf[#buf + 1], j = d, j + 1
      end
      cur[#cur + 1], have, i = table.concat(buf), true, j + 1
    elseif c == "\\" then
      if i == n then return nil, "a trailing backslash" end
      cur[#cur + 1], have, i = line:sub(i + 1, i + 1), true, i + 2
    elseif c:find("%s") then
      if have then words[#words + 1], cur, have = table.concat(cur), {}, false end
      i = i + 1
    else
      cur[#cur + 1], have, i = c, true, i + 1
    end
  end
  if have then words[#words + 1] = table.concat(cur) end
  return words
end

--- run(argv [, on_exit]): run a command in the background, its output
--- appended line by line to a new scratch buffer as it arrives; returns the
--- buffer and the process handle. on_exit(result) when it ended.
function M.run(argv, on_exit)
  local sb = M.get()
  local buf = vim.api.nvim_create_buf(true, true)
  local partial = ""
  local function append(chunk)
    local text = partial .. chunk
    local cut = text:match("^.*()\n")
    if not cut then
      partial = text
      return
    end
    partial = text:sub(cut + 1)
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, vim.split(text:sub(1, cut - 1), "\n", { plain = true }))
  end
  local rest = {}
  for i = 2, #argv do rest[#rest + 1] = argv[i] end
  local h, msg = sb:exec(argv[1], rest, {
    background = true, on_stdout = append, on_stderr = append,
    on_exit = function(r)
      if partial ~= "" then append("\n") end
      append(("[exit %s]\n"):format(r.signal or tostring(r.exit_code)))
      if on_exit then on_exit(r) end
    end,
  })
  if not h then error(msg, 0) end
  return buf, h
end

--- tool(name, args, on_done): call one of the session's agent tools without
--- blocking; on_done(result) gets {content =, is_error =} from the loop.
function M.tool(name, args, on_done)
  local _, tools = M.get()
  sandbox().tools.dispatch(tools, { name = name, arguments = args or {} }, { on_done = on_done })
end

--- Stop the loop's watchers and dispose of the sandbox (kills its commands).
function M.close()
  if state.detach then state.detach() end
  if state.sb then state.sb:dispose() end
  state.sb, state.detach, state.tools = nil, nil, nil
end

return M
