--- What `kluabench verify`, merge and the history check of a bundle read from a file: every digest
-- recomputed, every document of the kind and format its place says, and the statistics the run
-- records those of its raw samples. Validation against the public JSON Schemas is CI's
-- (tests/helpers/validate_kernelindex.py runs python3-jsonschema on one document of every kind).
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local json = require 'kluabench.util.json'
local stats = require 'kluabench.stats'
local record = require 'kluabench.record'
local evidence = require 'kluabench.record.evidence'

local M = {}

local function recompute(problems, field, doc, recorded, what)
  if type(doc) ~= 'table' or type(doc.spec) ~= 'table' then
    problems[#problems + 1] = { field = field, error = 'missing ' .. what .. ' document or its spec' }
  elseif type(recorded) ~= 'string' then
    problems[#problems + 1] = { field = field, error = field .. ' is missing' }
  else
    local ok, computed = pcall(record.digest, doc)
    if not ok then
      problems[#problems + 1] = { field = field, error = 'cannot hash ' .. what .. ': ' .. tostring(computed) }
    elseif computed ~= recorded then
      problems[#problems + 1] = { field = field, recorded = recorded, computed = computed }
    end
  end
end

---------------------------------------------------------------------------
-- What a run claims beside its digests
---------------------------------------------------------------------------
-- The run document is not digested: its sourceNative (benchmark: kernel/mode, externalId:
-- kernel/mode/provider/device/case/time[/session-I-of-N]), its labels and metadata, and its session
-- measurements are claims that the views read (kluabench.result). Each is checked against what
-- the digested documents and the evidence say, where they say it; a contradiction is a mismatch
-- {field, recorded = the claim, computed = what the documents say}.

local function text(v) return (type(v) == 'string' or math.type(v) == 'integer') and tostring(v) or nil end

local function split(s, sep)
  local out = {}
  for part in ((text(s) or '') .. sep):gmatch('([^' .. sep .. ']*)' .. sep) do out[#out + 1] = part end
  return out
end

local function mismatch(problems, field, recorded, computed)
  problems[#problems + 1] = { field = field, recorded = recorded, computed = computed }
end

-- The timed pass a protocol document names in its digested spec ("the forward pass", "the backward
-- pass", or both: the full pass), as the built-in protocols and Liger's write it; nil when it names
-- none (a protocol of one's own), and then nothing is checked against it.
local function protocol_mode(protocol)
  local spec = type(protocol) == 'table' and protocol.spec
  if type(spec) ~= 'table' then return nil end
  local ok, canon = pcall(core.jcs.encode, spec)
  if not ok then return nil end
  local fwd, bwd = canon:find('forward pass', 1, true) ~= nil, canon:find('backward pass', 1, true) ~= nil
  if fwd and bwd then return 'full' elseif fwd then return 'forward' elseif bwd then return 'backward' end
  return nil
end

-- symbol -> {provider, backend, mode} of the built-in implementations of kernel (the registry's).
local function builtin_symbols(kernel)
  local k = record.KERNELS[kernel]
  if type(k) ~= 'table' or type(k.implementations) ~= 'table' then return nil end
  local out = {}
  for provider, backends in pairs(k.implementations) do
    for backend, entry in pairs(backends) do
      if type(entry) == 'table' then
        if entry.symbol then out[entry.symbol] = { provider = provider, backend = backend } end
        for mode, symbol in pairs(entry.modes or {}) do
          out[symbol] = { provider = provider, backend = backend, mode = mode }
        end
      end
    end
  end
  return out
end

-- The session a run's measurements claim ({index, count}), or nil when it has none.
local function run_session(rs)
  local f = record.measurement_fields(rs.measurements)
  if f.session == nil and f.sessions == nil then return nil end
  return { index = f.session, count = f.sessions }
end

local function session_text(s) return string.format('%s of %s', tostring(s.index), tostring(s.count)) end

-- A session {index, count} that cannot be: an index or count that is not a whole number >= 1, or an
-- index past the count.
local function impossible(s)
  local i, n = math.tointeger(s.index), math.tointeger(s.count)
  return not (i and n and i >= 1 and n >= 1 and i <= n)
end

-- The claims of a run against the protocol, implementation and workload documents; a document whose
-- digest does not hold (a problem already) is no witness, and is not read here.
local function check_claims(bundle, problems)
  local rs = bundle.run.spec
  local broken = {}
  for _, p in ipairs(problems) do
    for _, d in ipairs(record.DIGESTS) do if p.field == d.field then broken[d.doc] = true end end
  end
  local function doc(name) return not broken[name] and bundle[name] or nil end
  local sn = type(rs.sourceNative) == 'table' and rs.sourceNative or {}
  local bench, ext = split(sn.benchmark, '/'), split(sn.externalId, '/')
  local kernel, mode = bench[1] ~= '' and bench[1] or nil, bench[2]
  local provider = ext[3] ~= '' and ext[3] or nil
  -- benchmark and externalId name one kernel and mode (result reads the one, and the other's provider)
  if kernel and ext[1] ~= '' and ext[1] ~= kernel then
    mismatch(problems, 'run.spec.sourceNative.externalId (kernel)', ext[1], kernel .. ' (run.spec.sourceNative.benchmark)')
  end
  if mode and ext[2] and ext[2] ~= '' and ext[2] ~= mode then
    mismatch(problems, 'run.spec.sourceNative.externalId (mode)', ext[2], mode .. ' (run.spec.sourceNative.benchmark)')
  end
  -- the timed pass: the protocol document names it
  local pmode = protocol_mode(doc('protocol'))
  if pmode and record.MODE_TEXT[mode] and mode ~= pmode then
    mismatch(problems, 'run.spec.sourceNative.benchmark (mode)', mode, pmode .. ' (the protocol document times '
      .. record.MODE_TEXT[pmode] .. ')')
  end
  -- the provider: the implementation document names its callable
  local callable = json.get(doc('implementation'), 'spec', 'callable')
  if provider and type(callable) == 'table' and type(callable.symbol) == 'string' then
    local labels = json.get(bundle, 'run', 'metadata', 'labels')
    if callable.interface == 'kluabench_suite' and callable.symbol ~= provider then
      mismatch(problems, 'run.spec.sourceNative.externalId (provider)', provider, callable.symbol
        .. ' (the implementation document\'s callable)')
    elseif callable.interface == 'kluabench' then
      local known = (builtin_symbols(kernel) or {})[callable.symbol]
      if known and known.provider ~= provider then
        mismatch(problems, 'run.spec.sourceNative.externalId (provider)', provider, known.provider
          .. ' (the implementation document\'s callable ' .. callable.symbol .. ')')
      end
      if known and known.mode and mode and known.mode ~= mode then
        mismatch(problems, 'run.spec.sourceNative.benchmark (mode)', mode, known.mode
          .. ' (the implementation document\'s callable ' .. callable.symbol .. ')')
      end
      local backend = type(labels) == 'table' and labels.backend
      if known and type(backend) == 'string' and backend ~= known.backend then
        mismatch(problems, 'run.metadata.labels.backend', backend, known.backend
          .. ' (the implementation document\'s callable ' .. callable.symbol .. ')')
      end
    end
  end
  -- the title kluabench writes: "Kernel · provider · mode[ · memory]"
  local title = json.get(bundle, 'run', 'metadata', 'title')
  if sn.source == 'kluabench' and type(title) == 'string' and provider and mode then
    local parts = {}
    for part in (title .. ' · '):gmatch('(.-) · ') do parts[#parts + 1] = part end
    if (#parts == 3 or (#parts == 4 and parts[4] == 'memory')) and (parts[2] ~= provider or parts[3] ~= mode) then
      mismatch(problems, 'run.metadata.title', title, 'provider ' .. provider .. ', mode ' .. mode
        .. ' (run.spec.sourceNative)')
    end
  end
  -- the case key spells the workload's axes ("hidden512-seq2048-bf16")
  local axes = json.get(doc('workload'), 'spec', 'axes')
  if ext[5] and ext[5] ~= '' and type(axes) == 'table' then
    for word in (ext[5] .. '-'):gmatch('([^-]*)-') do
      local name, value = word:match('^([%a_]+)(%d+)$')
      if name and math.type(axes[name]) == 'integer' and tostring(axes[name]) ~= value then
        mismatch(problems, 'run.spec.sourceNative.externalId (case)', ext[5], string.format('%s = %d (the workload '
          .. 'document)', name, axes[name]))
        break
      end
    end
  end
  -- the session: a possible one, and the same in the measurements and the externalId
  local session = run_session(rs)
  if session and impossible(session) then
    mismatch(problems, 'run.spec.measurements (session)', session_text(session),
      'a whole index from 1 to the count of sessions')
  end
  local ei, en = tostring(sn.externalId or ''):match('/session%-(%d+)%-of%-(%d+)')
  if ei then
    local claimed = { index = math.tointeger(tonumber(ei)), count = math.tointeger(tonumber(en)) }
    if impossible(claimed) then
      mismatch(problems, 'run.spec.sourceNative.externalId (session)', session_text(claimed),
        'a whole index from 1 to the count of sessions')
    elseif session and (session.index ~= claimed.index or session.count ~= claimed.count) then
      mismatch(problems, 'run.spec.sourceNative.externalId (session)', session_text(claimed),
        session_text(session) .. ' (run.spec.measurements)')
    end
  end
end

-- The claims of a run against its evidence entry (digested: rawSamples names its digest).
local function check_evidence_claims(bundle, entry, problems)
  if type(entry) ~= 'table' then return end
  local rs = bundle.run.spec
  local ext = json.get(rs, 'sourceNative', 'externalId')
  if type(entry.run) == 'string' and type(ext) == 'string' and entry.run ~= ext then
    mismatch(problems, 'run.spec.sourceNative.externalId', ext, entry.run .. ' (the evidence entry\'s run)')
  end
  local es = entry.session
  if type(es) ~= 'table' then return end
  if impossible(es) then
    mismatch(problems, 'evidence.session', session_text(es), 'a whole index from 1 to the count of sessions')
    return
  end
  local session = run_session(rs)
  if session and (session.index ~= es.index or session.count ~= es.count) then
    mismatch(problems, 'run.spec.measurements (session)', session_text(session), session_text(es)
      .. ' (the evidence entry)')
  end
end

--- Recomputes every digest of a decoded bundle (the run's four, the workload's and the
-- implementation's digest of the operation), checks that every document is a kernelindex
-- document of its kind, and that what the undigested run claims (the kernel, mode, provider,
-- case and session of its sourceNative, its backend label, title and session measurements) does
-- not contradict the documents the digests name (the protocol's timed pass, the implementation's
-- callable, the workload's axes); an empty list when all is well. A problem is {field, recorded,
-- computed} (a mismatch: recorded is what the run claims) or {field, error}.
--
-- @signature verify.check(bundle) -> problems
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   print(#verify.check(bundle)) --> 0
function M.check(bundle)
  if type(bundle) ~= 'table' then return { { field = 'bundle', error = 'not a JSON object' } } end
  local run = bundle.run
  if type(run) ~= 'table' or type(run.spec) ~= 'table' then
    return { { field = 'run', error = 'missing run document or run.spec' } }
  end
  local problems = {}
  for _, d in ipairs(record.DIGESTS) do recompute(problems, d.field, bundle[d.doc], run.spec[d.field], d.doc) end
  for _, l in ipairs(record.OPERATION_LINKS) do
    if type(bundle[l.doc]) == 'table' then
      recompute(problems, l.field, bundle.operation, json.get(bundle[l.doc].spec, table.unpack(l.path)), 'operation')
    end
  end
  for _, m in ipairs(record.MEMBERS) do
    local doc = bundle[m.doc]
    if doc ~= nil or not m.optional then
      if type(doc) ~= 'table' then
        problems[#problems + 1] = { field = m.doc, error = 'a document (JSON object) expected' }
      elseif doc.kind ~= m.kind then
        problems[#problems + 1] = { field = m.doc, error = string.format('kind %s where %s belongs', tostring(doc.kind),
          m.kind) }
      elseif doc.apiVersion ~= record.API_VERSION then
        problems[#problems + 1] = { field = m.doc, error = string.format('apiVersion %s where %s belongs',
          args.printable(tostring(doc.apiVersion), 80), record.API_VERSION) }
      elseif type(doc.metadata) ~= 'table' or type(doc.metadata.name) ~= 'string' then
        problems[#problems + 1] = { field = m.doc, error = 'metadata.name must be a string' }
      end
    end
  end
  check_claims(bundle, problems)
  local known = false
  for _, st in ipairs(record.STATUSES) do known = known or run.spec.status == st end
  if not known then
    problems[#problems + 1] = { field = 'run', error = string.format('$.spec.status: must be one of %s, got %s',
      table.concat(record.STATUSES, ', '), type(run.spec.status) == 'string' and json.quote(args.printable(run.spec.status, 80)) or tostring(run.spec.status)) }
  end
  return problems
end

--- Whether the statistics a run records are those of its raw samples (its evidence entry): the
-- median, p20 and p80 within 1 ns of rounding, and the sample count. A list of {field, error}.
--
-- @signature verify.consistency(bundle, entry) -> problems
-- @example
--   local b = {run = {spec = {timing = {latencyNs = {median = 2000}}}}}
--   for _, p in ipairs(verify.consistency(b, {unit = "ns", samples = {1000, 1000, 1000}})) do print(p.field, p.error) end
function M.consistency(bundle, entry)
  args.check('verify.consistency', 1, bundle, 'table', 'bundle')
  args.check('verify.consistency', 2, entry, 'table|nil', 'evidence entry')
  local problems = {}
  local samples, why = evidence.samples_ms(entry)
  local rs = type(bundle.run) == 'table' and bundle.run.spec or {}
  if not samples then
    if type(entry) == 'table' and type(entry.samples) == 'table' and #entry.samples > 0 then
      problems[1] = { field = 'evidence.samples', error = why }
    end
    return problems
  end
  local function check(field, recorded, q)
    if type(recorded) ~= 'number' then return end
    local computed = record.round(stats.quantiles(samples, { q })[1] * 1e6)
    if math.abs(computed - recorded) > 1 then
      problems[#problems + 1] = { field = field, error = string.format('the run records %s ns, its raw samples give %s ns',
        tostring(recorded), tostring(computed)) }
    end
  end
  local timing = type(rs.timing) == 'table' and rs.timing or {}
  check('timing.latencyNs.median', type(timing.latencyNs) == 'table' and timing.latencyNs.median or nil, 0.5)
  local f = record.measurement_fields(rs.measurements)
  check('measurements p20', f.p20_ns, 0.2)
  check('measurements p80', f.p80_ns, 0.8)
  if timing.samples ~= nil and timing.samples ~= #samples then
    problems[#problems + 1] = { field = 'timing.samples', error = string.format('the run records %s samples, its '
      .. 'evidence holds %d', tostring(timing.samples), #samples) }
  end
  return problems
end

-- A latencyNs value in ns: a number, or a "<number> ns|us|ms|s" string as the schema allows.
local DURATION_NS = { ns = 1, us = 1e3, ['µs'] = 1e3, ms = 1e6, s = 1e9 }
local function duration_ns(v)
  if type(v) == 'number' then return (v == v and v >= 0 and v < math.huge) and v or nil end
  if type(v) ~= 'string' then return nil end
  local num, unit = v:match('^(%d+%.?%d*)%s?(%S+)$')
  return unit and DURATION_NS[unit] and tonumber(num) * DURATION_NS[unit] or nil
end

-- The latency statistics a run records besides the median, p20, p80 and count: the minimum, maximum
-- and mean of the raw samples, which the writer rounds to whole ns from the unrounded samples (so
-- within 1 ns of the rounded ones').
local function extremes(bundle, samples, problems)
  local l = json.get(bundle, 'run', 'spec', 'timing', 'latencyNs')
  if type(l) ~= 'table' then return end
  local lo, hi, sum = math.huge, -math.huge, 0
  for _, ms in ipairs(samples) do
    local ns = ms * 1e6
    lo, hi, sum = math.min(lo, ns), math.max(hi, ns), sum + ns
  end
  for _, c in ipairs { { 'minimum', lo }, { 'maximum', hi }, { 'mean', sum / #samples } } do
    local recorded = duration_ns(l[c[1]])
    if l[c[1]] ~= nil and (not recorded or math.abs(recorded - c[2]) > 1 + 1e-9 * math.abs(c[2])) then
      problems[#problems + 1] = { field = 'timing.latencyNs.' .. c[1], error = string.format(
        'the run records %s ns, its raw samples give %s ns', tostring(l[c[1]]),
        string.format('%.17g', record.round(c[2]))) }
    end
  end
end

--- Everything `kluabench verify` finds wrong with a bundle: verify.check's problems, and those of
-- its raw samples: the evidence entry its run names missing or not matching its digest (read from
-- the samples file beside records_path, or the entry held beside a bundle made or read in this
-- process), the run's externalId and session not those of the entry, and the statistics the run
-- records (median, p20, p80, minimum, maximum, mean, sample count) not those of its samples. An empty list when verify would say OK. What merge, the history
-- and every reader that must refuse what verify refuses call.
--
-- @signature verify.problems(bundle [, records_path]) -> problems
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   print(#verify.problems(bundle)) --> 0
function M.problems(bundle, records_path)
  args.check('verify.problems', 2, records_path, 'string|nil', 'records file path')
  local problems = M.check(bundle)
  if type(bundle) ~= 'table' or type(bundle.run) ~= 'table' or type(bundle.run.spec) ~= 'table' then return problems end
  local entry = evidence.of(bundle)
  if not entry and json.get(bundle, 'run', 'spec', 'evidence', 'rawSamples') ~= nil then
    local why
    entry, why = evidence.resolve(bundle, records_path)
    if not entry then
      problems[#problems + 1] = { field = 'evidence.rawSamples', error = why }
      return problems
    end
  end
  if not entry then return problems end
  check_evidence_claims(bundle, entry, problems)
  for _, p in ipairs(M.consistency(bundle, entry)) do problems[#problems + 1] = p end
  local samples = evidence.samples_ms(entry)
  if samples then extremes(bundle, samples, problems) end
  return problems
end

--- The first of a list of problems (verify.check's, verify.problems') in words, with how many more
-- there are: "FIELD: why" or "FIELD: recorded X, computed Y"; nil for none.
--
-- @signature verify.describe(problems) -> text | nil
-- @example
--   print(verify.describe({{field = "workloadDigest", recorded = "sha256:ab", computed = "sha256:cd"}}))
function M.describe(problems)
  args.check('verify.describe', 1, problems, 'table', 'list of problems')
  local p = problems[1]
  if not p then return nil end
  local first = p.error and (tostring(p.field) .. ': ' .. tostring(p.error))
    or string.format('%s: recorded %s, computed %s', tostring(p.field), tostring(p.recorded), tostring(p.computed))
  return first .. (#problems > 1 and string.format(' (and %d more)', #problems - 1) or '')
end

return M
