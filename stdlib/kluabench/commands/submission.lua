--- `kluabench submission FILE... -o OUT`: a kernelindex submission document
-- of the record bundles in results files.
local cli = require 'kluabench.commands.helpers'
local json = require 'kluabench.util.json'
local fs = require 'kluabench.util.files'

local writer = require 'kluabench.record.writer'
local reader = require 'kluabench.record.reader'
local record_submission = require 'kluabench.record.submission'

local M = {}

M.USAGE = 'kluabench submission FILE... -o OUT [--project NAME]'

M.help = [[
Reads record bundles (results files of the harness, import-liger or merge)
and writes one kernelindex submission document (JSON, which kernelindex's
YAML reader takes) in the layout of its submission path:
  {projects, operations, workloads, implementations: [{manifest, projectSlug}],
   runs: [{run, protocol, environment}]}
Each document appears once (CI checks the documents against kernelindex's
schemas with an independent validator; kluabench does not as it writes), and
a document whose metadata.name another document of its kind already bears is
renamed NAME-<12 hex digits of its digest> (names are not digested: no digest
changes); so is a project, operation or implementation whose slug
(kernelindex's kebab of the name, 100 characters) another one has.

Implementations of kluabench's built-in kernels belong to the project
"kluabench"; imported ones to their upstream project (Liger-Kernel,
Transformers, PyTorch, ...); all others to --project NAME (default "local", a
project of kind individual). The runs' raw-samples evidence keeps its uri and
digest: kernelindex can check the samples only where the file is published.

  -o, --out OUT     the submission document (required; never one of the inputs
                    or an input's samples file, compared by real path and inode)
  --project NAME    the project of user kernels and undeclared providers

Exit status: 0 written, 1 an invalid input (not JSON, no bundles), 2 usage
error (a FILE that does not exist, is no regular file or cannot be opened too:
then nothing is written).]]

local function usage_error(fmt, ...) return cli.usage_error('submission', fmt, ...) end

local function say(fmt, ...)
  io.stderr:write('kluabench submission: ', cli.printable(string.format(fmt, ...), 400), '\n')
end

--- Runs the command on the words after "submission"; returns the exit status.
function M.main(args)
  local opts, paths = cli.parse_args(args or {}, { out = 'value', project = 'value', help = 'flag',
    aliases = { o = 'out', h = 'help' } })
  if not opts then return usage_error('%s', paths) end
  if opts.help then return cli.help('submission') end
  if #paths == 0 then return usage_error('no FILE given') end
  if not opts.out then return usage_error('no -o OUT given (the submission document)') end
  local unreadable = cli.check_inputs('submission', paths)
  if unreadable then return unreadable end
  local fresh, why_not = writer.check_output('-o', opts.out, writer.file_inputs(paths), true)
  if not fresh then return usage_error('%s', why_not) end
  local bundles = {}
  for _, path in ipairs(paths) do
    cli.stop_if_interrupted()
    local bs, err = reader.read(path)
    if not bs then
      say('%s', err)
      return 1
    end
    table.move(bs, 1, #bs, #bundles + 1, bundles)
  end
  local doc, n = record_submission.of(bundles, { project = opts.project })
  if not doc then
    say('%s', n)
    return 1
  end
  local text, err = json.encode_pretty(doc)
  if not text then
    say('%s', err)
    return 1
  end
  local ok, werr = fs.write_atomic(opts.out, text)
  if not ok then
    say('cannot write %s', tostring(werr))
    return 1
  end
  say('%d run%s, %d implementation%s, %d workload%s, %d operation%s, %d project%s -> %s', n.runs,
    n.runs == 1 and '' or 's', n.implementations, n.implementations == 1 and '' or 's', n.workloads,
    n.workloads == 1 and '' or 's', n.operations, n.operations == 1 and '' or 's', n.projects,
    n.projects == 1 and '' or 's', opts.out)
  return 0
end

M.run = M.main

return M
