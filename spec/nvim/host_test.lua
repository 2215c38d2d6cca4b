-- Runs inside headless Neovim (spec/neovim_spec.lua): loads the LuaJIT
-- module through package.cpath, opens a ContainerSandbox and a
-- VirtualSandbox, calls tools, streams a background command through the
-- example plugin while a 10 ms timer measures how long the editor's loop
-- ever waited, then writes what it saw to $SANDBOX_NVIM_OUT and quits.
local out_path = assert(os.getenv("SANDBOX_NVIM_OUT"))
local root = assert(os.getenv("SANDBOX_NVIM_ROOT"))
local uv = vim.loop
local R = { ok = false, steps = {} }

local function finish()
  local f = assert(io.open(out_path, "w"))
  f:write(vim.fn.json_encode(R))
  f:close()
  vim.cmd("qa!")
end

local ok, err = pcall(function()
  local sandbox = require "sandbox"
  R.lua = jit and jit.version or _VERSION
  -- a VirtualSandbox and its tools
  local vt = sandbox.virtual { files = { ["notes.md"] = "# notes\nhello from a fixture\n" } }
  local vtools = vt:tools()
  R.virtual_read = vtools.read_file.execute { path = "notes.md" }
  R.virtual_search = vtools.search_code.execute { pattern = "hello" }
  vt:dispose()
  -- the example plugin's ContainerSandbox, tools and a streamed command
  local S = require "sandbox_nvim"
  S.get { base_dir = root, allow_shell = true }
  R.write = S.tool("write_file", { path = "hello.txt", content = "hi\n" })
  R.read = S.tool("read_file", { path = "hello.txt" })
  R.loop_is_neovims = uv.version_string()
  local buf, h = S.run("/bin/sh", { "-c", "i=0; while [ $i -lt 200 ]; do echo line $i; i=$((i+1)); sleep 0.005; done; sleep 1" })
  R.pid = h.pid
  local last, worst, ticks = uv.hrtime(), 0, 0
  local timer = uv.new_timer()
  timer:start(10, 10, function()
    local now = uv.hrtime()
    local gap = (now - last) / 1e6
    if gap > worst then worst = gap end
    last, ticks = now, ticks + 1
    if not h:running() or ticks > 2000 then
      timer:stop()
      timer:close()
      vim.schedule(function()
        R.longest_stall_ms = worst - 10 -- beyond the timer's own period
        R.ticks = ticks
        local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        R.lines = #lines
        R.last_line = lines[#lines]
        R.running = h:running()
        S.close()
        R.ok = true
        finish()
      end)
    end
  end)
end)
if not ok then
  R.error = tostring(err)
  finish()
end
