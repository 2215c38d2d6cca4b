-- busted output handler: the usual terminal output, then one plain line
-- "N passed, N failed" (failures + errors), also appended to the file named
-- by $SANDBOX_TEST_COUNTS so .ci/run can add up several runs. With
-- $SANDBOX_TEST_SLOWEST = N, the N slowest tests and files come first (where
-- a run's time goes).
return function(options)
  local busted = require "busted"
  local inner_name = os.getenv("SANDBOX_TEST_OUTPUT") or "utfTerminal"
  local handler = require("busted.outputHandlers." .. inner_name)(options)
  local inner_subscribe = handler.subscribe
  local slowest = tonumber(os.getenv("SANDBOX_TEST_SLOWEST") or "")
  local clock = os.time
  pcall(function() clock = require("sandbox.core").clock end)
  local tests, files, started = {}, {}, {}

  local function top(list, n, what)
    table.sort(list, function(a, b) return a[2] > b[2] end)
    io.write(("\nthe %d slowest %s:\n"):format(math.min(n, #list), what))
    for i = 1, math.min(n, #list) do io.write(("  %7.2f s  %s\n"):format(list[i][2], list[i][1])) end
  end

  handler.subscribe = function(self, opts)
    inner_subscribe(self, opts)
    if slowest then
      busted.subscribe({ "test", "start" }, function(el) started[el] = clock() return nil, true end)
      busted.subscribe({ "test", "end" }, function(el)
        local t = el.trace or {}
        if started[el] then
          tests[#tests + 1] = { ("%s:%s %s"):format(t.short_src or "?", t.currentline or "?", el.name or "?"),
                                clock() - started[el] }
        end
        started[el] = nil
        return nil, true
      end)
      busted.subscribe({ "file", "start" }, function(el) started[el] = clock() return nil, true end)
      busted.subscribe({ "file", "end" }, function(el)
        if started[el] then files[#files + 1] = { el.name or "?", clock() - started[el] } end
        started[el] = nil
        return nil, true
      end)
    end
    busted.subscribe({ "suite", "end" }, function()
      if slowest then
        top(tests, slowest, "tests")
        top(files, slowest, "spec files")
      end
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
