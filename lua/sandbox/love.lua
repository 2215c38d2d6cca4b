-- Drive sandboxes from a LÖVE game's frame: every attached sandbox gets one
-- non-blocking turn of its pump (sb:poll(0)) per love.update, after the
-- game's own update, so commands' output, exits and tool results arrive
-- between frames and no frame waits for them.
--
--   local detach = require("sandbox.love").attach(sb)
--
-- attach wraps love.update once (the game's update still runs first); a game
-- that sets love.update after attaching calls require("sandbox.love").pump()
-- from its update instead.
local core = require "sandbox.core"

local M = {}

local attached = {} -- sandbox -> true, in attach order
local order = {}
local wrapped = false

--- One turn for every attached sandbox; a disposed one is dropped.
function M.pump()
  local i = 1
  while i <= #order do
    local sb = order[i]
    if pcall(core.check_open, sb, "poll") then
      sb:poll(0)
      i = i + 1
    else
      attached[sb] = nil
      table.remove(order, i)
    end
  end
end

local function wrap()
  local love = rawget(_G, "love")
  if wrapped or type(love) ~= "table" then return end
  wrapped = true
  local game = love.update
  love.update = function(...)
    if game then game(...) end
    M.pump()
  end
end

--- attach(sb): pump sb every frame; returns detach().
function M.attach(sb)
  core.check_open(sb, "attach")
  if not attached[sb] then
    attached[sb] = true
    order[#order + 1] = sb
  end
  wrap()
  return function()
    if not attached[sb] then return end
    attached[sb] = nil
    for i, x in ipairs(order) do
      if x == sb then table.remove(order, i) break end
    end
  end
end

return M
