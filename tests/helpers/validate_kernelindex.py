#!/usr/bin/python3
"""Validates kernelindex.dev/v1alpha1 documents with an independent JSON Schema
validator (python3-jsonschema, draft 2020-12) against the schema of each
document's kind, and kernelindex's field rules beyond the schema (https URLs,
sorted set-like lists, durations in ns): every document of every bundle in the given JSON or JSON
Lines files, or of a submission document ({projects, operations, workloads,
implementations, runs}). Prints one line per invalid document and a summary
"N documents: N valid, N invalid (kinds ...)"; exit status 1 when any is
invalid or a file cannot be read.

usage: validate_kernelindex.py SCHEMA_DIR FILE...
"""
import json
import os
import re
import sys

from jsonschema import Draft202012Validator


def is_https(url):
    return isinstance(url, str) and re.match(r'^https://[^/\s?#]+', url) is not None and not re.search(r'\s', url)


def field_rules(doc):
    """kernelindex's rules beyond the JSON Schema (its zod checks): messages for what breaks them."""
    out = []
    spec = doc.get('spec') if isinstance(doc, dict) else None
    kind = doc.get('kind') if isinstance(doc, dict) else None
    if not isinstance(spec, dict):
        return out
    if kind == 'OperationSpec':
        for name, a in sorted((spec.get('axes') or {}).items()):
            if isinstance(a, dict) and a.get('role') == 'constant' and 'value' not in a:
                out.append('spec.axes.%s: a constant axis requires a value' % name)
            if isinstance(a, dict) and a.get('role') == 'derived' and 'expression' not in a:
                out.append('spec.axes.%s: a derived axis requires an expression' % name)
        for side in ('inputs', 'outputs'):
            for i, arg in enumerate(spec.get(side) or []):
                if isinstance(arg, dict) and ('tensor' in arg) == ('scalar' in arg):
                    out.append('spec.%s[%d]: an argument is exactly one of tensor or scalar' % (side, i))
    if kind == 'BenchmarkRun':
        lat = (spec.get('timing') or {}).get('latencyNs')
        if isinstance(lat, dict) and 'median' not in lat and 'mean' not in lat:
            out.append('spec.timing.latencyNs: requires median or mean')
        h = (spec.get('evidence') or {}).get('harness')
        if isinstance(h, dict) and not is_https(h.get('repository')):
            out.append('spec.evidence.harness.repository: expected an https URL')
    if kind == 'ImplementationRevision':
        pr = spec.get('projectRevision') or {}
        if 'repository' in pr and not is_https(pr['repository']):
            out.append('spec.projectRevision.repository: expected an https URL')
        for f in ('hardwareArchitectures', 'productsTested', 'axes', 'dtypes', 'layouts'):
            v = (spec.get('support') or {}).get(f)
            if isinstance(v, list) and any(not (a < b) for a, b in zip(v, v[1:])):
                out.append('spec.support.%s: a set-like list must be sorted and free of repeats' % f)
        for i, b in enumerate(spec.get('buildVariants') or []):
            inst = b.get('install') if isinstance(b, dict) else None
            if isinstance(inst, dict) and 'repository' in inst and not is_https(inst['repository']):
                out.append('spec.buildVariants[%d].install.repository: expected an https URL' % i)
    if kind == 'SoftwareProject':
        for f in ('repository', 'homepage'):
            if f in spec and not is_https(spec[f]):
                out.append('spec.%s: expected an https URL' % f)
    if kind == 'BenchmarkProtocol':
        h = spec.get('harness') or {}
        if 'repository' in h and not is_https(h['repository']):
            out.append('spec.harness.repository: expected an https URL')
        if isinstance((spec.get('measurement') or {}).get('warmupDuration'), str):
            out.append('spec.measurement.warmupDuration: write durations as integer nanoseconds')
    for i, r in enumerate((doc.get('metadata') or {}).get('sourceRefs') or []):
        if isinstance(r, dict) and not is_https(r.get('url')):
            out.append('metadata.sourceRefs[%d].url: expected an https URL' % i)
    return out


def schemas(directory):
    out = {}
    for name in os.listdir(directory):
        if name.endswith('.schema.json'):
            with open(os.path.join(directory, name), encoding='utf-8') as f:
                s = json.load(f)
            Draft202012Validator.check_schema(s)
            out[s['title']] = Draft202012Validator(s)
    return out


def documents(value):
    """(where, document) for every document a value holds."""
    if isinstance(value, list):
        for i, v in enumerate(value):
            for where, d in documents(v):
                yield '[%d]%s' % (i, where), d
    elif isinstance(value, dict) and 'kind' in value and 'apiVersion' in value:
        yield '', value
    elif isinstance(value, dict) and 'run' in value and isinstance(value['run'], dict):
        for member, d in value.items():
            yield '.' + member, d
    elif isinstance(value, dict):
        for key in ('projects', 'operations', 'workloads', 'implementations', 'runs'):
            for i, entry in enumerate(value.get(key, [])):
                if key == 'implementations':
                    yield '.%s[%d].manifest' % (key, i), entry.get('manifest')
                elif key == 'runs':
                    for part in ('run', 'protocol', 'environment'):
                        yield '.%s[%d].%s' % (key, i, part), entry.get(part)
                else:
                    yield '.%s[%d]' % (key, i), entry


def values(path):
    with open(path, encoding='utf-8') as f:
        text = f.read()
    if path.endswith('.jsonl'):
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                yield '%s:%d' % (path, n), json.loads(line)
    else:
        yield path, json.loads(text)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    validators = schemas(argv[1])
    total = bad = 0
    kinds = {}
    for path in argv[2:]:
        for where, value in values(path):
            for member, doc in documents(value):
                total += 1
                kind = doc.get('kind') if isinstance(doc, dict) else None
                kinds[kind] = kinds.get(kind, 0) + 1
                v = validators.get(kind)
                errors = list(v.iter_errors(doc)) if v else None
                rules = field_rules(doc) if v else []
                if errors is None or errors or rules:
                    bad += 1
                    why = 'unknown kind %r' % kind if errors is None else '; '.join(
                        ['%s: %s' % ('/'.join(str(p) for p in e.absolute_path), e.message) for e in errors[:3]]
                        + rules[:3])
                    print('INVALID %s%s %s' % (where, member, why))
    print('%d documents: %d valid, %d invalid (kinds %s)' % (
        total, total - bad, bad, ', '.join('%s %d' % (k, n) for k, n in sorted(kinds.items(), key=str))))
    return 1 if bad or total == 0 else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
