-- What a model reads: file views with line numbers, command results,
-- and error messages that say what failed and what to try.
local M = {}

local fmt, concat, floor = string.format, table.concat, math.floor

M.MAX_LINE = 2000     -- characters of one line shown by read_file
M.DEFAULT_LIMIT = 2000 -- lines read_file shows at once

--- Contents that are not text: a NUL byte near the start (git's rule).
M.is_binary = require("sandbox.document").is_binary

--- Lines [offset, offset+limit) of s, numbered like `cat -n`, with a note
--- when not everything is shown. Returns text, total line count.
function M.numbered(s, offset, limit)
  local lines, total = {}, 0
  local shown_first, shown_last, cut_lines = nil, nil, 0
  local last = offset + limit - 1
  for line in (s:sub(-1) == "\n" and s or s .. "\n"):gmatch("(.-)\r?\n") do
    total = total + 1
    if total >= offset and total <= last then
      if #line > M.MAX_LINE then
        line = line:sub(1, M.MAX_LINE) .. fmt(" [... line cut: %d more characters]", #line - M.MAX_LINE)
        cut_lines = cut_lines + 1
      end
      lines[#lines + 1] = fmt("%6d\t%s", total, line)
      shown_first = shown_first or total
      shown_last = total
    end
  end
  if #s == 0 then return "(the file is empty)", 0 end
  if not shown_first then
    return fmt("(the file has %d line%s; offset %d is past its end)", total, total == 1 and "" or "s", offset), total
  end
  local text = concat(lines, "\n")
  if shown_first > 1 or shown_last < total then
    text = text .. fmt("\n[showing lines %d-%d of %d%s]", shown_first, shown_last, total,
      shown_last < total and fmt("; use offset=%d to read on", shown_last + 1) or "")
  end
  return text, total
end

--- Keep at most max characters: the head and the tail, the middle counted.
function M.cap(s, max)
  if #s <= max then return s end
  local head = floor(max * 0.4)
  local tail = max - head
  return s:sub(1, head) .. fmt("\n[... %d characters omitted ...]\n", #s - max) .. s:sub(-tail)
end

local ADVICE = {
  ENOENT = "it does not exist. Paths are relative to the sandbox root; use list_files or find_files to see what is there",
  ENOTDIR = "a part of the path is a file, not a directory",
  EISDIR = "it is a directory; use list_files to see what it holds",
  EESCAPE = "it lies outside the sandbox. Use a path inside the sandbox root (a relative path, or an absolute one under the root)",
  EACCES = "the sandbox does not allow this",
  EEXIST = "it already exists",
  ENOTEMPTY = "the directory is not empty; pass recursive=true to delete it with everything in it",
  EFBIG = "it is too large for the sandbox's limits",
  ENOSPC = "the sandbox is out of space (its size or file-count limit)",
  ELOOP = "writes never follow a symbolic link (edit_file follows one inside the sandbox), and more than 40 links in a row are a loop",
  EINVAL = "the request is not valid",
  ENAMETOOLONG = "the path is too long",
  ENOTSUP = "this is not supported here",
  EBUSY = "too many processes are running; wait for one (process_output) or stop one (process_kill)",
  EAGAIN = "try again",
  EIO = "an input/output error happened",
}

--- An actionable message from a sandbox error (msg, code).
function M.error(what, msg, code)
  local advice = ADVICE[code]
  local detail = msg and msg:gsub("^E[A-Z]+: ", "") or "failed"
  if advice then return fmt("%s failed: %s (%s).", what, detail, advice) end
  return fmt("%s failed: %s.", what, detail)
end

local function secs(d) return d < 10 and fmt("%.2f", d) or fmt("%.0f", d) end

--- A command's result as text: status line, notes, output.
function M.command(r, max_output, timeout)
  local head = {}
  if r.timed_out then
    head[#head + 1] = fmt("The command timed out after %s s and was killed (%s); its output so far is below.",
      timeout and secs(timeout) or "its timeout", r.signal or "SIGTERM")
  elseif r.signal then
    head[#head + 1] = fmt("The command was killed by %s (exit code %d).", r.signal, r.exit_code)
  else
    head[#head + 1] = fmt("Exit code: %d", r.exit_code)
  end
  head[#head + 1] = fmt("Duration: %s s", secs(r.duration))
  if r.hint then head[#head + 1] = "Note: " .. r.hint .. "." end
  if r.truncated then
    head[#head + 1] = fmt("Note: the output was too long; %d bytes in the middle were dropped (the start and the end are kept).",
      r.dropped_bytes)
  end
  if r.output_incomplete then
    head[#head + 1] = "Note: a background process kept the output open; it was stopped and its output may be incomplete."
  end
  local out = {}
  if r.stdout ~= "" then out[#out + 1] = "stdout:\n" .. M.cap(r.stdout, max_output) end
  if r.stderr ~= "" then out[#out + 1] = "stderr:\n" .. M.cap(r.stderr, max_output) end
  if #out == 0 then out[1] = "(no output)" end
  return concat(head, "\n") .. "\n" .. concat(out, "\n")
end

return M
