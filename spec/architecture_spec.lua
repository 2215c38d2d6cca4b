-- The layout docs/ARCHITECTURE.md draws: a folder of csrc/ includes only
-- folders below it, so no two folders depend on each other.
local sh = require "support.sh"

-- lower numbers lie lower; folders of one number never include each other
-- (doc, init, zygote and rtree are programs of their own, built from their
-- folder and what lies below it)
local RANK = { plat = -1, base = 0, audit = 1, doc = 1, fs = 1, search = 2, review = 2, confine = 2, exec = 3, init = 3,
               zygote = 4, net = 4, remote = 4, lua = 5, rtree = 5, static = 6 }

describe("the C core's layout", function()
  it("has every folder ranked, and each includes only folders below it", function()
    local wrong, seen = {}, 0
    for _, file in ipairs(sh.lines("cd csrc && ls */*.c */*.h")) do
      local folder = file:match("^([^/]+)/")
      assert.is_not_nil(RANK[folder], "a folder the layout does not place: " .. folder)
      for line in io.lines("csrc/" .. file) do
        local inc = line:match('^%s*#%s*include%s+"([^/"]+)/[^"]+"')
        if inc and inc ~= folder then
          seen = seen + 1
          assert.is_not_nil(RANK[inc], file .. " includes from an unknown folder " .. inc)
          if RANK[inc] >= RANK[folder] then wrong[#wrong + 1] = file .. " -> " .. line end
        end
      end
    end
    assert.is_true(seen > 50, "the includes were read")
    assert.same({}, wrong)
  end)
end)

describe("the C core's files", function()
  it("never call each other both ways (shared state lies below both, the assembler wires parts)", function()
    local files = sh.lines("ls csrc/*/*.c")
    local text, owner = {}, {}
    for _, f in ipairs(files) do
      text[f] = assert(sh.read_file(f))
      for head, name in ("\n" .. text[f]):gmatch("\n([%a_][^\n;{}()]-)%f[%w_](sb_[%w_]+)%s*%b()%s*{") do
        -- one name in two files: a platform's alternatives (confine/linux.c or
        -- confine/none.c, of which the Makefile builds one), owned by neither
        if not head:match("^static") then owner[name] = (owner[name] == nil or owner[name] == f) and f or false end
      end
    end
    local calls = {}
    for _, f in ipairs(files) do
      calls[f] = {}
      for name in text[f]:gmatch("%f[%w_](sb_[%w_]+)%s*%(") do
        local def = owner[name]
        if def and def ~= f then calls[f][def] = name end
      end
    end
    local pairs_found = {}
    for a, callees in pairs(calls) do
      for b, name in pairs(callees) do
        if a < b and calls[b][a] then pairs_found[#pairs_found + 1] = ("%s (%s) <-> %s (%s)"):format(a, name, b, calls[b][a]) end
      end
    end
    local n = 0
    for _, f in pairs(owner) do n = n + (f and 1 or 0) end
    assert.is_true(n > 200, "functions found: " .. n)
    assert.same({}, pairs_found)
  end)
end)
