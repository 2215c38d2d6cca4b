-- The layout docs/ARCHITECTURE.md draws: a folder of csrc/ includes only
-- folders below it, so no two folders depend on each other.
local sh = require "support.sh"

-- lower numbers lie lower; folders of one number never include each other
local RANK = { base = 0, fs = 1, search = 2, review = 2, confine = 2, exec = 3, net = 4, remote = 4, lua = 5, static = 6 }

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
