-- The glob matcher shared by glob(), grep{glob=} and rules.
local match = require("sandbox.core").glob_match

describe("glob matcher", function()
  local cases = {
    -- pattern, path, expected
    { "*", "a", true }, { "*", "a/b", false }, { "*", ".hidden", true }, { "*", "", false },
    { "a*", "abc", true }, { "*c", "abc", true }, { "a*c", "ac", true }, { "a*c", "abd", false },
    { "?", "a", true }, { "?", "ab", false }, { "?", "é", true }, { "??", "é", false },
    { "[abc]", "b", true }, { "[abc]", "d", false }, { "[a-c]x", "bx", true },
    { "[!a-c]", "d", true }, { "[^a-c]", "a", false }, { "[]]", "]", true }, { "[!]]", "a", true },
    { "[é-ë]", "ê", true }, { "[a", "[a", true }, { "\\*", "*", true }, { "\\*", "a", false },
    { "a/*/c", "a/b/c", true }, { "a/*/c", "a/b/x/c", false },
    { "**", "", true }, { "**", "a/b/c", true }, { "a/**", "a", true }, { "a/**", "a/b/c", true },
    { "a/**", "ab", false }, { "**/c", "c", true }, { "**/c", "a/b/c", true }, { "**/c", "a/bc", false },
    { "a/**/c", "a/c", true }, { "a/**/c", "a/x/y/c", true }, { "a/**/c", "a/x/y/d", false },
    { "**/*.lua", "src/x.lua", true }, { "**/*.lua", "x.lua", true }, { "**/*.lua", "x.luac", false },
    { "a//b", "a/b", true }, { "./a", "a", true }, { "a/b", "a//b", true },
    { "**/**/x", "x", true }, { "a**b", "axxb", true }, { "a**b", "ax/xb", false },
  }
  for _, c in ipairs(cases) do
    it(("%q vs %q -> %s"):format(c[1], c[2], tostring(c[3])), function()
      assert.equal(c[3], match(c[1], c[2]))
    end)
  end

  it("runs in linear time on patterns that are exponential for naive matchers", function()
    local path = string.rep("a", 4000)
    local t0 = os.clock()
    assert.is_false(match(string.rep("*a", 60) .. "*b", path))
    local deep = string.rep("a/", 1000) .. "x"
    assert.is_false(match(string.rep("**/", 50) .. "y", deep))
    -- a hang guard, not a benchmark: backtracking blow-up would take hours
    assert.is_true(os.clock() - t0 < 10, "took " .. (os.clock() - t0) .. " s")
  end)
end)
