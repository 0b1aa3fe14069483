-- The results table (issue 11): protocol, backend/timer, samples and the
-- noise of each point (the 95 % interval of the median), and flags for
-- points with few samples, that did not converge, or that beat the copy floor.
local results = require 'kluabench.table'
local record = require 'kluabench.record'

-- A bundle with what the table reads; o: samples (ns), stop, throughput
-- (fields of kluabench.record.measurements), family (the protocol's
-- comparability family), backend, timer, stopping (the protocol's rule).
local function bundle(o)
  local values = o.samples or { 1000, 1100, 900 }
  local b = {
    run = { spec = {
      status = o.status or 'passed',
      timing = { latencyNs = { median = o.median or 1000 } },
      measurements = require('kluabench.record').measurement_list(o.throughput or {}),
      sourceNative = { source = 'kluabench', benchmark = 'k/' .. (o.mode or 'forward'),
        externalId = ('k/%s/%s/gpu/%s/t'):format(o.mode or 'forward', o.provider or 'p', o.id or 'n1-fp32') },
    }, metadata = { labels = { backend = o.label or 'label-backend' } } },
    protocol = { spec = { measurement = { timer = o.timer or 'cuda_events' },
      comparability = { family = o.family or 'kluabench_cold' } } },
    environment = { spec = { hardware = { product = 'NVIDIA H100', formFactor = '80GB HBM3' } } },
  }
  require('kluabench.record.evidence').attach(b, { format = 'kluabench.samples/v1', unit = 'ns', samples = values,
    execution = { stop = o.stop, stopping = o.stopping }, device = { backend = o.backend } })
  if o.backend then b.run.metadata.labels.backend = o.backend end
  return b
end

local function nine() -- 100 .. 2000 ns (20 samples): median 1050, 95 % interval ranks 5 and 16
  local t = {}
  for i = 1, 20 do t[i] = 100 * i end
  return t
end

local function quiet() -- 1001 .. 1020 ns: a ci95 of about ±0.5 %, never noisy
  local t = {}
  for i = 1, 20 do t[i] = 1000 + i end
  return t
end

-- The non-empty lines of a table: header, rule, rows (and the line of what
-- every row shares, when there is one, as `shared`).
local function header_and_rows(text)
  local lines = {}
  text:gsub('[^\n]+', function(line) lines[#lines + 1] = line end)
  if lines[2] and not lines[2]:match('^%-') then lines.shared = table.remove(lines, 1) end
  return lines
end

describe('results table', function()
  it('names the protocol, backend/timer, samples and the noise of the median per point', function()
    local rows = results.results_rows {
      bundle { id = "n1-fp32", samples = nine(), median = 500, backend = 'cuda' },
      bundle { id = "n2-fp32", samples = nine(), family = 'triton_do_bench', timer = 'host_monotonic' },
    }
    assert.equal('cold', rows[1].protocol)
    assert.equal('do_bench', rows[2].protocol)
    assert.equal('cuda/cuda_events', rows[1].timer)
    assert.equal('label-backend/host_monotonic', rows[2].timer) -- the run's label
    assert.equal(20, rows[1].n)
    -- n = 20: ranks floor(10 - 1.96 * sqrt(20) / 2) = 5 and ceil(11 + 1.96 * sqrt(20) / 2) = 16,
    -- so (1600 - 500) / 2 over the median 1050
    assert.near(100 * 550 / 1050, rows[1].ci_pct, 1e-9)
    assert.is_nil(rows[1].ci_flag)
    assert.equal('NVIDIA H100 80GB HBM3', rows[1].device)
    -- what every row shares is said once, above the table
    local lines = header_and_rows(results.results_table { bundle { id = "n3-fp32", samples = nine(), backend = 'cuda' } })
    assert.equal('kernel k · device NVIDIA H100 80GB HBM3 · protocol cold · backend/timer cuda/cuda_events',
      lines.shared)
    assert.matches('samples  ci95 ±%%  flags$', lines[1])
    assert.matches('20    52.38  noisy$', lines[3]) -- wider than ±10 %
    local md = results.results_markdown { bundle { id = "n4-fp32", samples = nine(), backend = 'cuda' } }
    assert.matches('^kernel k · device NVIDIA H100 80GB HBM3 · protocol cold · backend/timer cuda/cuda_events\n\n| mode',
      md)
    -- where rows differ, the column stays
    lines = header_and_rows(results.results_table { bundle { id = "n5-fp32", samples = nine(), backend = 'cuda' },
      bundle { id = "n5-fp32", samples = nine(), family = 'triton_do_bench', backend = 'cuda' } })
    assert.equal('kernel k · device NVIDIA H100 80GB HBM3 · backend/timer cuda/cuda_events', lines.shared)
    assert.matches('samples  ci95 ±%%  protocol  flags$', lines[1])
    assert.matches('20    52.38  cold      noisy$', lines[3])
    assert.matches('20    52.38  do_bench  noisy$', lines[4])
  end)

  it('keeps the existing columns first, in their order', function()
    local head = header_and_rows(results.results_table { bundle { id = "n7-fp32", samples = nine() } })[1]
    local last = 0
    for _, title in ipairs { 'mode', 'provider', 'workload', 'median us', 'p20 us', 'p80 us',
      'GB/s', 'samples' } do
      local at = head:find(title, last + 1, true)
      assert.is_number(at, title)
      last = at
    end
  end)

  it('flags fewer than 5 samples, no convergence and a result faster than the floor', function()
    local rows = results.results_rows {
      bundle { id = "n8-fp32", samples = { 1000, 1000, 1000, 1000 } },
      bundle { id = "n9-fp32", samples = quiet(), stop = { rule = 'rse_median', converged = false, reason = 'timeout' } },
      bundle { samples = quiet(), stop = { rule = 'count', converged = false },
        stopping = { rule = 'any', rules = { { rule = 'rse_median' }, { rule = 'count', n = 9 } } } },
      bundle { id = "n10-fp32", samples = quiet(), throughput = { gbps = 9, implausible = 1 } },
      bundle { id = "n11-fp32", samples = quiet(), throughput = { gbps = 9, pct_floor = 130 } },
      bundle { id = "n12-fp32", samples = { 1 }, stop = { rule = 'interrupted', converged = false },
        throughput = { implausible = 1 } },
    }
    assert.matches('^n<5 ci=range', rows[1].flags) -- and ci~1 when one of the 3 is far off
    assert.equal('!conv', rows[2].flags)
    assert.equal('!conv', rows[3].flags) -- any(rse_median, count) ended by the count
    assert.equal('<floor', rows[4].flags)
    assert.equal('<floor', rows[5].flags)
    assert.equal('n<5 !conv <floor', rows[6].flags) -- one sample: no interval at all
    local lines = header_and_rows(results.results_table { bundle { id = "n13-fp32", samples = { 5, 6 } }, bundle { id = "n14-fp32", samples = nine() } })
    assert.matches('flags$', lines[1])
    assert.matches('9%.09%*  n<5 ci=range$', lines[3])
    assert.not_matches('n<5', lines[4], 1, true)
  end)

  it('flags a ci95 that is the samples\' [min, max] or set by one outlier (issue 26)', function()
    -- the issue's copy: p20..p80 208..218 us, 10 samples, one of them 5 ms: the interval is the
    -- samples' [min, max] and that one sample sets it (it read 969 %)
    local one = { 208000, 209000, 210000, 211000, 212000, 213000, 214000, 216000, 218000, 5000000 }
    -- 20 samples and the same outlier: the order statistics keep it out
    local many = nine()
    many[20] = 5000000
    local rows = results.results_rows { bundle { id = "n15-fp32", samples = one }, bundle { id = "n16-fp32", samples = { 208000, 210000, 212000, 214000 } },
      bundle { id = "n17-fp32", samples = many } }
    assert.equal('ci=range ci~1', rows[1].ci_flag)
    assert.is_true(rows[1].ci_pct > 900)
    assert.equal('ci=range', rows[2].ci_flag)
    assert.is_nil(rows[3].ci_flag)
    local lines = header_and_rows(results.results_table { bundle { id = "n18-fp32", samples = one } })
    assert.matches('%d%*  ci=range ci~1 noisy$', lines[3])
    assert.is_string(results.FLAGS['ci~1'])
    assert.is_string(results.FLAGS['ci=range'])
  end)

  it('flags a ci95 wider than ±NOISY_CI_PCT % noisy: a point, a session row, a point over its sessions', function()
    assert.equal(10, results.NOISY_CI_PCT)
    assert.equal(results.NOISY_CI_PCT, require('kluabench.charts.html').NOISY_CI_PCT) -- one threshold, the report's too
    assert.matches('10 %', results.FLAGS.noisy, 1, true)
    local function spread(id, width, session, scale) -- 20 samples over 1000 +- width %: ci95 about width / 2 %
      local xs = {}
      for i = 1, 20 do xs[i] = (scale or 1) * 1000 * (1 + width / 100 * (i - 10.5) / 9.5) end
      local b = bundle { id = id, samples = xs, median = (scale or 1) * 1000 }
      if session then b.run.spec.measurements = require('kluabench.record').measurement_list(session) end
      return b
    end
    local rows = results.results_rows { spread('a', 16), spread('b', 22) }
    assert.is_true(rows[1].ci_pct < 10 and rows[2].ci_pct > 10, rows[1].ci_pct .. ' ' .. rows[2].ci_pct)
    assert.is_nil(rows[1].flags)
    assert.equal('noisy', rows[2].flags)
    assert.matches('noisy$', header_and_rows(results.results_table { spread('b', 22) })[3])
    -- two quiet sessions whose medians differ by 40 %: the point's ci95 over the sessions is noisy, each session is not
    local both = { spread('c', 1, { session = 1, sessions = 2 }), spread('c', 1, { session = 2, sessions = 2 }, 1.4) }
    rows = results.results_rows(both)
    assert.equal(2, rows[1].sessions)
    assert.equal('noisy', rows[1].flags)
    rows = results.results_rows(both, { sessions = true })
    assert.is_nil(rows[1].flags)
    assert.is_nil(rows[2].flags)
  end)

  it('shows the sessions of a point (--runs N) as one row with their count, each session on request '
    .. '(issue 26)', function()
    local function session(i, scale)
      local xs = {}
      for k, v in ipairs(nine()) do xs[k] = v * scale end
      local b = bundle { id = "n19-fp32", samples = xs, median = 1050 * scale }
      b.run.spec.measurements = require('kluabench.record').measurement_list { session = i, sessions = 3 }
      return b
    end
    local bs = { session(1, 1.0), session(2, 1.02), session(3, 0.98) }
    local rows = results.results_rows(bs)
    assert.equal(1, #rows)
    assert.equal(3, rows[1].sessions)
    assert.equal(60, rows[1].n)
    assert.near(1050, rows[1].median_ns, 1e-9)
    -- the t interval of the mean over 3 sessions: t(0.975, 2) * sd / sqrt(3)
    local l = { math.log(1050), math.log(1050 * 1.02), math.log(1050 * 0.98) }
    local m = (l[1] + l[2] + l[3]) / 3
    local sd = math.sqrt(((l[1] - m) ^ 2 + (l[2] - m) ^ 2 + (l[3] - m) ^ 2) / 2)
    assert.near(100 * 4.302653 * sd / math.sqrt(3), rows[1].ci_pct, 1e-4)
    local text = results.results_table(bs)
    assert.matches('sessions', text, 1, true)
    assert.equal(3, #results.results_rows(bs, { sessions = true }))
    assert.is_nil(results.results_rows(bs, { sessions = true })[1].sessions)
  end)

  it('does not flag rules that never aim at convergence, and leaves the flags column out when no row has one', function()
    local rows = results.results_rows {
      bundle { id = "n20-fp32", samples = quiet(), stop = { rule = 'do_bench', converged = false } },
      bundle { id = "n21-fp32", samples = quiet(), stop = { rule = 'count', converged = false }, stopping = { rule = 'count', n = 9 } },
      bundle { id = "n22-fp32", samples = quiet(), stop = { rule = 'rse_median', converged = true },
        throughput = { pct_floor = 99 } },
    }
    for i = 1, 3 do assert.is_nil(rows[i].flags, i) end
    local text = results.results_table { bundle { id = "n23-fp32", samples = quiet() } }
    assert.not_matches('flags', text, 1, true)
  end)

  it('says the words of the workload ids that every row shares once, and a sweep fits 120 columns', function()
    -- Liger's seq sweep on a CPU in cold mode: three modes, four providers, medians up to 0.7 s, !conv
    local bundles = {}
    for _, seq in ipairs { 1024, 2048, 4096, 8192, 16384 } do
      for _, mode in ipairs { 'forward', 'backward', 'full' } do
        for _, provider in ipairs { 'fused', 'reference', 'floor', 'copy' } do
          bundles[#bundles + 1] = bundle { id = ('hidden8192-kv_heads8-q_heads32-seq%d-bf16'):format(seq), mode = mode,
            provider = provider, median = 668819160, samples = { 605309720, 668819160, 746270000, 1000 },
            throughput = { gbps = 654.8 }, backend = 'cpu', timer = 'host_monotonic',
            stop = { rule = 'rse_median', converged = false, reason = 'timeout' } }
        end
      end
    end
    for _, text in ipairs { results.results_table(bundles), results.results_markdown(bundles) } do
      assert.matches('workload hidden8192%-kv_heads8%-q_heads32%-seq%*%-bf16', text)
      assert.matches('\nfull +copy +seq16384 +668819%.16 ', results.results_table(bundles))
      assert.not_matches('kv_heads8-q_heads32-seq1024', text, 1, true)
    end
    for line in results.results_table(bundles):gmatch('[^\n]+') do
      assert(utf8.len(line) <= 120, ('%d columns: %s'):format(utf8.len(line), line))
    end
    -- ids that differ in every word, or in their number of words, stay whole; one row stays whole
    local lines = header_and_rows(results.results_table { bundle { id = 'n1-fp32' }, bundle { id = 'n2-bf16' } })
    assert.matches('  n1%-fp32  ', lines[3])
    lines = header_and_rows(results.results_table { bundle { id = 'n1-fp32' }, bundle { id = 'n1-k2-fp32' } })
    assert.matches('  n1%-k2%-fp32  ', lines[4])
    assert.matches('  n1%-fp32  ', header_and_rows(results.results_table { bundle { id = 'n1-fp32' } })[3])
  end)

  it('counts samples from the stopping outcome when the record kept none', function()
    local b = bundle { id = "n24-fp32", stop = { rule = 'count', converged = false, samples = 3 } }
    require('kluabench.record.evidence').of(b).samples = {}
    local row = results.results_rows({ b })[1]
    assert.equal(3, row.n)
    assert.equal('n<5', row.flags)
    assert.is_nil(row.ci_pct)
  end)
end)

describe('results table of measured records', function()
  local kb = require 'kluabench'
  local record = require 'kluabench.record'
  local measure = require 'kluabench.measure'
  local stopping = require 'kluabench.measure.stopping'

  local function measured(mode, stop)
    local x = kb.randn({ 4096 }, 'f32', 1, 'cpu')
    local y = kb.empty({ 4096 }, 'f32', 'cpu')
    local p = measure.protocol(mode, { stop = stop, warmup_ms = 0, l2_bytes = 1 << 16, clocks = false })
    local r = p:run(function() y:copy_(x) end)
    return record.from_result { kernel = 'copy', mode = 'forward', provider = 'kb', result = r,
      parameters = { n = 4096 }, dtype = 'f32' }
  end

  it('reads protocol, backend/timer, samples, noise and flags from what from_result writes', function()
    local few = measured('cold', 3)
    -- more samples required than 1 ms can take: the rule can only time out
    local timeout = measured('hot', stopping.rse_median { min_samples = 1000000, max_samples = 1000000,
      timeout_ms = 1 })
    local rows = results.results_rows { few, timeout }
    assert.equal('cold', rows[1].protocol)
    assert.equal('hot', rows[2].protocol)
    assert.equal(kb.backend() .. '/' .. few.protocol.spec.measurement.timer, rows[1].timer)
    assert.equal(3, rows[1].n)
    assert.is_number(rows[1].ci_pct)
    -- a count rule never converges: not flagged !conv; 3 samples: the interval is [min, max]
    assert.matches('^n<5 ci=range', rows[1].flags) -- and ci~1 when one of the 3 is far off
    assert.is_false(kb.result.session(timeout).evidence.execution.stop.converged)
    assert.matches('!conv', rows[2].flags, 1, true)
  end)
end)
