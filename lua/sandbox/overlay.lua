-- The OverlaySandbox (SPEC §11): copy-on-write over a real directory. The
-- C core makes a ContainerSandbox whose namespace init mounts the kernel's
-- overlayfs over base_dir (upper and work layers in state_dir) and binds
-- every file operation to that merged view, so file operations and
-- commands see one tree and base_dir is never written. Review — changes,
-- diff, commit, discard, checkpoints — is sandbox.overlay.review, on the
-- host's side only (no agent tool reaches it).
local backend = require "sandbox.backend"
local container = require "sandbox.container"
local options = require "sandbox.options"

local M = {}

local pairs = pairs

M.options = { state_dir = { check = options.checkers.dir } }
for k, v in pairs(container.options) do M.options[k] = v end

local b = backend.define("overlay", { options = M.options, required = { "base_dir" }, commands = true })
M.schema = b.schema

--- The merged view alone, without review (the review's own access to it).
M.raw = b.new

--- sandbox.overlay{base_dir =, state_dir =, ...container options}: the
--- sandbox, or nil, msg, code. Where the kernel cannot mount the overlay
--- (no sandbox namespace) the file operations run over the layers in
--- userspace (sb.overlay_view == "userspace") and exec is ENOTSUP.
function M.new(opts)
  local sb, msg, code = b.new(opts)
  if not sb then return nil, msg, code end
  -- loaded with the first overlay: a host that never makes one does not pay for it
  local ok, err, ecode = require("sandbox.overlay.review").attach(sb)
  if not ok then
    sb:dispose()
    return nil, err, ecode
  end
  return sb
end

return M
