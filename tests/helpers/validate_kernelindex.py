#!/usr/bin/python3
"""Validates kernelindex.dev/v1alpha1 documents with an independent JSON Schema
validator (python3-jsonschema, draft 2020-12) against the schema of each
document's kind: every document of every bundle in the given JSON or JSON
Lines files, or of a submission document ({projects, operations, workloads,
implementations, runs}). Prints one line per invalid document and a summary
"N documents: N valid, N invalid (kinds ...)"; exit status 1 when any is
invalid or a file cannot be read.

usage: validate_kernelindex.py SCHEMA_DIR FILE...
"""
import json
import os
import sys

from jsonschema import Draft202012Validator


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
                if errors is None or errors:
                    bad += 1
                    why = 'unknown kind %r' % kind if errors is None else '; '.join(
                        '%s: %s' % ('/'.join(str(p) for p in e.absolute_path), e.message) for e in errors[:3])
                    print('INVALID %s%s %s' % (where, member, why))
    print('%d documents: %d valid, %d invalid (kinds %s)' % (
        total, total - bad, bad, ', '.join('%s %d' % (k, n) for k, n in sorted(kinds.items(), key=str))))
    return 1 if bad or total == 0 else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
