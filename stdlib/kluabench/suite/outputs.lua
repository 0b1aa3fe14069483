--- No output written over an input: the check every command that writes
-- and the harness make before anything is read or written (issue 24's
-- "no command writes over one of its inputs"). An output is compared with
-- each input, and the samples file beside it (evidence.samples_path) with
-- them too, by real path (the deepest existing ancestor for a path not there
-- yet) and by device and inode. In the record layer, below the harness and
-- the commands that use it (kluabench.dist.shards adds a launcher's run
-- directory).
local evidence = require 'kluabench.record.evidence'
local output = require 'kluabench.util.json'
local printable = require('kluabench.util.args').printable

local M = {}

--- path made absolute against the working directory.
function M.absolute(path)
  if path:sub(1, 1) == '/' then return path end
  local cwd = os.getenv('PWD')
  if not cwd or cwd == '' then
    local p = io.popen('pwd')
    cwd = p and p:read('l') or '.'
    if p then p:close() end
  end
  path = path:gsub('^%./', '')
  return cwd .. '/' .. path
end

local function parent_and_base(path)
  local parent, base = path:match('^(.*)/([^/]*)$')
  if not parent then return '.', path end
  return parent == '' and '/' or parent, base
end

--- path as one spelling for comparing: its realpath when it exists, else the realpath of its
-- deepest existing ancestor with the rest of path after it.
function M.canonical(path)
  local realpath = require('kluabench.core').realpath
  path = M.absolute(path)
  local real = realpath(path)
  if real then return real end
  local rest, p = {}, path
  while true do
    local parent, base = parent_and_base(p)
    table.insert(rest, 1, base)
    local r = realpath(parent)
    if r then return (r == '/' and '' or r) .. '/' .. table.concat(rest, '/') end
    if parent == '/' or parent == '.' or parent == p then return path end
    p = parent
  end
end

--- The files a command reads, as inputs for M.check_output: each path as {path, "the input PATH"}
-- and, unless without_samples, the samples file beside it (evidence.samples_path) as {samples,
-- "the samples file of the input PATH"}: the raw samples its records name are part of it.
function M.file_inputs(paths, without_samples)
  local inputs = {}
  for _, path in ipairs(paths) do
    if path ~= '-' then
      local shown = printable(path, 200)
      inputs[#inputs + 1] = { path, 'the input ' .. shown }
      if not without_samples then
        inputs[#inputs + 1] = { evidence.samples_path(path), 'the samples file of the input ' .. shown }
      end
    end
  end
  return inputs
end

--- Whether an output file (and the samples file beside it) would overwrite an input: inputs is a list of
-- {path, what}; alone: the output has no samples file beside it (an SVG, an HTML page), so only out is
-- checked; role (optional): role(parent, name) -> what, for the files of a directory that count as
-- inputs by their names (a launcher's run directory, kluabench.dist.shards). Paths are compared as
-- M.canonical spells them, and by device and inode where both exist (hard links). Returns true, or
-- nil and "OPTION PATH is WHAT: ..." for a usage error.
function M.check_output(option, out, inputs, alone, role)
  if out == nil or out == '-' then return true end
  local stat = require('kluabench.core').stat
  local keyed = {}
  for _, input in ipairs(inputs) do keyed[M.canonical(input[1])] = keyed[M.canonical(input[1])] or input end
  local targets = { { path = out } }
  local samples = evidence.samples_path(out)
  if not alone then targets[2] = { path = samples, samples = true } end
  for _, t in ipairs(targets) do
    local c = M.canonical(t.path)
    local what = keyed[c] and keyed[c][2]
    if not what and role then
      local parent, base = parent_and_base(c)
      what = role(parent, base)
    end
    if not what then
      local st = stat(t.path, true)
      if st then
        for _, input in ipairs(inputs) do
          local ist = stat(input[1], true)
          if ist and ist.dev == st.dev and ist.ino == st.ino then what = input[2] break end
        end
      end
    end
    if what then
      return nil, string.format('%s %s%s is %s: writing there would overwrite an input; give another path', option,
        printable(out, 200), t.samples and (' (its samples file ' .. printable(samples, 200) .. ')') or '',
        what)
    end
  end
  return true
end

return M
