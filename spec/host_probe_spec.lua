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
