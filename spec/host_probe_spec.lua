-- The host probes of the attack specs (spec/support/host.lua): a refusal is
-- asserted where the host itself makes the call, and noted, never failed,
-- where it cannot. Both branches, whatever this machine does.
local hostcan = require "support.host"

describe("host probes", function()
  it("the unconfined run of an attack says what the host did", function()
    local out = hostcan.unconfined("i386")
    assert.is_truthy(out == "ok" or out:match("^refused %u+") or out:match("^killed by signal %d+"), out)
  end)

  it("where the host makes the call, a confined attack must be refused", function()
    hostcan.assume("x32", "ok")
    assert.is_true((hostcan.abi("x32")))
    hostcan.expect_refused("x32", "refused EPERM")
    assert.has_error(function() hostcan.expect_refused("x32", "ok") end)
    assert.has_error(function() hostcan.expect_refused("x32", "") end)
  end)

  it("where the host cannot make it, the case passes with a note that says why", function()
    local real = hostcan.notes_file -- this case's notes are not the run's
    hostcan.notes_file = os.tmpname()
    finally(function()
      os.remove(hostcan.notes_file)
      hostcan.notes_file = real
    end)
    hostcan.assume("i386", "killed by signal 11")
    local can, why = hostcan.abi("i386")
    assert.is_false(can)
    assert.matches("not available on this host", why)
    hostcan.expect_refused("i386", "")
    hostcan.expect_refused("i386", "") -- noted once
    local notes = hostcan.notes()
    assert.equal(1, #notes)
    assert.matches("^refusal of i386: i386 system calls", notes[#notes])
  end)
end)

-- The machine of issue 28, made here: a seccomp filter kills every i386 call
-- of the process tree before the sandbox exists (filters are inherited), so
-- the host cannot make the call outside the sandbox, as where `int $0x80`
-- faults. The attack's whole path (probe, confined run, verdict) then passes
-- with a note, on any host.
describe("on a host where i386 calls fault (simulated with a seccomp filter)", function()
  local sh = require "support.sh"
  local backends = require "support.backends"

  it("the i386 attack is not checked, and the note says why", function()
    local dir = backends.tmpdir("i386")
    assert(sh.run(("cp %s/test/attack %s/attack"):format(sh.build, dir)))
    local notes = os.tmpname()
    local ok, out = sh.run(([[%s/test/no_ns i386 %s -e '
      package.path = "./lua/?.lua;./lua/?/init.lua;./spec/?.lua;" .. package.path
      package.cpath = "%s/?.so;" .. package.cpath
      local hostcan = require "support.host"
      hostcan.notes_file = "%s"
      print("host: " .. hostcan.unconfined("i386"))
      local sb = assert(require("sandbox").container { base_dir = "%s" })
      local r = assert(sb:exec("./attack", { "i386" }))
      print("inside: " .. (r.signal or r.exit_code))
      hostcan.expect_refused("i386", r.stdout)
      for _, n in ipairs(hostcan.notes()) do print("note: " .. n) end
      sb:close()']]):format(sh.build, sh.lua(), sh.build, notes, dir))
    os.remove(notes)
    assert(ok, out)
    assert.matches("host: killed by signal %d+", out)
    assert.matches("inside: SIG%u+", out) -- nothing was made, nothing printed
    assert.matches("note: refusal of i386: i386 system calls %(int %$0x80%): not available on this host outside any sandbox either %(killed by signal %d+%)", out)
  end)
end)
