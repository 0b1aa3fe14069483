-- `kluabench verify` and `kluabench import-liger`: digests of bundles in JSON
-- and JSON Lines files, a tampered file caught, errors named by file and line.
local kb = require 'kluabench'
local liger = kb.liger
local files = require 'kluabench.util.files'
local json = require 'kluabench.util.json'
local verify = require 'kluabench.commands.verify'

local CSV = 'kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,'
  .. 'x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version\n'
  .. 'llama4_rope,huggingface,backward,speed,ms,H,hidden size,512,0.13760000467300415,'
  .. '0.13574400544166565,0.14009599387645721,"{""dtype"": ""torch.bfloat16"", ""seq_len"": 2048, '
  .. '""num_q_heads"": 32, ""num_kv_heads"": 8}",NVIDIA H100 80GB HBM3,2025-08-07 21:42:05,0.6.1\n'
  .. 'llama4_rope,liger,backward,speed,ms,H,hidden size,2048,0.05,0.04,0.06,"{""dtype"": '
  .. '""torch.bfloat16"", ""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",'
  .. 'NVIDIA H100 80GB HBM3,2025-08-07 21:42:09,0.6.1\n'

local function bundles()
  local out = {}
  for i, row in ipairs(assert(liger.parse(CSV))) do out[i] = assert(liger.row_to_bundle(row)) end
  return out
end

local tmpdir
local function tmp(name, text)
  if not tmpdir then
    tmpdir = os.tmpname()
    os.remove(tmpdir)
    assert(files.mkdir_p(tmpdir))
  end
  local path = tmpdir .. '/' .. name
  if text then assert(files.write_atomic(path, text)) end
  return path
end

