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
