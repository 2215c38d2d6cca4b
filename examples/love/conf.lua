-- LÖVE 11 settings for the sandbox example (see main.lua).
function love.conf(t)
  t.identity = "agent-sandbox-example"
  t.window.title = "agent sandbox: a game that never waits"
  t.window.width, t.window.height = 800, 480
  t.window.vsync = 0 -- frames are paced in main.lua, the same with or without a display's vsync
  t.modules.joystick, t.modules.physics, t.modules.audio, t.modules.sound = false, false, false, false
end
