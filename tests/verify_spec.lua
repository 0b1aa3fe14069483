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

teardown(function()
  if tmpdir and tmpdir:match('^/tmp/') then os.execute("rm -rf '" .. tmpdir .. "'") end
end)
