--- Comparing two sets of results point by point: is NEW faster, slower, the
-- same as BASE, or can the samples not tell?
--
-- Points are matched by the run's workloadDigest and the implementation's
-- provider (bundles of one point found several times in one file, repeated
-- runs, have their samples pooled). For each match, on the raw samples:
--   - the ratio of medians new / base (> 1: NEW is slower),
--   - its bootstrap confidence interval (percentile method, `resamples`
--     resamples of each side, seeded: the same files give the same report),
--   - the Mann-Whitney U test's two-sided p-value (reported, as a second
--     opinion that does not depend on the median).
-- Verdict, with the interval [lo, hi] and the noise band `noise` (default
-- 1 %):
--   SAME    the whole interval lies within [1 - noise, 1 + noise]
--   SLOWER  lo > 1 (otherwise)            FASTER  hi < 1 (otherwise)
--   UNSURE  the interval holds 1 and reaches outside the band: more samples
--           (or quieter clocks) are needed to tell; a one-line hint says why.
-- A regression is a SLOWER point whose ratio exceeds 1 + threshold (default
-- 5 %); `kluabench compare` exits 1 when there is one.
local inference = require 'kluabench.stats.inference'

-- True once SIGINT or SIGTERM stopped the command (kb.interrupted): an error
-- caught then is the interrupt itself.
local function interrupted()
  local ok, kb = pcall(require, 'kluabench.core')
  return ok and type(kb) == 'table' and kb.interrupted() == true
end
local output = require 'kluabench.report'
local names = require 'kluabench.record.names'

local M = {}

M.DEFAULTS = { threshold = 0.05, noise = 0.01, confidence = 0.95, resamples = 2000, seed = 1 }

---------------------------------------------------------------------------
-- Reading bundles
---------------------------------------------------------------------------

local function is_bundle(v)
  return type(v) == 'table' and type(v.run) == 'table'
end

-- t[k1][k2]... where every step is a table, else nil: bundles come from
-- files, and any field may be missing or of another type.
local function get(t, ...)
  for i = 1, select('#', ...) do
    if type(t) ~= 'table' then return nil end
    t = t[select(i, ...)]
  end
  return t
end

local function text_of(v)
  return (type(v) == 'string' or type(v) == 'number') and tostring(v) or nil
end

-- A copy of list times scale, or nil and why when an element is not a number.
local function numbers(list, scale)
  local out = {}
  for i, v in ipairs(list) do
    if type(v) ~= 'number' then return nil, string.format('sample %d is not a number', i) end
    out[i] = v * scale
  end
  return out
end

--- The bundles in a decoded JSON value: a bundle, a list of bundles, or
-- {bundles = [...]}. nil, message otherwise.
function M.bundles_of(v)
  if is_bundle(v) then return { v } end
  if type(v) == 'table' and type(v.bundles) == 'table' then v = v.bundles end
  if type(v) == 'table' and #v > 0 then
    for i, b in ipairs(v) do
      if not is_bundle(b) then return nil, string.format('element %d is not a record bundle', i) end
    end
    return v
  end
  return nil, 'not a record bundle or a list of bundles'
end

