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
-- The kernel's overlayfs, or (userspace) the file operations over the
-- layers where it cannot be mounted.
local function overlay(userspace)
  local sb
  return {
    name = userspace and "overlay (userspace)" or "overlay",
    new = function()
      sb = sb or assert(sandbox.overlay { base_dir = backends.tmpdir(userspace and "diff-ovu" or "diff-overlay"),
                                          exec = false, allow_escaping_links = true,
                                          confine = userspace and { namespaces = false } or nil })
      return sb
    end,
    done = function(s)
      for _, e in ipairs(assert(s:readdir("."))) do assert(s:remove(e.name, { recursive = true })) end
    end,
    close = function() if sb then sb:dispose() end end,
  }
end

-- A tree in the base, for sequences that meet base entries: copy-ups,
-- whiteouts, opaque directories, renames of base directories.
local TREE = {
  { "mkdir", "a" }, { "mkdir", "a/b" }, { "write", "a/b/c", "abc\n" }, { "write", "a/d.txt", "d z\n" },
  { "write", "b", "bee" }, { "mkdir", "c" }, { "mkdir", "c/a" }, { "write", "c/a/x y", "1" },
  { "symlink", "a/b", "e.lua" }, { "symlink", "a/", "A" }, { "symlink", "nope", "c/d.txt" },
}

local function plant(sb)
  for _, t in ipairs(TREE) do
    if t[1] == "mkdir" then assert(sb:mkdir(t[2]))
    elseif t[1] == "write" then assert(sb:write_file(t[2], t[3]))
    else assert(sb:symlink(t[2], t[3])) end
  end
  return sb
end

local function planted_dir(name)
  local dir = backends.tmpdir(name)
  local sb = assert(sandbox.container { base_dir = dir, exec = false })
  plant(sb):dispose()
  return dir
end

-- Run n seeded sequences on the factories; a divergence fails with a minimal
-- reproduction. Returns how many operations ran.
local function run_seeds(factories, n)
  local ops_run = 0
  for seed = SEED, SEED + n - 1 do
    local ops = diff.gen_sequence(seed, LEN)
    local bad = diff.run(factories, ops)
    if bad then
      local small, sbad = diff.shrink(factories, ops)
      error(diff.report(factories, seed, small, sbad), 0)
    end
    ops_run = ops_run + #ops
  end
  return ops_run
end

describe("differential testing", function()
  it("random sequences over a tree in the base agree on the container and both overlays", function()
    local n = math.max(1, math.floor(N / 10))
    local function fresh(name, make)
      return { name = name, new = make, done = function(sb) sb:dispose() end }
    end
    local factories = {
      fresh("virtual", function()
        return plant(sandbox.virtual { cwd = "/sandbox", allow_escaping_links = true })
      end),
      fresh("container (fallback)", function()
        return assert(sandbox.container { base_dir = planted_dir("difft-c"), resolver = "fallback", exec = false,
                                          allow_escaping_links = true })
      end),
      fresh("overlay (userspace)", function()
        return assert(sandbox.overlay { base_dir = planted_dir("difft-ovu"), exec = false, allow_escaping_links = true,
                                        confine = { namespaces = false } })
      end),
    }
    if not os.getenv("SANDBOX_TEST_UNCONFINED") then
      factories[#factories + 1] = fresh("overlay", function()
        return assert(sandbox.overlay { base_dir = planted_dir("difft-ov"), exec = false, allow_escaping_links = true })
      end)
    end
    run_seeds(factories, n)
    io.write(("\n  differential over a base tree: %d sequences, %d backends, no divergence"):format(n, #factories))
  end)

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
    local ovu = overlay(true)
    factories[#factories + 1] = ovu
    local ops_run = run_seeds(factories, N)
    if ov then ov.close() end
    ovu.close()
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
