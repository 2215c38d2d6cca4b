-- busted output handler: the usual terminal output, then one plain line
-- "N passed, N failed" (failures + errors), also appended to the file named
-- by $SANDBOX_TEST_COUNTS so .ci/run can add up several runs.
return function(options)
  local busted = require "busted"
  local inner_name = os.getenv("SANDBOX_TEST_OUTPUT") or "utfTerminal"
  local handler = require("busted.outputHandlers." .. inner_name)(options)
  local inner_subscribe = handler.subscribe

  handler.subscribe = function(self, opts)
    inner_subscribe(self, opts)
    busted.subscribe({ "suite", "end" }, function()
      local passed = self.successesCount
      local failed = self.failuresCount + self.errorsCount
      -- what this host could not show (support/host.lua): said, not hidden
      local ok, host = pcall(require, "support.host")
      local notes = ok and host.notes(true) or {}
      if #notes > 0 then
        io.write(("\nnot checked on this host (%d, passed with a note):\n"):format(#notes))
        for _, n in ipairs(notes) do io.write("  ", n, "\n") end
      end
      io.write(("%d passed, %d failed\n"):format(passed, failed))
      io.flush()
      local path = os.getenv("SANDBOX_TEST_COUNTS")
      if path and path ~= "" then
        local f = assert(io.open(path, "a"))
        f:write(("%d %d\n"):format(passed, failed))
        f:close()
      end
      return nil, true
    end)
  end
  return handler
end
