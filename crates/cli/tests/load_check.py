"""Loads tapstat's logs as README.md says, with pandas and DuckDB, and checks them
against `tapstat schema --format json` (crates/cli/tests/load.rs runs it).

usage: load_check.py SCHEMA.json DIR...   (each DIR an output directory, TSV or JSON lines)

TSV: every log is read with the README's calls,
    pandas.read_csv(path, sep="\t")
    duckdb.read_csv(path, sep="\t", quotechar='"')
and each must read every line after the header as one row, with the header's names,
and give every u64, f64 and bool column a numeric type. DuckDB types a column that has
no value in the file at all as VARCHAR (there is nothing to type it from): such a
column is all NULL, which is checked instead; and README's call with the schema's
types,
    duckdb.read_csv(path, sep="\t", quotechar='"', dtype=types)
must give every one a numeric type. JSON lines: every key of the schema, in
its order (the columns the options chose), each with one JSON type (null aside) that is its schema
type's.

Prints one line per problem and exits 1 if there was any.
"""

import json
import os
import sys

import duckdb
import pandas as pd

NUMERIC = {"u64", "f64", "bool"}
DUCK_NUMERIC = ("BIGINT", "UBIGINT", "HUGEINT", "UHUGEINT", "INTEGER", "DOUBLE", "FLOAT", "DECIMAL", "BOOLEAN")
JSON_TYPES = {
    "u64": (int,),
    "f64": (float, int),
    "bool": (bool,),
    "string": (str,),
    "ip": (str,),
    "list": (list,),
    "strings": (list,),
}

problems = []


def problem(msg):
    problems.append(msg)
    print(msg)


def check_tsv(path, cols, duck):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", f"{path}: no line end at the end"
    header = lines[0].split("\t")
    rows = len(lines) - 2
    unknown = [c for c in header if c not in cols]
    if unknown:
        problem(f"{path}: columns not in the schema: {unknown}")
        return

    df = pd.read_csv(path, sep="\t")
    if rows == 0:
        # A log with no record: nothing to type the columns from.
        if len(df) != 0 or list(df.columns) != header:
            problem(f"{path}: pandas reads a header-only file as {df.shape}")
        return
    if list(df.columns) != header:
        problem(f"{path}: pandas names the columns {list(df.columns)[:3]}..., the header {header[:3]}...")
    if len(df) != rows:
        problem(f"{path}: pandas read {len(df)} rows of {rows}")
    for c in header:
        if c in df.columns and cols[c] in NUMERIC and not pd.api.types.is_numeric_dtype(df[c]):
            problem(f"{path}: pandas reads {cols[c]} column {c} as {df[c].dtype}: {df[c].dropna().head(3).tolist()}")

    rel = duckdb.read_csv(path, sep="\t", quotechar='"')
    if rel.columns != header:
        problem(f"{path}: DuckDB names the columns {rel.columns[:3]}..., the header {header[:3]}...")
    # Every value converted, not only the rows counted: a column typed from the first
    # rows fails on a later value that does not fit.
    n = len(rel.fetchall())
    if n != rows:
        problem(f"{path}: DuckDB read {n} rows of {rows}")
    for c, t in zip(rel.columns, rel.types):
        if c not in cols or cols[c] not in NUMERIC or str(t).startswith(DUCK_NUMERIC):
            continue
        if str(t) == "VARCHAR":
            q = duckdb.sql(f'SELECT count("{c}") FROM read_csv(\'{path}\', delim=\'\\t\', quote=\'"\')').fetchall()[0][0]
            if q == 0:
                continue
        problem(f"{path}: DuckDB reads {cols[c]} column {c} as {t}")
    types = {c: duck[c] for c in header}
    typed = duckdb.read_csv(path, sep="\t", quotechar='"', dtype=types)
    n = len(typed.fetchall())
    if n != rows:
        problem(f"{path}: DuckDB with the schema's types read {n} rows of {rows}")
    for c, t in zip(typed.columns, typed.types):
        if cols[c] in NUMERIC and not str(t).startswith(DUCK_NUMERIC):
            problem(f"{path}: DuckDB with the schema's types reads {cols[c]} column {c} as {t}")
    # Strings come back as written: never a quote taken for a CSV quote.
    for c in header:
        if c in cols and cols[c] == "string" and c in df.columns:
            vals = df[c].dropna().astype(str)
            if vals.str.startswith('"').any():
                problem(f"{path}: pandas reads a string of {c} starting with a quote")
        if c in cols and cols[c] == "strings" and c in df.columns:
            for v in df[c].dropna():
                if not (isinstance(v, str) and v.startswith("[") and v.endswith("]")):
                    problem(f"{path}: pandas reads {v!r} in list column {c}")
                    break
        if c in cols and cols[c] == "list" and c in df.columns:
            for v in df[c].dropna():
                if not isinstance(v, str) or not isinstance(json.loads(v), list):
                    problem(f"{path}: pandas reads {v!r} in list column {c}")
                    break
    return df, rel


def check_jsonl(path, cols, order):
    seen = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            rec = json.loads(line)
            if list(rec) != [k for k in order if k in rec]:
                problem(f"{path}:{i + 1}: keys {list(rec)[:3]}... are not the schema's, in its order")
                return
            for k, v in rec.items():
                if v is not None:
                    seen.setdefault(k, set()).add(type(v).__name__)
                    ok = JSON_TYPES[cols[k]]
                    if not isinstance(v, ok) or (cols[k] == "u64" and isinstance(v, bool)):
                        problem(f"{path}:{i + 1}: {k} ({cols[k]}) is {v!r}")
                        return
                    if cols[k] == "list" and not all(isinstance(x, (int, float)) for x in v):
                        problem(f"{path}:{i + 1}: {k} holds {v!r}")
                    if cols[k] == "strings" and not all(isinstance(x, str) for x in v):
                        problem(f"{path}:{i + 1}: {k} holds {v!r}")
    for k, types in seen.items():
        # f64 values are written with decimals: always floats.
        if len(types) > 1:
            problem(f"{path}: {k} has JSON types {sorted(types)}")


def main():
    schema = json.load(open(sys.argv[1]))
    assert schema["schema_version"] == 1, schema["schema_version"]
    logs = {l["name"]: l["columns"] for l in schema["logs"]}
    checked = 0
    for d in sys.argv[2:]:
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            stem = name.removesuffix(".jsonl")
            if stem not in logs:
                continue
            cols = {c["name"]: c["type"] for c in logs[stem]}
            duck = {c["name"]: c["duckdb_type"] for c in logs[stem]}
            if name.endswith(".jsonl"):
                check_jsonl(path, cols, [c["name"] for c in logs[stem]])
            else:
                check_tsv(path, cols, duck)
            checked += 1
    print(f"checked {checked} logs, {len(problems)} problems")
    sys.exit(1 if problems or checked == 0 else 0)


if __name__ == "__main__":
    main()