-- Runs verify.check_file, collecting what it reports.
local function check(path)
  local seen = {}
  local counts = verify.check_file(path, function(kind, file, line, detail)
    seen[#seen + 1] = { kind = kind, file = file, line = line, detail = detail }
  end)
  return counts, seen
end

describe('verify.check_file', function()
  it('accepts a pretty JSON bundle', function()
    local path = tmp('one.json', assert(json.encode_pretty(bundles()[1])))
    local counts, seen = check(path)
    assert.are.same({ ok = 1, mismatch = 0, error = 0, bundles = 1 }, counts)
    assert.are.equal('ok', seen[1].kind)
    assert.are.equal(1, seen[1].line)
  end)

  it('accepts an array of bundles and tells the line of each', function()
    local text = assert(json.encode_pretty(bundles()))
    local path = tmp('two.json', text)
    local counts, seen = check(path)
    assert.are.equal(2, counts.ok)
    assert.are.equal(2, seen[1].line)
    assert.is_true(seen[2].line > seen[1].line)
    -- the second bundle starts on the line after the first one's closing brace
    local n = 0
    for line in text:gmatch('[^\n]*\n') do
      n = n + 1
      if n == seen[2].line then assert.matches('^  {', line) end
    end
  end)

  it('accepts JSON Lines, whatever the file is called', function()
    local b = bundles()
    local text = assert(json.encode_line(b[1])) .. '\n\n' .. assert(json.encode_line(b[2])) .. '\n'
    for _, name in ipairs { 'lines.jsonl', 'lines.txt' } do
      local counts, seen = check(tmp(name, text))
      assert.are.equal(2, counts.ok)
      assert.are.equal(1, seen[1].line)
      assert.are.equal(3, seen[2].line)
    end
  end)

  it('catches a tampered file and names the digest, the line and both values', function()
    local b = bundles()
    local lines = { assert(json.encode_line(b[1])), assert(json.encode_line(b[2])) }
    local recorded = b[2].run.spec.workloadDigest
    lines[2] = lines[2]:gsub('"seq":2048', '"seq":4096')
    local path = tmp('tampered.jsonl', table.concat(lines, '\n') .. '\n')
    local counts, seen = check(path)
    assert.are.same({ ok = 1, mismatch = 1, error = 0, bundles = 2 }, counts)
    local m = seen[2]
    assert.are.equal('mismatch', m.kind)
    assert.are.equal(path, m.file)
    assert.are.equal(2, m.line)
    assert.are.equal('workloadDigest', m.detail.field)
    assert.are.equal(recorded, m.detail.recorded)
    assert.matches('^sha256:%x+$', m.detail.computed)
    assert.are_not.equal(recorded, m.detail.computed)
  end)

  it('catches a changed digest in the run itself', function()
    local b = bundles()[1]
    b.run.spec.protocolDigest = 'sha256:' .. string.rep('0', 64)
    local counts, seen = check(tmp('wrong.json', assert(json.encode_pretty(b))))
    assert.are.equal(1, counts.mismatch)
    assert.are.equal('protocolDigest', seen[1].detail.field)
  end)

  it('reports invalid JSON with its line', function()
    local text = assert(json.encode_pretty(bundles()[1])):gsub('"status": "passed"', '"status": passed', 1)
    local counts, seen = check(tmp('broken.json', text))
    assert.are.equal(1, counts.error)
    assert.are.equal('error', seen[1].kind)
    assert.are.equal(5, seen[1].line)
    assert.matches('invalid token near', seen[1].detail)
  end)

  it('reports a bad line of a JSON Lines file', function()
    local line = assert(json.encode_line(bundles()[1]))
    local counts, seen = check(tmp('bad.jsonl', line .. '\n' .. line .. '\n{"run": \n'))
    assert.are.equal(1, counts.error)
    assert.are.equal(3, seen[1].line)
  end)

  it('reports bundles without documents, and unreadable files', function()
    local counts, seen = check(tmp('empty.json', '{"run": {"spec": {}}}'))
    assert.are.equal(1, counts.error)
    assert.matches('missing protocol document', seen[1].detail)
    counts, seen = check(tmp('does-not-exist.json'))
    assert.are.equal(1, counts.error)
    assert.matches('does%-not%-exist%.json', seen[1].detail)
  end)
end)

-- The kluabench binary itself, as a user runs it (nil when unknown).
local exe = kb.executable and kb.executable()
local function sh(cmd)
  local p = assert(io.popen(cmd .. ' 2>&1'))
  local out = p:read('a')
  local _, _, code = p:close()
  return out, code
end

describe('kluabench verify (the command)', function()
  local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

  it('exits 0 with OK lines when every digest matches', function()
    if not exe then return pending('kb.executable() is not available') end
    local path = tmp('cmd-ok.jsonl', assert(json.encode_line(bundles()[1])) .. '\n')
    local out, code = sh(q(exe) .. ' verify ' .. q(path))
    assert.are.equal(0, code)
    assert.matches('OK ' .. path:gsub('%p', '%%%0') .. ':1 liger%-llama4%-rope', out)
  end)

  it('exits 1 naming each mismatch', function()
    if not exe then return pending('kb.executable() is not available') end
    local line = assert(json.encode_line(bundles()[1]))
    local path = tmp('cmd-bad.jsonl', line .. '\n' .. line:gsub('"formFactor":"80GB HBM3"', '"formFactor":"94GB"') .. '\n')
    local out, code = sh(q(exe) .. ' verify ' .. q(path))
    assert.are.equal(1, code)
    assert.matches('MISMATCH ' .. path:gsub('%p', '%%%0') .. ':2 environmentDigest: recorded sha256:%x+, computed sha256:%x+', out)
    assert.matches('1 ok, 1 mismatched', out)
  end)

  it('recomputes the operation digests the workload and the implementation carry', function()
    if not exe then return pending('kb.executable() is not available') end
    local b = bundles()[1]
    -- the operation changed: both documents that name it disagree with it
    local changed = json.decode(assert(json.encode_line(b)))
    changed.operation.spec.family = 'rotary'
    -- the implementation's link alone changed (and the run resealed over it): only that link disagrees
    local relinked = json.decode(assert(json.encode_line(b)))
    relinked.implementation.spec.operation.specDigest = 'sha256:' .. string.rep('0', 64)
    kb.record.seal(relinked)
    local path = tmp('cmd-op.jsonl', assert(json.encode_line(changed)) .. '\n' .. assert(json.encode_line(relinked)) .. '\n')
    local out, code = sh(q(exe) .. ' verify ' .. q(path))
    assert.are.equal(1, code, out)
    local p = path:gsub('%p', '%%%0')
    assert.matches('MISMATCH ' .. p .. ':1 workload.spec.operationSpecDigest: recorded sha256:%x+, computed sha256:%x+', out)
    assert.matches('MISMATCH ' .. p .. ':1 implementation.spec.operation.specDigest: recorded', out)
    assert.matches('MISMATCH ' .. p .. ':2 implementation.spec.operation.specDigest: recorded sha256:0000', out)
    assert.not_matches(p .. ':2 workload', out)
    assert.matches('0 ok, 2 mismatched', out)
  end)

  it('exits 2 on usage errors', function()
    if not exe then return pending('kb.executable() is not available') end
    local _, code = sh(q(exe) .. ' verify')
    assert.are.equal(2, code)
    _, code = sh(q(exe) .. ' verify --frobnicate x.json')
    assert.are.equal(2, code)
  end)
end)

describe('kluabench import-liger (the command)', function()
  local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

  it('writes one verified JSON file per row into --out', function()
    if not exe then return pending('kb.executable() is not available') end
    local csv = tmp('in.csv', CSV)
    local dir = tmp('imported')
    local out, code = sh(q(exe) .. ' import-liger ' .. q(csv) .. ' --out ' .. q(dir))
    assert.are.equal(0, code, out)
    -- the run's name keeps its identity (its time): the kebab of its parts, cut with its digest
    local full = 'liger-llama4-rope-backward-huggingface-nvidia-h100-80gb-hbm3-hidden512-kv-heads8-q-heads32-'
      .. 'seq2048-bf16-2025-08-07-21-42-05'
    local tail = '-' .. kb.sha256(full):sub(1, 12)
    local name = full:sub(1, 100 - #tail) .. tail
    local file = dir .. '/' .. name .. '.json'
    local b = assert(json.decode(assert(files.read_file(file))))
    assert.are.equal(name, b.run.metadata.name)
    out, code = sh(q(exe) .. ' verify ' .. q(file))
    assert.are.equal(0, code, out)
  end)

  it('imports a repeated row once and counts the repeat, as kernelindex\'s importer does', function()
    if not exe then return pending('kb.executable() is not available') end
    local first = CSV:match('^[^\n]*\n([^\n]*\n)')
    local moe = first:gsub('^llama4_rope', 'fused_moe')
    local csv = tmp('repeated.csv', CSV .. first .. moe)
    local jsonl = tmp('repeated.jsonl')
    local out, code = sh(q(exe) .. ' import-liger ' .. q(csv) .. ' --jsonl ' .. q(jsonl))
    assert.are.equal(0, code, out)
    assert.matches('skipped 1 row: rows repeating a run already imported', out, 1, true)
    assert.matches('skipped 1 row: kernels kernelindex curates that kluabench does not reproduce', out, 1, true)
    assert.matches('2 bundles written', out, 1, true)
    local c = check(jsonl)
    assert.are.equal(2, c.ok)
  end)

  it('skips a config that does not bind the axes as kernelindex does: named, counted, exit status 0', function()
    if not exe then return pending('kb.executable() is not available') end
    local first = CSV:match('^[^\n]*\n([^\n]*\n)')
    -- hidden 100 is no multiple of 32 query heads: kernelindex's binder returns null
    local unbound = first:gsub('hidden size,512,', 'hidden size,100,')
    local csv = tmp('unbound.csv', CSV .. unbound)
    local jsonl = tmp('unbound.jsonl')
    local out, code = sh(q(exe) .. ' import-liger ' .. q(csv) .. ' --jsonl ' .. q(jsonl))
    assert.are.equal(0, code, out)
    assert.matches("unbound.csv:4: skipped: x 'H' = '100' with config", out, 1, true)
    assert.matches("skipped 1 row: configs that do not bind the kernel's axes", out, 1, true)
    assert.are.equal(2, check(jsonl).ok)
  end)

  it('writes JSON Lines with --jsonl and reports bad rows by line', function()
    if not exe then return pending('kb.executable() is not available') end
    local csv = tmp('in-bad.csv', CSV .. 'short,row\n')
    local jsonl = tmp('imported.jsonl')
    local out, code = sh(q(exe) .. ' import-liger ' .. q(csv) .. ' --jsonl ' .. q(jsonl))
    assert.are.equal(1, code)
    assert.matches(':4: 2 fields, the header has 15', out, 1, true)
    local c = check(jsonl)
    assert.are.equal(2, c.ok)
  end)
end)

describe('verify checks what a run claims against its documents and evidence (issue 37)', function()
  local helpers = require 'helpers.bundles'
  local writer = require 'kluabench.record.writer'
  local n = 0

  -- A bundle made by the harness's record builder, edited by edit(b) before it is written beside its
  -- raw samples (the edits touch only undigested run fields: every digest still holds); verify's
  -- MISMATCH lines and exit status.
  local function forged(o, edit)
    n = n + 1
    local b = helpers.make(o)
    edit(b, b.run.spec.sourceNative)
    local path = tmp('claims-' .. n .. '.jsonl')
    assert(writer.append(path, b))
    local out, code = sh(string.format("'%s' verify '%s'", exe, path))
    return out, code
  end

  local function set_measurement(b, metric, value)
    for _, m in ipairs(b.run.spec.measurements) do if m.metric == metric then m.value = value end end
  end

  it('a genuine bundle of every built-in provider and mode, and of a script provider, is OK', function()
    if not exe then return pending('kb.executable() is not available') end
    for _, mode in ipairs { 'forward', 'backward', 'full' } do
      for _, provider in ipairs { 'fused', 'reference', 'floor', 'copy' } do
        local out, code = forged({ samples = { 1, 1.1, 1.2 }, mode = mode, provider = provider, session = { 2, 3 } },
          function() end)
        assert.equal(0, code, out)
      end
    end
    local out, code = forged({ samples = { 1, 1.1 }, kernel = 'toy', provider = 'mine' }, function() end)
    assert.equal(0, code, out)
  end)

  it('externalId says fused while the implementation document is the reference kernel', function()
    if not exe then return pending('kb.executable() is not available') end
    local out, code = forged({ samples = { 1, 1.1, 1.2 }, provider = 'reference' }, function(_, sn)
      sn.externalId = sn.externalId:gsub('/reference/', '/fused/')
    end)
    assert.equal(1, code, out)
    assert.matches('MISMATCH [^\n]*:1 run.spec.sourceNative.externalId %(provider%): recorded fused, computed reference '
      .. "%(the implementation document's callable kb_rope_reference_cpu%)", out)
    assert.matches('0 ok, 1 mismatched', out, 1, true)
  end)

  it('a script provider whose name is not the callable the implementation document names', function()
    if not exe then return pending('kb.executable() is not available') end
    local out, code = forged({ samples = { 1, 1.1 }, kernel = 'toy', provider = 'slow' }, function(b, sn)
      sn.externalId = sn.externalId:gsub('/slow/', '/fast/')
      b.run.metadata.title = b.run.metadata.title:gsub('slow', 'fast')
    end)
    assert.equal(1, code, out)
    assert.matches("run.spec.sourceNative.externalId (provider): recorded fast, computed slow (the implementation "
      .. "document's callable)", out, 1, true)
  end)

  it('session 3 of 2, in the measurements or in the externalId', function()
    if not exe then return pending('kb.executable() is not available') end
    local out, code = forged({ samples = { 1, 1.1 }, session = { 2, 2 } }, function(b, sn)
      set_measurement(b, 'session', 3)
      sn.externalId = sn.externalId:gsub('session%-2%-of%-2', 'session-3-of-2')
    end)
    assert.equal(1, code, out)
    assert.matches('run.spec.measurements (session): recorded 3 of 2, computed a whole index from 1 to the count',
      out, 1, true)
    assert.matches('run.spec.sourceNative.externalId (session): recorded 3 of 2, computed a whole index', out, 1, true)
  end)

  it('the run says session 1 of 3, its externalId and its evidence session 2 of 3', function()
    if not exe then return pending('kb.executable() is not available') end
    local out, code = forged({ samples = { 1, 1.1 }, session = { 2, 3 } }, function(b)
      set_measurement(b, 'session', 1)
    end)
    assert.equal(1, code, out)
    assert.matches('run.spec.sourceNative.externalId (session): recorded 2 of 3, computed 1 of 3 '
      .. '(run.spec.measurements)', out, 1, true)
    assert.matches('run.spec.measurements (session): recorded 1 of 3, computed 2 of 3 (the evidence entry)', out, 1, true)
  end)

  it('the mode: benchmark and externalId say backward, the protocol document times the forward pass', function()
    if not exe then return pending('kb.executable() is not available') end
    local out, code = forged({ samples = { 1, 1.1 }, mode = 'forward', provider = 'reference' }, function(_, sn)
      sn.benchmark = sn.benchmark:gsub('forward', 'backward')
      sn.externalId = sn.externalId:gsub('/forward/', '/backward/')
    end)
    assert.equal(1, code, out)
    assert.matches('run.spec.sourceNative.benchmark (mode): recorded backward, computed forward (the protocol '
      .. 'document times the forward pass)', out, 1, true)
    -- the benchmark and the externalId disagree with each other
    out, code = forged({ samples = { 1, 1.1 } }, function(_, sn)
      sn.externalId = sn.externalId:gsub('/forward/', '/full/')
    end)
    assert.equal(1, code, out)
    assert.matches('run.spec.sourceNative.externalId (mode): recorded full, computed forward '
      .. '(run.spec.sourceNative.benchmark)', out, 1, true)
  end)

  it('the backend label, the title, the case key and the evidence entry\'s run', function()
    if not exe then return pending('kb.executable() is not available') end
    local out, code = forged({ samples = { 1, 1.1 } }, function(b) b.run.metadata.labels.backend = 'cuda' end)
    assert.equal(1, code, out)
    assert.matches("run.metadata.labels.backend: recorded cuda, computed cpu (the implementation document's "
      .. 'callable kb_rope_fused_cpu)', out, 1, true)
    out, code = forged({ samples = { 1, 1.1 } }, function(b)
      b.run.metadata.title = b.run.metadata.title:gsub(' · fused · ', ' · reference · ')
    end)
    assert.equal(1, code, out)
    assert.matches('run.metadata.title: recorded [^\n]* · reference · forward, computed provider fused, mode forward', out)
    out, code = forged({ samples = { 1, 1.1 }, hidden = 512 }, function(_, sn)
      sn.externalId = sn.externalId:gsub('hidden512', 'hidden8192')
    end)
    assert.equal(1, code, out)
    assert.matches('run.spec.sourceNative.externalId (case): recorded hidden8192-kv_heads8-q_heads32-seq2048-bf16, '
      .. 'computed hidden = 512 (the workload document)', out, 1, true)
    out, code = forged({ samples = { 1, 1.1 } }, function(_, sn)
      sn.externalId = sn.externalId:gsub('%-000$', '-999')
    end)
    assert.equal(1, code, out)
    assert.matches("run.spec.sourceNative.externalId: recorded [^\n]*%-999, computed [^\n]*%-000 %(the evidence entry's "
      .. 'run%)', out)
  end)

  it('history add and report refuse such a bundle, as verify does', function()
    if not exe then return pending('kb.executable() is not available') end
    local b = helpers.make { samples = { 1, 1.1, 1.2 }, provider = 'reference' }
    b.run.spec.sourceNative.externalId = b.run.spec.sourceNative.externalId:gsub('/reference/', '/fused/')
    local path = tmp('claims-refused.jsonl')
    assert(writer.append(path, b))
    local db = tmp('claims.db')
    local out, code = sh(string.format("'%s' history add '%s' --db '%s' --commit %s", exe, path, db,
      string.rep('a', 40)))
    assert.equal(1, code, out)
    assert.matches('refused as kluabench verify refuses it: run.spec.sourceNative.externalId (provider): recorded '
      .. 'fused, computed reference', out, 1, true)
    out, code = sh(string.format("'%s' report '%s' -o '%s'", exe, path, tmp('claims.html')))
    assert.equal(1, code, out)
    assert.matches(path .. ':1: refused as kluabench verify refuses it: run.spec.sourceNative.externalId (provider)',
      out, 1, true)
    assert.is_nil(kb.stat(tmp('claims.html')))
    -- merge: tests/adversarial_dist_spec.lua (a run that claims another provider is corrupt)
  end)
end)

describe('the index of a samples file is bounded, and running out of memory names the file (issue 37)', function()
  local helpers = require 'helpers.bundles'
  local writer = require 'kluabench.record.writer'
  local evidence = require 'kluabench.record.evidence'
  local SANITIZED = (kb.build_info().cflags or ''):find('sanitize', 1, true) ~= nil
  local n = 0

  -- A records file of one bundle whose samples file is `before` .. its entry's line .. `after`.
  local function records(before, after)
    n = n + 1
    local path = tmp('bounded-' .. n .. '.jsonl')
    assert(writer.append(path, helpers.make { samples = { 1, 1.1, 1.2 } }))
    local sp = evidence.samples_path(path)
    local f = assert(io.open(sp, 'rb'))
    local entry = f:read('a')
    f:close()
    f = assert(io.open(sp, 'wb'))
    f:write(before, entry, after or '')
    f:close()
    evidence.forget()
    return path, sp
  end

  local function ulimited(kib, path)
    return sh(string.format("ulimit -v %d; '%s' verify '%s'", kib, exe, path))
  end

  local it_limited = SANITIZED and pending or it
  it_limited('40 MB of newlines before the entry: verified under ulimit -v 400 MB, in seconds', function()
    if not exe then return pending('kb.executable() is not available') end
    local path = records(string.rep('\n', 40 * 1024 * 1024))
    local t0 = os.time()
    local out, code = ulimited(400000, path)
    assert.equal(0, code, out) -- the entry is found by its digest (its uri names line 1)
    assert.matches('1 bundle: 1 ok', out, 1, true)
    assert.is_true(os.time() - t0 < 30)
    -- the same blank lines before the bundle in the records file
    local text = assert(io.open(path)):read('a')
    local big = tmp('bounded-records.jsonl')
    local f = assert(io.open(big, 'wb'))
    f:write(string.rep('\n', 40 * 1024 * 1024), text)
    f:close()
    assert(os.execute(string.format("cp '%s' '%s'", evidence.samples_path(path), evidence.samples_path(big))))
    out, code = ulimited(400000, big)
    assert.equal(0, code, out)
    assert.matches(big .. ':' .. (40 * 1024 * 1024 + 1) .. ' ', out, 1, true)
    -- too little memory even to read it: an error naming the samples file, not a bare "not enough memory"
    out, code = ulimited(100000, path)
    assert.equal(1, code, out)
    assert.matches(evidence.samples_path(path) .. ': not enough memory', out, 1, true)
    assert.not_matches('kluabench: not enough memory', out, 1, true)
    os.remove(evidence.samples_path(big)); os.remove(big)
    os.remove(evidence.samples_path(path)); os.remove(path)
  end)

  it('the entry is found past a million short lines, and the line it names is the right one', function()
    local vlib = require 'kluabench.record.verify'
    local reader = require 'kluabench.record.reader'
    local odd = '{"format":"other"}'
    local path, sp = records(string.rep('x\n', 1000003), odd .. '\n\n')
    -- the uri names line 1, where the entry no longer is: found by its digest, past the million lines
    local b = assert(reader.read(path))[1]
    assert.same({}, vlib.problems(b, path))
    -- a digest that a line that is no entry has: the message names that line, by digest or by uri
    local json_lib = require 'kluabench.util.json'
    for _, uri_line in ipairs { 1, 1000005 } do
      local c = json_lib.decode((assert(io.open(path)):read('l')))
      local raw = c.run.spec.evidence.rawSamples
      raw.digest = 'sha256:' .. kb.sha256(odd)
      raw.uri = raw.uri:gsub('#L%d+', '#L' .. uri_line)
      evidence.forget()
      local problems = vlib.problems(c, path)
      assert.equal(1, #problems)
      assert.equal('raw samples: ' .. sp .. ':1000005 is not a kluabench.samples/v1 entry', problems[1].error)
    end
    os.remove(sp); os.remove(path)
  end)

  it('more lines that could be entries than a samples file holds is an error naming the file', function()
    local saved = evidence.MAX_ENTRIES
    evidence.MAX_ENTRIES = 10
    local path, sp = records(string.rep('{"x":1}\n', 20))
    local out = {}
    local counts = verify.check_file(path, function(kind, _, _, detail) out[#out + 1] = kind .. ' ' .. tostring(detail) end)
    evidence.MAX_ENTRIES = saved
    assert.equal(1, counts.error)
    assert.matches(sp .. ': more than 10 lines that begin with "{"', table.concat(out, '\n'), 1, true)
    os.remove(sp); os.remove(path)
  end)

  it('a memory error while indexing a samples file or reading a records file names the file', function()
    local core = require 'kluabench.core'
    local path, sp = records('\n')
    local saved = core.sha256
    -- out of memory hashing the lines of the samples file (the documents' digests are hashed as ever)
    core.sha256 = function(text)
      if text:find('kluabench.samples/v1', 1, true) then error('not enough memory', 0) end
      return saved(text)
    end
    local out = {}
    local ok, counts = pcall(verify.check_file, path, function(kind, _, _, detail) out[#out + 1] = kind .. ' '
      .. tostring(detail) end)
    core.sha256 = saved
    assert.is_true(ok, tostring(counts))
    assert.matches(sp .. ': not enough memory to index it', table.concat(out, '\n'), 1, true)
    local output = require 'kluabench.util.json'
    local decode = output.decode
    output.decode = function() error('not enough memory', 0) end
    local items, line, why = require('kluabench.record.reader').items('{"run":{}}\n{"run":{}}\n', 'x.jsonl')
    output.decode = decode
    assert.is_nil(items)
    assert.equal(1, line)
    assert.equal('not enough memory to read its 22 bytes', why)
    os.remove(sp); os.remove(path)
  end)
end)

teardown(function()
  if tmpdir and tmpdir:match('^/tmp/') then os.execute("rm -rf '" .. tmpdir .. "'") end
end)
