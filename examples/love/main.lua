-- A LÖVE scene that keeps drawing while an agent's command runs in a
-- sandbox: the command's output streams onto the screen line by line, and
-- its tool result appears when it is done. The sandbox is pumped once per
-- frame (sandbox.love), so no frame waits for the command.
--
--   make LUA=luajit && love examples/love
--
-- SANDBOX_LOVE_REPORT=file: the spec's mode (spec/love_spec.lua): frame
-- times before and during a 2 s command, then a screenshot, then quit.

-- the repository's Lua modules and the C module built for LuaJIT
local repo = (os.getenv("SANDBOX_REPO") or love.filesystem.getSource() .. "/../..")
package.path = repo .. "/lua/?.lua;" .. repo .. "/lua/?/init.lua;" .. package.path
package.cpath = repo .. "/build-luajit/?.so;" .. package.cpath

local sandbox = require "sandbox"
local core = require "sandbox.core"

local report_path = os.getenv("SANDBOX_LOVE_REPORT")
local FRAME = 1 / 60 -- paced: a stalled frame stands out against the others

local sb, tools
local lines, result = {}, nil
local started_at, phase = nil, "idle"
local frames = { idle = {}, command = {} }
local last_frame, angle = nil, 0
local shot_taken = false

local function agent_command()
  -- what an agent asks for: a command printing as it goes, 2 s in all
  local script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo \"step $i of 10\"; sleep 0.2; done"
  -- the output streams through a background handle's callback...
  local partial = ""
  assert(sb:exec("/bin/sh", { "-c", script }, {
    background = true,
    on_stdout = function(chunk)
      partial = partial .. chunk
      for line in partial:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
      partial = partial:match("[^\n]*$")
    end,
  }))
  -- ...and the same run as an agent's tool call, answered when it is done
  sandbox.tools.dispatch(tools, { name = "run_shell", arguments = { script = script } },
    { on_done = function(r) result = r end })
  started_at, phase = core.clock(), "command"
end

function love.load()
  local root = os.getenv("SANDBOX_LOVE_ROOT") or os.tmpname() .. ".d"
  os.execute("mkdir -p '" .. root .. "'")
  sb = assert(sandbox.container { base_dir = root, allow_shell = true })
  tools = sb:tools()
  -- the first command builds the sandbox's view of the system (namespaces,
  -- mounts): pay that at load time, not in the middle of a scene
  assert(sb:exec("true"))
  require("sandbox.love").attach(sb)
  last_frame = core.clock()
end

local function finish()
  local f = assert(io.open(report_path, "w"))
  f:write(sandbox.json.encode { idle = frames.idle, command = frames.command, lines = #lines,
    result = result and result.content or "", shot = shot_taken })
  f:close()
  sb:dispose()
  love.event.quit()
end

function love.update(dt)
  angle = angle + dt * 2
  local now = core.clock()
  if report_path then
    local list = frames[phase]
    if list then list[#list + 1] = (now - last_frame) * 1000 end
    if phase == "idle" and #frames.idle >= 60 then agent_command() end
    if phase == "command" and result then phase = "shot" end
  elseif phase == "idle" then
    agent_command()
  end
  last_frame = now
  -- pace the frame (the sandbox's turn comes after this update: sandbox.love)
  local spent = core.clock() - now
  if spent < FRAME then love.timer.sleep(FRAME - spent) end
end

function love.draw()
  local g = love.graphics
  g.clear(0.08, 0.09, 0.12)
  g.push()
  g.translate(700, 80)
  g.rotate(angle)
  g.setColor(0.3, 0.7, 1)
  g.rectangle("fill", -30, -30, 60, 60)
  g.pop()
  g.setColor(1, 1, 1)
  g.print("The game keeps drawing while the sandbox runs an agent's command:", 20, 20)
  for i, line in ipairs(lines) do g.print(line, 40, 40 + i * 18) end
  if result then
    g.setColor(0.6, 1, 0.6)
    g.print("Tool result (" .. (result.is_error and "error" or "ok") .. "):\n" .. result.content, 20, 260)
  elseif started_at then
    g.print(("running... %.1f s"):format(core.clock() - started_at), 20, 260)
  end
  if report_path and phase == "shot" and not shot_taken then
    shot_taken = true
    local out = report_path:gsub("%.json$", "") .. ".png"
    g.captureScreenshot(function(img)
      local data = img:encode("png")
      local f = assert(io.open(out, "wb"))
      f:write(data:getString())
      f:close()
      finish()
    end)
  end
end
