-- Differential testing (SPEC §9): random operation sequences with nasty
-- paths give the same results and error codes on the VirtualSandbox and the
-- ContainerSandbox with each resolver. SANDBOX_DIFF_SEQUENCES sets how many
-- (make difftest runs many more); a divergence prints a minimal reproduction.
local sandbox = require "sandbox"
local backends = require "support.backends"
local diff = require "support.difftest"

local N = tonumber(os.getenv("SANDBOX_DIFF_SEQUENCES")) or 3000
local LEN = 24
local SEED = tonumber(os.getenv("SANDBOX_DIFF_SEED")) or 1

local function container(resolver)
  local dir = backends.tmpdir("diff-" .. resolver)
  return {
    name = "container (" .. resolver .. ")",
    new = function()
      return assert(sandbox.container { base_dir = dir, resolver = resolver, exec = false, allow_escaping_links = true })
    end,
    done = function(sb) -- empty the root for the next sequence
      for _, e in ipairs(assert(sb:readdir("."))) do assert(sb:remove(e.name, { recursive = true })) end
      sb:dispose()
    end,
  }
end

-- One OverlaySandbox for every sequence (an overlay costs a namespace):
-- emptied through its merged view between sequences, as the containers are.
local function overlay()
  local sb
  return {
    name = "overlay",
    new = function()
      sb = sb or assert(sandbox.overlay { base_dir = backends.tmpdir("diff-overlay"), exec = false,
                                          allow_escaping_links = true })
      return sb
    end,
    done = function(s)
      for _, e in ipairs(assert(s:readdir("."))) do assert(s:remove(e.name, { recursive = true })) end
    end,
    close = function() if sb then sb:dispose() end end,
  }
end

describe("differential testing", function()
  it(("%d random sequences agree on every backend (seeds %d..%d)"):format(N, SEED, SEED + N - 1), function()
    local factories = { {
      name = "virtual",
      new = function() return sandbox.virtual { cwd = "/sandbox", allow_escaping_links = true } end, -- "/x" lies outside, as on disk
      done = function(sb) sb:dispose() end,
    } }
    if sandbox.capabilities().openat2 then factories[#factories + 1] = container("openat2") end
    factories[#factories + 1] = container("fallback")
    local ov = not os.getenv("SANDBOX_TEST_UNCONFINED") and overlay() -- valgrind's run has no namespaces
    if ov then factories[#factories + 1] = ov end
    local ops_run = 0
    for seed = SEED, SEED + N - 1 do
      local ops = diff.gen_sequence(seed, LEN)
      local bad = diff.run(factories, ops)
      if bad then
        local small, sbad = diff.shrink(factories, ops)
        error(diff.report(factories, seed, small, sbad), 0)
      end
      ops_run = ops_run + #ops
    end
    if ov then ov.close() end
    io.write(("\n  differential: %d sequences, %d operations, %d backends, no divergence"):format(
      N, ops_run, #factories))
  end)

  it("would catch a divergence (the harness is not blind)", function()
    local factories = {
      { name = "virtual", new = function() return sandbox.virtual() end, done = function(sb) sb:dispose() end },
      { name = "liar", new = function()
          local sb = sandbox.virtual()
          return setmetatable({}, { __index = function(_, k)
            if k == "read_file" then return function() return "forged" end end
            local v = sb[k]
            if type(v) == "function" then return function(_, ...) return v(sb, ...) end end
            return v
          end })
        end, done = function() end },
    }
    local ops = { { kind = "write", path = { rel = "a" }, data = "x", opts = {} },
                  { kind = "mkdir", path = { rel = "b" }, opts = {} },
                  { kind = "read", path = { rel = "a" } } }
    local bad = diff.run(factories, ops)
    assert.is_table(bad)
    local small = diff.shrink(factories, ops)
    assert.equal(1, #small) -- reading alone already diverges
    assert.matches('sb:read_file%("a"%)', diff.report(factories, 7, small, diff.run(factories, small)))
  end)
end)
