-- Work on a sandbox that finishes later, its calls made in forked copies of
-- the process (core.call_start): how a RemoteSandbox's file tools, each
-- call one or more round trips to the engine, keep the host's loop free
-- (SPEC §16). run(sb, fn, done) runs fn(stand_in) in a coroutine; each
-- method called on the stand-in starts a copy and yields, and the pump
-- resumes the coroutine once the copy has answered. The work's own logic
-- (its tables, its checks) runs here; only the calls run in the copies,
-- which is right only where their effects live outside this process.
local core = require "sandbox.core"
local async = require "sandbox.async"

local M = {}

local select, type, error, pcall, setmetatable, ipairs = select, type, error, pcall, setmetatable, ipairs
local unpack = table.unpack or unpack -- luacheck: ignore 143

local function pack(...) return { n = select("#", ...), ... } end

local JOB = {} -- what a yield for a call carries, so no other yield is taken for one

-- The coroutines M.run drives: where M.wait may yield.
local driven = setmetatable({}, { __mode = "k" })

-- The sandbox behind a stand-in (or the value itself).
local real = setmetatable({}, { __mode = "k" })
function M.real(x) return real[x] or x end

-- Inside the coroutine: the call in a copy, its values once answered. No
-- copy to be had (EAGAIN): the call is made here, in the turn.
local function call(sb, fn, ...)
  local job, msg, code = core.call_start(sb, fn, sb, ...)
  if not job then
    if code == "EAGAIN" then return fn(sb, ...) end
    error(msg, 0)
  end
  local r = pack(coroutine.yield(JOB, job))
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

-- The calls that go to a copy: the file calls, whose effects are the
-- engine's. The others (commands, tools, the pump) are made here as they
-- are: their state is this process's.
local IN_COPY = {}
for _, n in ipairs { "read_file", "write_file", "stat", "exists", "readdir", "mkdir", "remove", "rename", "symlink",
  "readlink", "realpath", "glob", "grep", "snapshot" } do IN_COPY[n] = true end

local function stand_in(sb)
  local methods = {}
  local s = setmetatable({}, {
    __index = function(_, k)
      local v = sb[k]
      if type(v) ~= "function" then return v end
      local m = methods[k]
      if not m then
        if IN_COPY[k] then m = function(_, ...) return call(sb, v, ...) end
        else m = function(_, ...) return v(sb, ...) end end
        methods[k] = m
      end
      return m
    end,
  })
  real[s] = sb
  return s
end

--- Do sb's calls wait on a network (a RemoteSandbox's engine)? Those are
--- the calls worth a copy; a local backend's file calls are bounded by its
--- read and listing caps and run in the turn.
function M.wanted(sb) return sb.kind == "remote" end

--- wait(job): inside work M.run drives, yield until job is done and return
--- its values (job:result() is false until then, else true, ok, values...;
--- job:cancel() if the sandbox goes meanwhile): the pump turns go on. Else
--- (not in such work) nothing: the caller waits its own way.
function M.wait(job)
  local co = coroutine.running()
  if not (co and driven[co]) then return false end
  local r = pack(coroutine.yield(JOB, job))
  return true, unpack(r, 1, r.n)
end

--- Run fn(stand_in) until it returns; done(true, ...) with its values, or
--- done(false, err) when it raised or the sandbox was disposed meanwhile.
--- done is called from a pump turn or, when fn makes no call, at once.
--- local_calls: fn gets sb itself (its calls made in the turn); only its
--- M.wait calls (a document helper's run) finish later.
function M.run(sb, fn, done, local_calls)
  local co = coroutine.create(function() return fn(local_calls and sb or stand_in(sb)) end)
  driven[co] = true
  local function step(...)
    local r = pack(coroutine.resume(co, ...))
    if not r[1] then return done(false, r[2]) end
    if coroutine.status(co) == "dead" then return done(true, unpack(r, 2, r.n)) end
    if r[2] ~= JOB then return done(false, "the work yielded outside a sandbox call") end
    local job = r[3]
    async.watch(sb, nil, function()
      if not pcall(core.check_open, sb, "call") then
        job:cancel() -- disposed meanwhile: nobody waits for it
        done(false, "the sandbox was disposed before the call finished")
        return true
      end
      local got = pack(job:result())
      if got[1] == false then return false end
      step(unpack(got, 2, got.n))
      return true
    end, 0.01)
  end
  step()
end

return M
