--- `kluabench migrate FILE... -o OUT`: results files of kluabench's earlier
-- record format rewritten in today's (kernelindex.dev/v1alpha1 as published).
local cli = require 'kluabench.commands.helpers'
local json = require 'kluabench.util.json'
local files = require 'kluabench.util.files'

local M = {}

M.USAGE = 'kluabench migrate FILE... -o OUT'

M.help = [[
Reads record bundles and writes them, in today's form, as JSON Lines to OUT,
with their raw samples in OUT's samples file beside it (OUT.samples.jsonl,
written anew). Bundles of kluabench's earlier format (before it followed
kernelindex's published schemas: kinds BenchmarkWorkload and
KernelImplementation, digests of JCS(spec), raw samples, execution and check
inside the run) are turned into documents valid against the public schemas,
with kernelindex's digests: the workload of a Liger benchmark's point becomes
kernelindex's own, the raw samples and what the run held beyond the schema go
into its evidence entry, every number is kept, and each run's old name as its label
migrated_name (a run is named as today's are: old names were cut before their time,
so two sessions of a point could share one). Bundles already of
today's form are written as they are, with their samples. The old digests
cannot be kept (the recipe changed). compare, plot and merge read old files
without this command (they migrate as they read); use it to publish them or
to verify them.

  -o, --out OUT   the migrated JSON Lines file (required). Neither OUT nor its
                  samples file may be an input or an input's samples file
                  (compared by real path and inode): a usage error

Exit status: 0 written, 1 an invalid input (too large, not JSON) or an
unwritable OUT, 2 usage error (a FILE that does not exist, is no regular file
or cannot be opened too: then nothing is written).]]

local function usage_error(fmt, ...) return cli.usage_error('migrate', fmt, ...) end

local function say(fmt, ...)
  io.stderr:write('kluabench migrate: ', cli.printable(string.format(fmt, ...), 400), '\n')
end

--- Runs the command on the words after "migrate"; returns the exit status.
function M.main(args)
  local opts, files = cli.parse_args(args or {}, { out = 'value', help = 'flag', aliases = { o = 'out', h = 'help' } })
  if not opts then return usage_error('%s', files) end
  if opts.help then return cli.help('migrate') end
  if #files == 0 then return usage_error('no FILE given') end
  if not opts.out then return usage_error('no -o OUT given') end
  local unreadable = cli.check_inputs('migrate', files)
  if unreadable then return unreadable end
  local evidence = require 'kluabench.record.evidence'
  local shards = require 'kluabench.dist.shards'
  local fresh, why_not = shards.check_output('-o', opts.out, shards.file_inputs(files))
  if not fresh then return usage_error('%s', why_not) end
  local reader = require 'kluabench.record.reader'
  local migrate = require 'kluabench.record.migrate'
  local bundles, old = {}, 0
  for _, path in ipairs(files) do
    cli.stop_if_interrupted()
    local files = require 'kluabench.util.files'
    local json = require 'kluabench.util.json'
    local text, rerr = files.read_text(path)
    if not text then
      say('%s', rerr)
      return 1
    end
    local items, line, why = reader.items(text, path)
    if not items then
      say('%s:%d: %s', path, line or 1, why)
      return 1
    end
    for _, it in ipairs(items) do
      if migrate.is_old(it.bundle) then old = old + 1 end
    end
    local bs, err = reader.parse(text, path)
    if not bs then
      say('%s', err)
      return 1
    end
    table.move(bs, 1, #bs, #bundles + 1, bundles)
  end
  local writer = require 'kluabench.record.writer'
  local ok, err = evidence.write_file(bundles, opts.out)
  if not ok then
    say('cannot write %s', tostring(err))
    return 1
  end
  local lines = {}
  for _, b in ipairs(bundles) do
    local okv, verr = writer.check(b)
    if not okv then
      say('%s', verr)
      return 1
    end
    lines[#lines + 1] = assert(json.encode_line(b))
  end
  ok, err = files.write_atomic(opts.out, table.concat(lines, '\n') .. (#lines > 0 and '\n' or ''))
  if not ok then
    say('cannot write %s', tostring(err))
    return 1
  end
  say('%d bundle%s (%d of the earlier format migrated) -> %s', #bundles, #bundles == 1 and '' or 's', old, opts.out)
  return 0
end

M.run = M.main

return M
