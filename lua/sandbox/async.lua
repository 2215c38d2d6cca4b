-- Calls that finish later (SPEC §16): what a host's loop drives. Each
-- sandbox has a queue of completions that run from its pump (sb:poll, after
-- the C loop's turn, so a completion may start the next command), watches
-- that are checked on every turn until they finish or their deadline comes,
-- and wakers: functions a host loop registers (sandbox.nvim, sandbox.luv,
-- sandbox.love) to be told that a turn is due without fd activity.
local core = require "sandbox.core"

local M = {}

local type, pairs, ipairs, error, pcall = type, pairs, ipairs, error, pcall
local huge = math.huge

-- sandbox -> {queue, watches, wakers, busy}; weak, so a forgotten sandbox
-- is collected with its state.
local states = setmetatable({}, { __mode = "k" })

local function state(sb)
  local s = states[sb]
  if not s then
    s = { queue = {}, watches = {}, wakers = {}, busy = 0 }
    states[sb] = s
  end
  return s
end

local function wake(s)
  for _, w in pairs(s.wakers) do w() end
end

--- Run fn from the sandbox's next pump turn (never from this call).
function M.defer(sb, fn)
  local s = state(sb)
  s.queue[#s.queue + 1] = fn
  wake(s)
end

--- A turn is due without a result queued (a command was started: its
--- pipes join the loop on its next turn).
function M.stir(sb)
  local s = states[sb]
  if s then wake(s) end
end

--- An operation that will call back later (a command, an approval): it
--- counts as pending in sb:poll's answer until finish(sb) is called.
function M.begin(sb)
  local s = state(sb)
  s.busy = s.busy + 1
end

function M.finish(sb, fn)
  local s = state(sb)
  s.busy = s.busy - 1
  M.defer(sb, fn)
end

--- check() is called on every pump turn until it returns true; at the
--- deadline (clock seconds) it is called with `true` and must finish.
--- every: seconds between turns a host loop should give it even without
--- fd activity (something it polls, such as a search's process).
function M.watch(sb, deadline, check, every)
  local s = state(sb)
  s.watches[#s.watches + 1] = { at = deadline or huge, check = check, every = every }
  wake(s)
end

--- A host loop's waker: fn() is called when a turn is due without fd
--- activity. Returns a function that removes it.
function M.on_wake(sb, fn)
  local s = state(sb)
  local key = {}
  s.wakers[key] = fn
  return function() s.wakers[key] = nil end
end

--- Is a host loop attached (a waker registered)?
function M.attached(sb)
  local s = states[sb]
  return s ~= nil and next(s.wakers) ~= nil
end

--- Completions queued and operations under way (commands started through
--- tools count as live processes in sb:poll's answer instead).
function M.pending(sb)
  local s = states[sb]
  if not s then return 0 end
  return #s.queue + #s.watches + s.busy
end

--- Has the next turn something to do at once (poll must not block)?
function M.due(sb)
  local s = states[sb]
  return s ~= nil and #s.queue > 0
end

--- Milliseconds until a watch's deadline (-1: none); a host loop takes the
--- smaller of this and sb:backend_timeout().
function M.timeout(sb)
  local s = states[sb]
  if not s then return -1 end
  if #s.queue > 0 then return 0 end
  local first, now = huge, core.clock()
  for _, w in ipairs(s.watches) do
    local due = w.every and math.min(w.at, now + w.every) or w.at
    if due < first then first = due end
  end
  if first == huge then return -1 end
  local ms = math.ceil((first - now) * 1000)
  return ms > 0 and ms or 0
end

--- One turn's Lua part: the watches, then the completions queued before
--- the turn (those they queue run next turn). A completion that raises
--- leaves the rest queued for the next turn and re-raises: nothing is lost.
function M.run(sb)
  local s = states[sb]
  if not s then return end
  local w = s.watches
  s.watches = {}
  for _, x in ipairs(w) do x.seen = true end
  local now, keep = core.clock(), {}
  for i, x in ipairs(w) do
    local ok, done = pcall(x.check, now >= x.at)
    if not ok then
      for j = i + 1, #w do keep[#keep + 1] = w[j] end
      for _, y in ipairs(s.watches) do keep[#keep + 1] = y end
      s.watches = keep
      error(done, 0)
    end
    if not done then keep[#keep + 1] = x end
  end
  for _, y in ipairs(s.watches) do keep[#keep + 1] = y end
  s.watches = keep
  local q = s.queue
  if #q == 0 then return end
  s.queue = {}
  for i, fn in ipairs(q) do
    local ok, err = pcall(fn)
    if not ok then
      local rest = {}
      for j = i + 1, #q do rest[#rest + 1] = q[j] end
      for _, f in ipairs(s.queue) do rest[#rest + 1] = f end
      s.queue = rest
      if #rest > 0 then wake(s) end
      error(err, 0)
    end
  end
  if #s.queue > 0 then wake(s) end
end

--- Wrap the C poll: completions due make it non-blocking; the Lua part of
--- the turn runs after the C loop's (so callbacks may start commands).
function M.poll_method(cpoll)
  return function(sb, timeout)
    if timeout ~= nil and type(timeout) ~= "number" then
      error("bad argument #1 to 'poll' (number expected, got " .. type(timeout) .. ")", 2)
    end
    if M.due(sb) then timeout = 0 end
    local t0 = core.clock()
    local n = cpoll(sb, timeout)
    local s = states[sb]
    if n == 0 and timeout and timeout > 0 and s and #s.watches > 0 then
      -- nothing of the C loop's to wait on (the C poll returned at once):
      -- wait here for the watches' next turn, within the caller's timeout
      local ms = M.timeout(sb)
      local left = timeout - (core.clock() - t0)
      core.sleep(ms >= 0 and math.min(left, ms / 1000) or left)
    end
    M.run(sb)
    core.audit_flush(sb, false) -- the network's records in, the log written when due
    return n + M.pending(sb)
  end
end

--- Inside a coroutine with a loop attached: start(done) and yield until
--- done(value) is called from the pump; returns value. Elsewhere: nil
--- (the caller takes its blocking path).
function M.await(sb, start)
  local co, main = coroutine.running()
  if co == nil or main or not M.attached(sb) then return nil end
  local result, finished, waiting = nil, false, false
  start(function(v)
    result, finished = v, true
    if waiting then
      local ok, err = coroutine.resume(co)
      if not ok then error(err, 0) end
    end
  end)
  if not finished then
    waiting = true
    coroutine.yield()
  end
  return result, true
end

return M
