--- Writing record files: bundles and, beside them, their evidence entries. An entry is written before
-- the run that names it, so a process stopped between the two leaves an unreferenced entry, never a run
-- naming an entry that is not there. Also the check that no output is written over an input.
local core = require 'kluabench.core'
local evidence = require 'kluabench.record.evidence'
local files = require 'kluabench.util.files'
local args = require 'kluabench.util.args'
local record = require 'kluabench.record'

local M = {}

--- Appends a bundle as one JSON line to path ("-": stdout), its evidence entry first to the samples file.
-- @signature writer.append(path, bundle [, samples]) -> true | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(writer.append(dir .. "/run.jsonl", bundle)) -- its samples go to dir/run.samples.jsonl
--   kb.remove_tree(dir)
function M.append(path, bundle, samples)
  args.check('writer.append', 1, path, 'string', 'file path')
  args.check('writer.append', 2, bundle, 'table', 'bundle')
  if type(bundle.run) ~= 'table' then error("bad argument #2 to 'writer.append' (bundle without a run)", 2) end
  local ok, err = evidence.write_for(bundle, path, samples)
  if not ok then return nil, err end
  return files.append_jsonl(path, bundle)
end

-- Whole-file writes another process may race: a claim taken when the work starts, checked at the write.

-- No output written over an input: every command that writes checks it before reading or writing.

--- path made absolute against the working directory.
-- @signature writer.absolute(path) -> path
-- @example print(writer.absolute("results/run.jsonl")) -- the working directory .. "/results/run.jsonl"
function M.absolute(path)
  args.check('writer.absolute', 1, path, 'string', 'path')
  if path:sub(1, 1) == '/' then return path end
  local cwd = os.getenv('PWD')
  if not cwd or cwd == '' then cwd = core.realpath('.') or '.' end
  path = path:gsub('^%./', '')
  return cwd .. '/' .. path
end

local function parent_and_base(path)
  local parent, base = path:match('^(.*)/([^/]*)$')
  if not parent then return '.', path end
  return parent == '' and '/' or parent, base
end

-- Links followed before a path is taken as it stands (Linux's SYMLOOP_MAX).
local MAX_LINKS = 40

--- path as one spelling: its realpath; a dangling link followed to the path it names (a file not yet
-- written: --samples linked to a --out that does not exist yet is that --out); else its deepest
-- existing ancestor's realpath with the rest after it.
-- @signature writer.canonical(path) -> path
-- @example print(writer.canonical("/tmp/../tmp/no-such-dir/run.jsonl")) --> /tmp/no-such-dir/run.jsonl
function M.canonical(path)
  args.check('writer.canonical', 1, path, 'string', 'path')
  path = M.absolute(path)
  local real = core.realpath(path)
  if real then return real end
  for _ = 1, MAX_LINKS do
    local st = core.stat(path)
    local to = st and st.type == 'link' and core.readlink(path)
    if not to then break end
    path = to:sub(1, 1) == '/' and to or (parent_and_base(path) .. '/' .. to)
    real = core.realpath(path)
    if real then return real end
  end
  local rest, p = {}, path
  while true do
    local parent, base = parent_and_base(p)
    table.insert(rest, 1, base)
    local r = core.realpath(parent)
    if r then return (r == '/' and '' or r) .. '/' .. table.concat(rest, '/') end
    if parent == '/' or parent == '.' or parent == p then return path end
    p = parent
  end
end

--- The inputs {path, what} for M.check_output of the files a command reads, and their samples files.
-- @signature writer.file_inputs(paths [, without_samples]) -> inputs
-- @example print(#writer.file_inputs({"a.jsonl", "-"})) --> 2
function M.file_inputs(paths, without_samples)
  args.check('writer.file_inputs', 1, paths, 'table', 'list of paths')
  local inputs = {}
  for _, path in ipairs(paths) do
    if path ~= '-' then
      local shown = args.printable(path, 200)
      inputs[#inputs + 1] = { path, 'the input ' .. shown }
      if not without_samples then
        inputs[#inputs + 1] = { evidence.samples_path(path), 'the samples file of the input ' .. shown }
      end
    end
  end
  return inputs
end

--- Whether out (and, unless alone, its samples file) would overwrite an input, by canonical path or
-- device and inode: true, or nil and "OPTION PATH is WHAT: ..."; role(parent, name) names directory inputs.
-- @signature writer.check_output(option, out, inputs [, alone [, role]]) -> true | nil, message
-- @example print(writer.check_output("-o", "a.jsonl", writer.file_inputs({"a.jsonl"}), true)) -- nil, "-o a.jsonl is ..."
function M.check_output(option, out, inputs, alone, role)
  args.check('writer.check_output', 1, option, 'string', 'option name')
  if out == nil or out == '-' then return true end
  local keyed = {}
  for _, input in ipairs(inputs) do keyed[M.canonical(input[1])] = keyed[M.canonical(input[1])] or input end
  local targets = { { path = out } }
  local samples = evidence.samples_path(out)
  if not alone then targets[2] = { path = samples, samples = true } end
  for _, t in ipairs(targets) do
    local c = M.canonical(t.path)
    local what = keyed[c] and keyed[c][2]
    -- the samples file beside out is out itself (a link to it, written or not)
    if not what and t.samples and c == M.canonical(out) then what = 'the records file' end
    if not what and role then
      local parent, base = parent_and_base(c)
      what = role(parent, base)
    end
    if not what then
      local st = core.stat(t.path, true)
      if st then
        for _, input in ipairs(inputs) do
          local ist = core.stat(input[1], true)
          if ist and ist.dev == st.dev and ist.ino == st.ino then what = input[2] break end
        end
      end
    end
    if what then
      return nil, string.format('%s %s%s is %s: writing there would overwrite an input; give another path', option,
        args.printable(out, 200), t.samples and (' (its samples file ' .. args.printable(samples, 200) .. ')') or '',
        what)
    end
  end
  return true
end

return M
