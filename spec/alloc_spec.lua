-- Memory goes through the Lua state's allocator (SPEC §8): a host allocator
-- that refuses must produce ENOSPC or a Lua memory error, never an abort, a
-- corrupt tree or a leak. Uses the C test host spec/c/alloc_cap.c.
local sh = require "support.sh"
local build = require("support.sh").build
local host = build .. "/test/alloc_cap"

describe("allocation through the Lua allocator", function()
  it("a byte cap yields ENOSPC, the tree stays readable, every byte is returned", function()
    for _, cap in ipairs { 3000000, 9000000 } do
      local ok, out = sh.run(("SANDBOX_BUILD=%s %s %d spec/c/oom_virtual.lua"):format(build, host, cap))
      assert.is_true(ok, out)
      assert.matches("ENOSPC [1-9]", out)
      assert.matches("closed: 0 bytes still allocated", out)
    end
  end)

  it("failing any single allocation of a mixed workload never aborts, corrupts or leaks", function()
    local ok, out = sh.run(("SANDBOX_BUILD=%s %s fail:0 spec/c/oom_ops.lua"):format(build, host))
    assert.is_true(ok, out)
    local total = tonumber(out:match("(%d+) counted"))
    assert.is_true(total > 300, out)
    -- one process per allocation index; report only the ones that misbehave.
    -- SANDBOX_ALLOC_STRIDE=k tries every k-th index (CI's ASan run, where
    -- each process costs the sanitizer's start; the plain run tries all)
    local stride = tonumber(os.getenv("SANDBOX_ALLOC_STRIDE")) or 1
    local script = ([[
      bad=0
      for n in $(seq 1 %d %d); do
        out=$(SANDBOX_BUILD=%s %s fail:$n spec/c/oom_ops.lua 2>&1); rc=$?
        case "$out" in *consistent*"closed: 0 bytes"*) [ $rc -eq 0 ] && continue;; esac
        bad=$((bad+1)); [ $bad -le 3 ] && printf 'fail:%%s rc=%%s: %%s\n' "$n" "$rc" "$out"
      done
      echo "bad=$bad"
    ]]):format(stride, total + 10, build, host)
    local _, res = sh.run(script)
    assert.equal("bad=0", res:match("bad=%d+"), res)
  end)
end)
