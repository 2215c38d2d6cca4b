-- luacheck (make lint, run by CI): the Lua layer, the command line and the specs.
std = "max"
max_line_length = false -- descriptions and help texts are long strings, kept whole
exclude_files = { "build*/**" }
-- the Neovim modules run inside Neovim, whose API is the global `vim`
files["lua/sandbox/nvim.lua"] = { read_globals = { "vim" } }
files["lua/sandbox/health.lua"] = { read_globals = { "vim" } }
files["lua/sandbox/adapters/*.lua"] = { read_globals = { "vim" } }
files["plugin/*.lua"] = { read_globals = { "vim" }, globals = { "vim.g" } }
-- the specs: busted's globals; the Neovim host test runs inside Neovim, and
-- the allocation-failure script gets arm() from its C host
files["spec/**/*_spec.lua"] = { std = "+busted" }
files["spec/nvim/*.lua"] = { read_globals = { "vim" }, globals = { "vim.notify" } } -- the test catches notices
files["spec/c/oom_ops.lua"] = { read_globals = { "arm" } }
