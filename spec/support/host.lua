-- What this host itself allows, learned once per run, so a spec asserts only
-- what the sandbox adds. Machines of one kind differ (one faults on i386
-- system calls outside any sandbox, another has no x32 ABI, no IPv6, a
-- cgroup v1 hierarchy, an older Landlock): where the host cannot do a thing
-- at all, nothing is at risk and nothing is checked. Such a case passes
-- with a note; the notes are printed before the suite's last line
-- (spec/support/summary.lua), never dropped.
local sh = require "support.sh"
local assert = require "luassert"

local M = {}

local cache = {}

-- busted reloads modules for every spec file (insulation): the notes live
-- in a file of this test process, which the summary reads at the end.
M.notes_file = "/tmp/sandbox-test-notes-" .. sh.pid()
local function notes_file() return M.notes_file end

--- Record that `what` was not checked on this host, and why.
function M.note(what, why)
  local f = assert(io.open(notes_file(), "a"))
  f:write(what, ": ", why, "\n")
  f:close()
end

--- The notes of this run, each once, in the order they were made; `take`
--- removes them.
function M.notes(take)
  local out, seen = {}, {}
  local f = io.open(notes_file(), "r")
  if f then
    for l in f:lines() do
      if not seen[l] then
        seen[l] = true
        out[#out + 1] = l
      end
    end
    f:close()
    if take then os.remove(notes_file()) end
  end
  return out
end

-- spec/c/attack.c run unconfined, as this process: "ok", "refused ERRNO",
-- or "killed by signal N" (the call faulted before any kernel answer).
local function unconfined(op)
  if cache[op] == nil then
    local ok, out = sh.run(("%s/test/attack %s; echo \"rc=$?\""):format(sh.build, op))
    local text, rc = (out or ""):match("^(.-)\n?rc=(%d+)%s*$")
    rc = tonumber(rc)
    if rc and rc > 128 then
      cache[op] = ("killed by signal %d"):format(rc - 128)
    else
      cache[op] = (text or out or ""):gsub("%s+$", "")
    end
    assert(ok ~= nil)
  end
  return cache[op]
end
M.unconfined = unconfined

--- What the unconfined run of `op` is taken to print (this module's own
--- spec, to show both branches on any host).
function M.assume(op, out) cache[op] = out end

-- Attacks whose call the host may not offer at all: the other system-call
-- ABIs. Only harmless calls (getpid) are made unconfined.
local ABI = { x32 = "the x32 ABI", i386 = "i386 system calls (int $0x80)" }

--- Can the host itself make this ABI's calls? true, or false and why.
function M.abi(op)
  local out = unconfined(op)
  if out == "ok" then return true end
  return false, ("%s: not available on this host outside any sandbox either (%s)"):format(ABI[op], out ~= "" and out or "no output")
end

-- What a probe of the host answered: true, or a string saying why not.
local function probe(key, fn)
  if cache[key] == nil then cache[key] = fn() end
  if cache[key] == true then return true end
  return false, cache[key]
end

--- Does this run have root (to become another user, mount, ...)?
function M.root()
  return probe("root", function()
    local ok, out = sh.run("id -u")
    return (ok and out:match("^0%s*$")) and true or "this run is not root"
  end)
end

--- Can a spec run a sandbox as an unprivileged user here: root to become
--- nobody, setpriv, and user namespaces for that user (Debian's
--- kernel.unprivileged_userns_clone, a seccomp profile or AppArmor may
--- refuse them)? true, or false and why.
function M.unprivileged()
  return probe("unprivileged", function()
    local root, why = M.root()
    if not root then return why .. " (it cannot become another user)" end
    if not sh.run("command -v setpriv >/dev/null") then return "setpriv is missing" end
    if not sh.run("setpriv --reuid=65534 --regid=65534 --clear-groups unshare -U true") then
      return "user namespaces are refused to an unprivileged user on this host"
    end
    return M.checkout_readable()
  end)
end

--- Can an unprivileged user (nobody) load the module from this checkout?
--- Not where a directory above it is private (a clone under /root, or in a
--- mktemp -d directory). true, or false and why.
function M.checkout_readable()
  return probe("checkout readable", function()
    local ok = sh.run(("setpriv --reuid=65534 --regid=65534 --clear-groups test -r %s -a -r lua/sandbox/init.lua"):format(
      sh.quote(sh.build .. "/sandbox/core.so")))
    return ok and true or ("this checkout cannot be read by an unprivileged user (a directory above it is private, "
      .. "e.g. /root): clone it under a directory others may enter to check these cases")
  end)
end

--- Does the host mount a cgroup v2 hierarchy? true, or false and why.
function M.cgroup2()
  return probe("cgroup2", function()
    return sh.run("grep -q ' - cgroup2 ' /proc/self/mountinfo") and true or "no cgroup v2 hierarchy is mounted here"
  end)
end

--- Is a program there? true, or false and why.
function M.program(path)
  return probe("program " .. path, function()
    return sh.run("test -x " .. sh.quote(path)) and true or (path .. " is not installed here")
  end)
end

--- Does this build have Linux's confinement layers (namespaces, Landlock,
--- seccomp, cgroups)? Not in `make PORTABLE=1` nor off Linux. true, or
--- false and why.
function M.layers()
  return probe("layers", function()
    local caps = require("sandbox").capabilities()
    return caps.confine_layers and true
      or ("this build has no Linux layers (%s): its commands run unconfined"):format(
        caps.platform == "linux" and "make PORTABLE=1" or caps.platform)
  end)
end

--- What a spec file that needs Linux's layers says in a build without
--- them (it then makes one pending case of it and returns), or nil.
function M.without_layers(what)
  local ok, why = M.layers()
  if ok then return nil end
  return ("not run here: %s; %s"):format(what, why)
end

--- Where the host cannot do what a case needs: note it (the case passes,
--- said) and return false; else true. Use: if not host.can(what, host.root()) then return end
function M.can(what, ok, why)
  if ok then return true end
  M.note(what, why or "not possible on this host")
  return false
end

--- Assert that a confined attack was refused, where the host allows the
--- call; where it does not, note it and pass.
function M.expect_refused(op, out, label)
  if ABI[op] then
    local can, why = M.abi(op)
    if not can then
      M.note("refusal of " .. (label or op), why)
      return
    end
  end
  assert.matches("^refused", out, 1, label or op)
end

return M
