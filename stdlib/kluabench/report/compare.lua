--- Comparing two sets of results point by point: is NEW faster, slower, the
-- same as BASE, or can the samples not tell?
--
-- Points are matched by the run's workloadDigest, the mode (the timed pass)
-- and the provider (kluabench.record.point). Each bundle of a point is one measurement session (the harness's
-- --runs N gives N); a side's estimate is the mean of its sessions' medians.
-- For each match:
--   - the ratio new / base of those estimates (> 1: NEW is slower),
--   - its confidence interval from a hierarchical bootstrap: sessions
--     resampled, then samples within them (inference.hierarchical_ratio),
--     so that the run-to-run shift counts, not only the spread inside a run;
--   - a side measured in a single session shows no run-to-run shift, so the
--     interval is widened by the device's between-session noise figure at
--     the point's time scale (--between, the records' sessionNoise, or the
--     local cache that scripts/run_noise.lua fills); without one, the point
--     is UNSURE (a hint says how to get one);
--   - the Mann-Whitney U test's two-sided p-value on the pooled samples
--     (reported, as a second opinion that does not depend on the median).
-- Verdict, with the interval [lo, hi] and the noise band `noise` (default
-- 1 %):
--   SAME    the whole interval lies within [1 - noise, 1 + noise]
--   SLOWER  lo > 1 (otherwise)            FASTER  hi < 1 (otherwise)
--   UNSURE  the interval holds 1 and reaches outside the band, fewer than
--           MIN_SAMPLES samples on a side, or no between-session figure.
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
local reader = require 'kluabench.record.reader'

local M = {}

M.DEFAULTS = { threshold = 0.05, noise = 0.01, confidence = 0.95, resamples = 2000, seed = 1,
  familywise = true }

--- Fewer samples than this on either side of a point: UNSURE, never a
-- verdict (a median and its interval need a few samples to mean anything).
M.MIN_SAMPLES = 5

local get = reader.get

---------------------------------------------------------------------------
-- Reading bundles (kluabench.record.reader)
---------------------------------------------------------------------------

--- The bundles in a decoded value: a bundle, a list, or {bundles = [...]}.
--
-- nil, message otherwise.
--
-- @signature compare.bundles_of(v) -> bundles | nil, message
-- @example
--   local list = compare.bundles_of(decoded)
function M.bundles_of(v)
  if reader.is_bundle(v) then return { v } end
  if type(v) == 'table' and type(v.bundles) == 'table' then v = v.bundles end
  if type(v) == 'table' and #v > 0 then
    for i, b in ipairs(v) do
      if not reader.is_bundle(b) then return nil, string.format('element %d is not a record bundle', i) end
    end
    return v
  end
  return nil, 'not a record bundle or a list of bundles'
end

--- Bundles from JSON or JSON Lines text, checked for comparing (reader.parse with comparable =
-- true).
--
-- Returns a list, or nil, "LABEL:LINE: why".
--
-- @signature compare.parse(text [, label]) -> bundles | nil, message
-- @example
--   local bundles = compare.parse(text, "results.jsonl")
function M.parse(text, label)
  local bundles, err = reader.parse(text, label or 'input', { comparable = true })
  if not bundles then return nil, err end
  return bundles
end

--- Bundles from a JSON or JSON Lines file, checked for comparing (reader.read with comparable =
-- true).
--
-- nil, message on failure.
--
-- @signature compare.read(path) -> bundles | nil, message
-- @example
--   local bundles = assert(compare.read("results.jsonl"))
function M.read(path)
  local bundles, err = reader.read(path, { comparable = true })
  if not bundles then return nil, err end
  return bundles
end

--- The raw samples of a bundle in ms (reader.samples_of).
--
-- @signature compare.samples_of(bundle) -> ms list | nil, why
-- @example
--   local xs = compare.samples_of(bundle)
M.samples_of = reader.samples_of

--- The recorded median in ms.
--
-- The recorded median in ms (run.spec.timing.latencyNs.median), or nil.
--
-- @signature compare.median_of(bundle) -> ms | nil
-- @example
--   print(compare.median_of(bundle))
function M.median_of(bundle)
  local ns = require('kluabench.record.point').of(bundle).median_ns
  return (type(ns) == 'number' and ns > 0 and ns < math.huge) and ns / 1e6 or nil
