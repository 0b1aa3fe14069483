-- Record bundles for the history specs: sessions of llama4_rope forward at hidden 512, seq 2048,
-- bf16 on an H200, of today's format (tests/helpers/bundles.lua), their raw samples fresh draws of
-- a known median, so that a series over commits steps exactly where a test says. M.AA: real H200
-- records (tests/fixtures/records/h200_aa/) for the scripts that read measured sessions.
local prng = require 'kluabench.stats.prng'
local sub = require 'helpers.subprocess'
local bundles = require 'helpers.bundles'
local evidence = require 'kluabench.record.evidence'

local M = {}

M.AA = sub.root() .. '/tests/fixtures/records/h200_aa/'
M.SESSION = M.AA .. 'a.jsonl'
M.DEVICE = 'NVIDIA H200'

--- Bundles of one session: for each provider ({"fused", "copy"} by default) a bundle whose
-- samples (n, default 60) are drawn around median_ns[provider] with 1 % spread; its time (and so
-- its identity) made unique by tag.
function M.session(tag, median_ns, opts)
  opts = opts or {}
  local rng = prng.new(opts.seed or 1)
  local out = {}
  for _, provider in ipairs(opts.providers or { 'fused', 'copy' }) do
    local ms = {}
    for i = 1, opts.n or 60 do
      ms[i] = math.floor(median_ns[provider] * (1 + 0.01 * (rng:uniform() * 2 - 1)) + 0.5) / 1e6
    end
    out[#out + 1] = bundles.make { samples = ms, provider = provider, device = M.DEVICE, time = tag }
  end
  return out
end

--- Writes bundles as JSON Lines to path, their raw samples beside it (path's samples file).
function M.write(path, list)
  os.remove(path)
  os.remove(evidence.samples_path(path))
  for _, b in ipairs(list) do assert(require('kluabench.record.writer').append(path, b)) end
end

--- Makes a version-1 history database at spec (a SQLite path or a postgresql:// URI), as kluabench
-- wrote it before schema version 2: the tables of schema step 1 and the rows of
-- tests/fixtures/history/v1.sql (3 commits, 6 runs, 12 documents, 1 mark).
function M.v1_database(spec)
  local schema = require 'kluabench.history.schema'
  local steps = schema.STEPS
  schema.STEPS = { steps[1] }
  local ok, err = pcall(function()
    local h = assert(require('kluabench.history').open(spec, { create = true }))
    h:transaction(function() h:exec(assert(sub.slurp(sub.root() .. '/tests/fixtures/history/v1.sql'))) end)
    h:close()
  end)
  schema.STEPS = steps
  assert(ok, err)
end

--- Adds bundles to the open history database h as add_bundles does, one bundle per transaction,
-- with each transaction's first attempt rolled back by force once it has inserted its documents
-- and run again: what h:transaction does after a PostgreSQL deadlock or serialization failure.
-- Returns add_bundles' summary and the number of attempts rolled back.
function M.add_retried(h, bundles, commit)
  local history = require 'kluabench.history'
  local real, rolled = h.transaction, 0
  h.transaction = function(self, fn)
    local ok, err = pcall(real, self, function(x)
      fn(x)
      error('first attempt rolled back', 0)
    end)
    assert(not ok and err == 'first attempt rolled back', err)
    rolled = rolled + 1
    return real(self, fn)
  end
  local batch = history.store.BATCH
  history.store.BATCH = 1
  local ok, s = pcall(history.store.add_bundles, h, bundles, { commit = commit })
  history.store.BATCH = batch
  h.transaction = nil
  assert(ok, s)
  return s, rolled
end

--- The document references of h's runs that name no stored document, as "column: count" texts.
function M.dangling_documents(h)
  local out = {}
  for _, col in ipairs { 'run_doc', 'protocol_doc', 'environment_doc', 'workload_doc', 'implementation_doc',
    'operation_doc' } do
    local n = h:query('SELECT COUNT(*) FROM runs r LEFT JOIN documents d ON d.id = r.' .. col
      .. ' WHERE r.' .. col .. ' IS NOT NULL AND d.id IS NULL')[1][1]
    if n ~= 0 then out[#out + 1] = col .. ': ' .. n end
  end
  return out
end

return M