--- Bundles from JSON or JSON Lines text. Returns a list, or nil, message.
function M.parse(text, label)
  label = label or 'input'
  local v, err, code = output.decode(text)
  if v ~= nil then
    local bundles, why = M.bundles_of(v)
    if not bundles then return nil, label .. ': ' .. why end
    return bundles
  end
  -- a line that starts with '{' makes it JSON Lines; [ \t\r]* rather than %s*,
  -- which spans newlines and made this quadratic in a file of blank lines
  if code ~= 'trailing' and not text:find('\n[ \t\r]*{') then return nil, label .. ': ' .. err end
  local out, n = {}, 0
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    n = n + 1
    if line:match('%S') then
      local b, lerr = output.decode(line)
      if b == nil then return nil, string.format('%s: line %d: %s', label, n, lerr) end
      if not is_bundle(b) then return nil, string.format('%s: line %d: not a record bundle', label, n) end
      out[#out + 1] = b
    end
  end
  if #out == 0 then return nil, label .. ': no bundles' end
  return out
end

--- Bundles from a file (JSON or JSON Lines). nil, message on failure.
function M.read(path)
  local text, err = output.read_file(path)
  if not text then return nil, err end
  return M.parse(text, path)
end

--- The raw samples of a bundle in ms: run.spec.samples ({unit = "ns" | "us"
-- | "ms", values}), or run.spec.sourceNative.samples_ms. Returns the list,
-- or nil, why.
function M.samples_of(bundle)
  local s = get(bundle, 'run', 'spec', 'samples')
  if type(s) == 'table' and type(s.values) == 'table' and #s.values > 0 then
    local scale = ({ ns = 1e-6, us = 1e-3, ms = 1, s = 1e3 })[s.unit or 'ns']
    if not scale then return nil, 'samples in unknown unit ' .. tostring(s.unit) end
    return numbers(s.values, scale)
  end
  local ms = get(bundle, 'run', 'spec', 'sourceNative', 'samples_ms')
  if type(ms) == 'table' and #ms > 0 then return numbers(ms, 1) end
  return nil, 'no raw samples in the record'
end

--- The recorded median in ms (run.spec.timing.latencyNs.median), or nil.
function M.median_of(bundle)
  local ns = get(bundle, 'run', 'spec', 'timing', 'latencyNs', 'median')
  return type(ns) == 'number' and ns / 1e6 or nil
end

local function provider_of(b)
  return text_of(get(b, 'implementation', 'spec', 'provider'))
    or text_of(get(b, 'run', 'metadata', 'labels', 'provider')) or '?'
end

--- The matching key of a bundle ("workloadDigest|provider") and a label
-- for people ("llama4_rope backward hidden512-...-bf16").
function M.key_of(b)
  local wd = get(b, 'run', 'spec', 'workloadDigest')
  if type(wd) ~= 'string' then
    wd = (text_of(get(b, 'run', 'spec', 'sourceNative', 'benchmark')) or '?') .. '?'
  end
  local ws = get(b, 'workload', 'spec')
  local slug = ''
  if type(get(ws, 'parameters')) == 'table' then
    local ok, s = pcall(names.workload_slug, ws.parameters, text_of(ws.dtype))
    slug = ok and s or ''
  end
  local parts = { text_of(get(ws, 'kernel')) or text_of(get(b, 'workload', 'metadata', 'name')) or '?' }
  parts[#parts + 1] = text_of(get(ws, 'operation'))
  if slug ~= '' then parts[#parts + 1] = slug end
  local provider = provider_of(b)
  return wd .. '|' .. provider, table.concat(parts, ' '), provider
end

---------------------------------------------------------------------------
-- Statistics of one point
---------------------------------------------------------------------------

--- The verdict for a confidence interval [lo, hi] of new / base.
function M.verdict(lo, hi, noise)
  noise = noise or M.DEFAULTS.noise
  if lo >= 1 - noise and hi <= 1 + noise then return 'SAME' end
  if lo > 1 then return 'SLOWER' end
  if hi < 1 then return 'FASTER' end
  return 'UNSURE'
end

--- Compares two lists of samples (ms). opts: the fields of M.DEFAULTS.
-- Returns {ratio, lo, hi, p, verdict, regression, base_median, new_median,
-- base_n, new_n, confidence, resamples, seed}.
function M.compare_samples(base, new, opts)
  opts = opts or {}
  local d = M.DEFAULTS
  local conf = opts.confidence or d.confidence
  local bs = inference.bootstrap_ratio(base, new, { resamples = opts.resamples or d.resamples,
    confidence = conf, seed = opts.seed or d.seed })
  local mw = inference.mann_whitney(new, base)
  local verdict = M.verdict(bs.lo, bs.hi, opts.noise or d.noise)
  local threshold = opts.threshold or d.threshold
  return {
    ratio = bs.ratio, lo = bs.lo, hi = bs.hi, p = mw.p, p_superiority = mw.p_superiority,
    verdict = verdict,
    regression = verdict == 'SLOWER' and bs.ratio > 1 + threshold,
    base_median = bs.base_median, new_median = bs.new_median,
    base_n = #base, new_n = #new, confidence = conf, resamples = bs.resamples, seed = bs.seed,
  }
end

local function execution(b)
  local e = get(b, 'run', 'spec', 'execution')
  return type(e) == 'table' and e or {}
end

-- One line on why a point is UNSURE (or what to mind about it).
local function hint(p, base_bs, new_bs, noise)
  local parts = {}
  local function clocks_note(bs, side)
    for _, b in ipairs(bs) do
      local c = execution(b).clocks
      if type(c) == 'table' and c.stable == false then
        local sm = type(c.smMhz) == 'table' and c.smMhz or {}
        parts[#parts + 1] = string.format('clocks unstable in %s (SM %s-%s MHz)', side,
          tostring(sm.min or '?'), tostring(sm.max or '?'))
        return
      end
    end
  end
  local function converge_note(bs, side)
    for _, b in ipairs(bs) do
      local s = execution(b).stop
      if type(s) == 'table' and s.converged == false and s.rule == 'rse_median' then
        parts[#parts + 1] = side .. ' did not converge'
        return
      end
    end
  end
  if p.verdict == 'UNSURE' then
    parts[#parts + 1] = string.format('interval %+.1f%%..%+.1f%% is wider than the +-%g%% noise band: '
      .. 'take more samples (n = %d / %d)', (p.lo - 1) * 100, (p.hi - 1) * 100, noise * 100,
      p.base_n, p.new_n)
  end
  clocks_note(base_bs, 'BASE')
  clocks_note(new_bs, 'NEW')
  if p.verdict == 'UNSURE' then
    converge_note(base_bs, 'BASE')
    converge_note(new_bs, 'NEW')
  end
  local pd = get(base_bs[1], 'run', 'spec', 'protocolDigest')
  if pd and pd ~= get(new_bs[1], 'run', 'spec', 'protocolDigest') then parts[#parts + 1] = 'protocols differ' end
  return #parts > 0 and table.concat(parts, '; ') or nil
end

---------------------------------------------------------------------------
-- Two sets of bundles
---------------------------------------------------------------------------

local function group(bundles)
  local by, order = {}, {}
  for _, b in ipairs(bundles) do
    local key, label, provider = M.key_of(b)
    if not by[key] then
      by[key] = { key = key, label = label, provider = provider, bundles = {} }
      order[#order + 1] = key
    end
    table.insert(by[key].bundles, b)
  end
  return by, order
end

local function pooled(bs)
  local out = {}
  for _, b in ipairs(bs) do
    local s, why = M.samples_of(b)
    if not s then return nil, why end
    table.move(s, 1, #s, #out + 1, out)
  end
  return out
end

--- Compares two lists of bundles. Returns {points = {{label, provider,
-- verdict, ratio, lo, hi, p, base_median, new_median, base_n, new_n,
-- regression, hint, base_runs, new_runs}}, only_base = {labels},
-- only_new = {labels}, regressions = n, counts = {VERDICT = n}, opts}.
function M.compare(base, new, opts)
  opts = opts or {}
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = opts[k] == nil and v or opts[k] end
  local bb, border = group(base)
  local nb = group(new)
  local out = { points = {}, only_base = {}, only_new = {}, regressions = 0, counts = {}, opts = o }
  for _, key in ipairs(border) do
    if interrupted() then error('interrupted!', 0) end -- caught on the way (reading): stop here
    local b, n = bb[key], nb[key]
    if not n then
      out.only_base[#out.only_base + 1] = b.label .. ' (' .. b.provider .. ')'
    else
      local point = { label = b.label, provider = b.provider, base_runs = #b.bundles,
        new_runs = #n.bundles }
      local sb, why_b = pooled(b.bundles)
      local sn, why_n = pooled(n.bundles)
      if sb and sn and #sb > 0 and #sn > 0 then
        local ok, c = pcall(M.compare_samples, sb, sn, o)
        if not ok and interrupted() then error(c, 0) end -- Ctrl-C stops the command, not one point
        if ok then
          for k, v in pairs(c) do point[k] = v end
        else
          point.verdict, point.hint = 'UNSURE', 'cannot compare: ' .. tostring(c):gsub('^.-: ', '')
        end
      else
        point.verdict = 'UNSURE'
        local mb, mn = M.median_of(b.bundles[1]), M.median_of(n.bundles[1])
        if mb and mn and mb > 0 then
          point.ratio, point.base_median, point.new_median = mn / mb, mb, mn
        end
        point.hint = (sb and 'NEW: ' .. why_n or 'BASE: ' .. why_b)
          .. ' (re-run with raw samples kept to get a verdict)'
      end
      if point.lo then point.hint = hint(point, b.bundles, n.bundles, o.noise) end
      if point.regression then out.regressions = out.regressions + 1 end
      out.counts[point.verdict] = (out.counts[point.verdict] or 0) + 1
      out.points[#out.points + 1] = point
    end
  end
  for key, n in pairs(nb) do
    if not bb[key] then out.only_new[#out.only_new + 1] = n.label .. ' (' .. n.provider .. ')' end
  end
  table.sort(out.only_new)
  return out
end

---------------------------------------------------------------------------
-- Reports
---------------------------------------------------------------------------

local function us(ms) return ms and string.format('%.2f', ms * 1000) or '' end
local function pct(r) return r and string.format('%+.1f%%', (r - 1) * 100) or '' end

local COLUMNS = {
  { key = 'label', title = 'point' },
  { key = 'provider', title = 'provider' },
  { key = 'base_median', title = 'base us', align = 'right', format = us },
  { key = 'new_median', title = 'new us', align = 'right', format = us },
  { key = 'ratio', title = 'change', align = 'right', format = pct },
  { key = 'interval', title = 'interval', align = 'right' },
  { key = 'p', title = 'p (MWU)', align = 'right', format = '%.3g' },
  { key = 'verdict', title = 'verdict' },
  { key = 'note', title = 'note' },
}

--- The report as text: format "table" (aligned, default), "markdown" or
-- "json". Ends with a summary line.
function M.format(result, fmt)
  fmt = fmt or 'table'
  if fmt == 'json' then
    return output.encode_pretty(result) .. '\n'
  end
  local rows = {}
  for i, p in ipairs(result.points) do
    local note = p.hint
    if p.regression then
      note = string.format('REGRESSION beyond %g%%', result.opts.threshold * 100)
        .. (note and ('; ' .. note) or '')
    end
    rows[i] = {
      label = p.label, provider = p.provider, base_median = p.base_median, new_median = p.new_median,
      ratio = p.ratio, p = p.p, verdict = p.verdict, note = note,
      interval = p.lo and string.format('%s..%s', pct(p.lo), pct(p.hi)) or '',
    }
  end
  local text = fmt == 'markdown' and output.format_markdown(COLUMNS, rows)
    or output.format_table(COLUMNS, rows)
  local parts = {}
  for _, v in ipairs { 'FASTER', 'SAME', 'SLOWER', 'UNSURE' } do
    if result.counts[v] then parts[#parts + 1] = result.counts[v] .. ' ' .. v end
  end
  local o = result.opts
  local lines = { (text:gsub('\n$', '')) }
  local function add(s) lines[#lines + 1] = s end
  if fmt == 'markdown' then add('') end
  add(string.format('%d point(s): %s. %d regression(s) beyond %g%%. Ratio new/base of medians, '
    .. '%g%% bootstrap interval (%d resamples, seed %d), noise band +-%g%%.', #result.points,
    #parts > 0 and table.concat(parts, ', ') or 'none', result.regressions, o.threshold * 100,
    o.confidence * 100, o.resamples, o.seed, o.noise * 100))
  if #result.only_base > 0 then add('only in BASE: ' .. table.concat(result.only_base, ', ')) end
  if #result.only_new > 0 then add('only in NEW: ' .. table.concat(result.only_new, ', ')) end
  return table.concat(lines, '\n') .. '\n'
end

return M