end

--- The matching key ("workloadDigest|mode|provider": kernelindex's workload holds no mode, the
-- timed pass is the protocol's) and a label for people.
--
-- @signature compare.key_of(bundle) -> key, label
-- @example
--   local key, label = compare.key_of(bundle)
function M.key_of(b)
  local wd = get(b, 'run', 'spec', 'workloadDigest')
  if type(wd) ~= 'string' then wd = '?' end
  local label, provider = reader.label_of(b)
  local mode = require('kluabench.record.point').of(b).mode or '?'
  return wd .. '|' .. mode .. '|' .. provider, label, provider
end

---------------------------------------------------------------------------
-- Statistics of one point
---------------------------------------------------------------------------

--- The verdict of an interval of new / base.
--
-- @signature compare.verdict(lo, hi [, noise]) -> "SAME" | "FASTER" | "SLOWER" | "UNSURE"
-- @example
--   print(compare.verdict(1.10, 1.20)) --> SLOWER
function M.verdict(lo, hi, noise)
  noise = noise or M.DEFAULTS.noise
  if lo >= 1 - noise and hi <= 1 + noise then return 'SAME' end
  -- a change is called only when the whole interval lies beyond the noise
  -- band: an interval that starts inside it cannot tell a change of a few
  -- tenths of a percent (run-to-run drift) from none
  if lo > 1 + noise then return 'SLOWER' end
  if hi < 1 - noise then return 'FASTER' end
  return 'UNSURE'
end

local function total(sessions)
  local n = 0
  for _, s in ipairs(sessions) do n = n + #s end
  return n
end

local function pooled(sessions)
  local out = {}
  for _, s in ipairs(sessions) do table.move(s, 1, #s, #out + 1, out) end
  return out
end

-- The between-session noise (sd of log median) at a point of ms: opts.between
-- is a number or a function(ms) -> sd, source.
local function between_at(between, ms)
  if type(between) == 'number' then return between, '--between' end
  if type(between) == 'function' then return between(ms) end
  return nil
end

--- Compares the sessions of one point: hierarchical bootstrap, widened by the between-session noise
-- where a side has one session.
--
-- Fewer than compare.MIN_SAMPLES (5) samples on a side, or one session a side and no
-- between-session figure, give UNSURE with `why` set. opts: as compare.compare, and points (how
-- many points the comparison holds, for the family-wise confidence). Returns {ratio, lo, hi, p,
-- verdict, regression, base_median, new_median, base_n, new_n, base_sessions, new_sessions,
-- between, point_confidence, why, ...}.
--
-- @signature compare.compare_sessions(base_sessions, new_sessions [, opts]) -> table
-- @example
--   local c = compare.compare_sessions({{1, 1.1, 0.9, 1, 1.05}, {1, 1, 1.1, 0.95, 1}}, {{1.5, 1.6, 1.4, 1.55, 1.5}, {1.5, 1.5, 1.6, 1.45, 1.5}})
--   print(c.verdict)
function M.compare_sessions(base, new, opts)
  opts = opts or {}
  local d = M.DEFAULTS
  local conf = opts.confidence or d.confidence
  local nb, nn = total(base), total(new)
  local r = { base_n = nb, new_n = nn, base_sessions = #base, new_sessions = #new, confidence = conf }
  if nb < M.MIN_SAMPLES or nn < M.MIN_SAMPLES then
    local sb, sn = pooled(base), pooled(new)
    if nb > 0 and nn > 0 then
      local stats = require 'kluabench.stats'
      r.base_median, r.new_median = stats.median(sb), stats.median(sn)
      r.ratio = r.new_median / r.base_median
    end
    r.verdict, r.regression = 'UNSURE', false
    r.why = string.format('too few samples (n = %d / %d; a verdict needs at least %d a side)', nb, nn,
      M.MIN_SAMPLES)
    return r
  end
  local h = inference.hierarchical_ratio(base, new, { resamples = opts.resamples or d.resamples,
    confidence = conf, seed = opts.seed or d.seed })
  for k, v in pairs(h) do r[k] = v end
  -- family-wise: with m points compared, each interval is at confidence
  -- 1 - (1 - conf) / m (Bonferroni), so that an A/A comparison of a whole
  -- sweep reads as a change no more often than 1 - conf. The bootstrap's
  -- percentile interval at conf has its log half-widths stretched by
  -- z(point) / z(conf) rather than taking percentiles far in the tails.
  local m = opts.points or 1
  local pconf = 1 - (1 - conf) / m
  r.point_confidence = pconf
  local stretch = inference.normal_quantile(0.5 + pconf / 2) / inference.normal_quantile(0.5 + conf / 2)
  h.lo = h.ratio * (h.lo / h.ratio) ^ stretch
  h.hi = h.ratio * (h.hi / h.ratio) ^ stretch
  local mw = inference.mann_whitney(pooled(new), pooled(base))
  r.p, r.p_superiority = mw.p, mw.p_superiority
  -- the between-session variance the bootstrap could not see: all of it for
  -- a side of one session, the shortfall of the observed spread below the
  -- device's figure for a side of several (few sessions underestimate it)
  local sd, source = between_at(opts.between, h.base_median)
  if not sd and (h.base_between or h.new_between) then
    -- without a device figure, the spread the sessions themselves show,
    -- pooled over both sides: a side that happened to land close together
    -- (or has one session) is not taken to be quieter than the other
    local ss, df = 0, 0
    for _, side in ipairs { { h.base_sessions, h.base_between }, { h.new_sessions, h.new_between } } do
      if side[2] then ss, df = ss + side[2] ^ 2 * (side[1] - 1), df + side[1] - 1 end
    end
    sd, source = math.sqrt(ss / df), 'the spread of the sessions'
    -- a spread estimated from a few sessions: Student's t with their
    -- degrees of freedom instead of the normal quantile
    local k = inference.t_quantile(0.5 + pconf / 2, df) / inference.normal_quantile(0.5 + pconf / 2)
    h.lo, h.hi = h.ratio * (h.lo / h.ratio) ^ k, h.ratio * (h.hi / h.ratio) ^ k
    r.t_df = df
  end
  local extra, unknown = 0, false
  for _, side in ipairs { { h.base_sessions, h.base_between }, { h.new_sessions, h.new_between } } do
    if sd then
      extra = extra + math.max(0, sd ^ 2 - (side[2] or 0) ^ 2) / side[1]
    elseif side[1] == 1 then
      unknown = true
    end
  end
  r.between, r.between_source = sd, source
  r.lo, r.hi = inference.widen(h.ratio, h.lo, h.hi, math.sqrt(extra), pconf)
  r.verdict = M.verdict(r.lo, r.hi, opts.noise or d.noise)
  if unknown then
    r.verdict = 'UNSURE'
    r.why = 'one session a side and no between-session noise figure for this device: the interval '
      .. 'holds only the spread inside one run (give --between SD, run kluabench scripts/run_noise.lua '
      .. 'on the device, or measure with --runs 3)'
  end
  r.regression = r.verdict == 'SLOWER' and r.ratio > 1 + (opts.threshold or d.threshold)
  return r
end

--- Compares two lists of samples (ms), one session each: compare.compare_sessions({base}, {new},
-- opts).
--
-- @signature compare.compare_samples(base, new [, opts]) -> table
-- @example
--   local c = compare.compare_samples({1, 1.1, 0.9, 1, 1.05}, {1.5, 1.6, 1.4, 1.55, 1.5}, {between = 0.01})
--   print(c.verdict, c.ratio)
function M.compare_samples(base, new, opts)
  return M.compare_sessions({ base }, { new }, opts)
end

-- What the protocol reported about a bundle's session (its evidence entry).
local function execution(b)
  local e = require('kluabench.record.point').of(b).evidence.execution
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
  if p.why then
    parts[#parts + 1] = p.why
  elseif p.verdict == 'UNSURE' then
    parts[#parts + 1] = string.format('interval %+.1f%%..%+.1f%% is wider than the +-%g%% noise band: '
      .. 'take more samples or sessions (n = %d / %d, sessions %d / %d)', (p.lo - 1) * 100,
      (p.hi - 1) * 100, noise * 100, p.base_n, p.new_n, p.base_sessions, p.new_sessions)
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
    local list = by[key].bundles
    list[#list + 1] = b
  end
  return by, order
end

-- The sessions (sample lists) of a point's bundles, or nil, why.
local function sessions_of(bs)
  local out = {}
  for i, b in ipairs(bs) do
    local s, why = M.samples_of(b)
    if not s then return nil, why end
    out[i] = s
  end
  return out
end

-- The noise figure recorded in the bundles (the largest of them), as a
-- function of ms for compare_sessions, or nil.
local function recorded_between(bs)
  local sd
  for _, b in ipairs(bs) do
    local x = require('kluabench.record.point').of(b).noise_sd
    if type(x) == 'number' and x >= 0 and x < 1 and (not sd or x > sd) then sd = x end
  end
  return sd
end

--- Compares two lists of bundles point by point: verdict, ratio, interval, p-value, hint.
--
-- opts: threshold (0.05: a SLOWER point beyond it is a regression), noise (0.01), confidence,
-- resamples, seed, familywise (true: each interval at 1 - (1 - confidence) / m for m points)
-- (compare.DEFAULTS), between (the between-session sd of log median: a number or a function(ms) ->
-- sd, source; default the records' sessionNoise, else device_between). result: {points, only_base,
-- only_new, regressions, counts, opts}.
--
-- Returns {points = {{label, provider, verdict, ratio, lo, hi, p, base_median, new_median, base_n,
-- new_n, base_sessions, new_sessions, between, regression, hint, base_runs, new_runs}}, only_base =
-- {labels}, only_new = {labels}, regressions = n, counts = {VERDICT = n}, opts}.
--
-- @signature compare.compare(base, new [, opts]) -> result
-- @example
--   local r = compare.compare(assert(compare.read("base.jsonl")), assert(compare.read("new.jsonl")))
--   io.write(compare.format(r, "markdown"))
function M.compare(base, new, opts)
  opts = opts or {}
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = opts[k] == nil and v or opts[k] end
  local bb, border = group(base)
  local nb = group(new)
  local out = { points = {}, only_base = {}, only_new = {}, regressions = 0, counts = {},
    opts = { threshold = o.threshold, noise = o.noise, confidence = o.confidence,
      resamples = o.resamples, seed = o.seed, familywise = o.familywise, points_compared = common,
      between = type(opts.between) == 'number' and opts.between or nil } }
  local common = 0
  for _, key in ipairs(border) do if nb[key] then common = common + 1 end end
  for _, key in ipairs(border) do
    if interrupted() then error('interrupted!', 0) end -- caught on the way (reading): stop here
    local b, n = bb[key], nb[key]
    if not n then
      out.only_base[#out.only_base + 1] = b.label .. ' (' .. b.provider .. ')'
    else
      local point = { label = b.label, provider = b.provider, base_runs = #b.bundles,
        new_runs = #n.bundles }
      local sb, why_b = sessions_of(b.bundles)
      local sn, why_n = sessions_of(n.bundles)
      if sb and sn then
        local po = {}
        for k, v in pairs(o) do po[k] = v end
        po.between, po.points = opts.between, o.familywise == false and 1 or common
        if po.between == nil then
          local rb, rn = recorded_between(b.bundles), recorded_between(n.bundles)
          local sd = (rb and rn) and math.max(rb, rn) or rb or rn
          if sd then po.between = function() return sd, 'the records' end end
        end
        if po.between == nil then po.between = opts.device_between end
        local ok, c = pcall(M.compare_sessions, sb, sn, po)
        if not ok and interrupted() then error(c, 0) end -- Ctrl-C stops the command, not one point
        if ok then
          for k, v in pairs(c) do point[k] = v end
          point.hint = hint(point, b.bundles, n.bundles, o.noise)
        else
          point.verdict, point.regression = 'UNSURE', false
          point.hint = 'cannot compare: ' .. tostring(c):gsub('^.-: ', '')
        end
      else
        point.verdict = 'UNSURE'
        local mb, mn = M.median_of(b.bundles[1]), M.median_of(n.bundles[1])
        if mb and mn then
          point.ratio, point.base_median, point.new_median = mn / mb, mb, mn
        end
        point.hint = (sb and 'NEW: ' .. why_n or 'BASE: ' .. why_b)
          .. ' (re-run with raw samples kept to get a verdict)'
      end
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

--- The run-to-run spread of each point found in several sessions: {label, provider, ms, sd (of log
-- session medians), df}.
--
-- For ceilings.noise_figure; scripts/run_noise.lua --from uses it.
--
-- @signature compare.session_spread(bundles) -> list
-- @example
--   local sp = compare.session_spread(assert(compare.read("sessions.jsonl")))
function M.session_spread(bundles)
  local by, order = group(bundles)
  local out = {}
  for _, key in ipairs(order) do
    local g = by[key]
    local sessions = sessions_of(g.bundles)
    if sessions and #sessions >= 2 then
      local logs, sum = {}, 0
      local stats = require 'kluabench.stats'
      for i, s in ipairs(sessions) do
        logs[i] = math.log(stats.median(s))
        sum = sum + logs[i]
      end
      local mean, ss = sum / #logs, 0
      for _, l in ipairs(logs) do ss = ss + (l - mean) ^ 2 end
      out[#out + 1] = { label = g.label, provider = g.provider, ms = math.exp(mean),
        sd = math.sqrt(ss / (#logs - 1)), df = #logs - 1 }
    end
  end
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
  { key = 'runs', title = 'runs', align = 'right' },
  { key = 'base_median', title = 'base us', align = 'right', format = us },
  { key = 'new_median', title = 'new us', align = 'right', format = us },
  { key = 'ratio', title = 'change', align = 'right', format = pct },
  { key = 'interval', title = 'interval', align = 'right' },
  { key = 'p', title = 'p (MWU)', align = 'right', format = '%.3g' },
  { key = 'verdict', title = 'verdict' },
  { key = 'note', title = 'note' },
}

-- A copy of v that JSON can hold: numbers that are not finite (a ratio of
-- odd recorded medians) and functions become absent.
local function json_safe(v)
  if type(v) == 'number' then return (v == v and v > -math.huge and v < math.huge) and v or nil end
  if type(v) == 'function' then return nil end
  if type(v) ~= 'table' then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = json_safe(x) end
  return out
end

--- The report as "table" (default), "markdown" or "json", ending with a summary line.
--
-- @signature compare.format(result [, format]) -> text
-- @example
--   io.write(compare.format(result, "markdown"))
function M.format(result, fmt)
  fmt = fmt or 'table'
  if fmt == 'json' then
    return output.encode_pretty(json_safe(result)) .. '\n'
  end
  local rows = {}
  for i, p in ipairs(result.points) do
    local note = p.hint
    if p.regression then
      note = string.format('REGRESSION beyond %g%%', result.opts.threshold * 100)
        .. (note and ('; ' .. note) or '')
    end
    rows[i] = {
      label = p.label, provider = p.provider,
      runs = string.format('%d/%d', p.base_sessions or p.base_runs, p.new_sessions or p.new_runs),
      base_median = p.base_median, new_median = p.new_median,
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
  add(string.format('%d point(s): %s. %d regression(s) beyond %g%%. Ratio new/base of the mean '
    .. 'session medians, %g%% hierarchical bootstrap interval (sessions, then samples; %d resamples, '
    .. 'seed %d) widened by the between-session noise for single-session sides%s, noise band +-%g%%.',
    #result.points, #parts > 0 and table.concat(parts, ', ') or 'none', result.regressions,
    o.threshold * 100, o.confidence * 100, o.resamples, o.seed,
    o.between and string.format(' (--between %g%%)', o.between * 100) or '', o.noise * 100))
  local sources, order = {}, {}
  for _, p in ipairs(result.points) do
    if p.between_source then
      if not sources[p.between_source] then order[#order + 1] = p.between_source end
      sources[p.between_source] = (sources[p.between_source] or 0) + 1
    end
  end
  if #order > 0 then
    local parts2 = {}
    for i, src in ipairs(order) do parts2[i] = string.format('%s (%d point(s))', src, sources[src]) end
    add('between-session noise from: ' .. table.concat(parts2, ', ') .. '.')
  end
  if #result.only_base > 0 then add('only in BASE: ' .. table.concat(result.only_base, ', ')) end
  if #result.only_new > 0 then add('only in NEW: ' .. table.concat(result.only_new, ', ')) end
  return table.concat(lines, '\n') .. '\n'
end

return M
