-- The script the embed host runs (examples/embed/host.c): it starts
-- background commands in a ContainerSandbox and keeps a VirtualSandbox for
-- its own files. The host calls frame() once per frame, pump() when a
-- command's output wakes it between frames, and backend_fds() for the fds to
-- sleep on. Nothing here blocks: sb:poll() only runs what is ready.
local sandbox = require "sandbox"

local dir = os.getenv("EMBED_DIR") or "/tmp/sandbox-embed-demo"
os.execute("mkdir -p '" .. dir .. "'")
-- Off Linux (macOS) a build has no confinement: commands run there only when
-- asked for without it, and with the host's network (README: Platforms).
local bare = not sandbox.capabilities().confine_layers
local sb = assert(sandbox.container { base_dir = dir, max_background_processes = 8, max_read_bytes = "32MB",
                                      confine = not bare, allow_outbound = bare })
local notes = sandbox.virtual { max_total_bytes = "256MB", max_write_bytes = "64MB" } -- the host's cap bites first

local function say(fmt, ...) io.write(("[frame %3d] " .. fmt .. "\n"):format(FRAME or 0, ...)) end

local function lines_of(name)
  local partial = ""
  return function(chunk)
    partial = partial .. chunk
    for line in partial:gmatch("([^\n]*)\n") do say("%s: %s", name, line) end
    partial = partial:match("[^\n]*$")
  end
end

local jobs = {
  build = sb:exec("sh", { "-c", "for i in 1 2 3 4 5; do echo \"compiling unit $i\"; sleep 0.05; done; echo done" },
    { background = true, on_stdout = lines_of("build"), on_exit = function(r) say("build exited with %d", r.exit_code) end }),
  tests = sb:exec("sh", { "-c", "sleep 0.1; echo 'ok 1'; echo 'not ok 2' >&2; sleep 0.1; echo 'ok 3'; exit 1" },
    { background = true, on_stdout = lines_of("tests"), on_stderr = lines_of("tests (stderr)"),
      on_exit = function(r) say("tests exited with %d", r.exit_code) end }),
  -- a long quiet stretch after the others end: a poll that waited for output
  -- would stall the frame for most of a second here
  quiet = sb:exec("sh", { "-c", "sleep 1; echo awake" }, { background = true, on_stdout = lines_of("quiet") }),
  -- this callback raises: the host's error handler reports it, nothing stops
  flaky = sb:exec("sh", { "-c", "sleep 0.15; echo tick" },
    { background = true, on_stdout = function(chunk) error("the flaky callback choked on " .. chunk:gsub("\n", "")) end }),
}

-- The host's allocator is capped: a write that needs more memory than is
-- left fails with an error, and the sandbox keeps working.
-- (24 MB made on disk a megabyte at a time and read back: building it with
-- string.rep would need three times that on Lua 5.1)
local f = assert(io.open(dir .. "/big.bin", "wb"))
local mb = string.rep("x", 1024 * 1024)
for _ = 1, 24 do f:write(mb) end
f:close()
mb = nil
local big = assert(sb:read_file("big.bin"))
collectgarbage()
local ok, msg = notes:write_file("big.bin", big)
say("writing 24 MB into the VirtualSandbox: %s", ok and "ok" or msg)
local ok2, msg2 = notes:write_file("big2.bin", big)
say("writing 24 MB more: %s", ok2 and "ok" or msg2)
big = nil
collectgarbage()
notes:write_file("notes.md", "# still fine\n")
say("notes.md: %s", notes:read_file("notes.md"):gsub("\n", ""))

function frame()
  sb:poll() -- never blocks
  for _, h in pairs(jobs) do
    if h:running() then return true end
  end
  say("all commands finished")
  return false
end

function pump() sb:poll() end

function backend_fds() return { sb:backend_fd() } end
