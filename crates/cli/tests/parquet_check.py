"""Reads tapstat's Parquet logs with pyarrow and DuckDB and checks them against the
TSV logs of the same run and against `tapstat schema --format json`
(crates/cli/tests/parquet.rs runs it).

usage: parquet_check.py SCHEMA.json TSV_DIR PARQUET_DIR [TSV_DIR PARQUET_DIR ...]

For every log of each TSV directory, the Parquet directory must hold `<log>.parquet`,
and both readers must give:
  - the TSV header's columns, in its order, each with the schema's `parquet_type`
    (pyarrow's spelling; DuckDB's own type names for the same types);
  - the TSV's rows, in its order (one worker: the same order), and in every row every
    value, rendered as tapstat renders it in TSV: integers and texts exactly (texts
    escaped as TSV escapes them), times in epoch µs as ms with 3 decimals, reals
    rounded to 3 decimals as tapstat rounds them (half away from zero, through
    |x| * 1000 in doubles: the same arithmetic, so the same text), lists in brackets,
    null as an empty field;
  - the file's metadata: `tapstat.version` and `tapstat.schema_version` as the
    schema's, `tapstat.log` the log's name (pyarrow: the key-value metadata; DuckDB:
    parquet_kv_metadata), and the units of the schema in pyarrow's field metadata.

Prints one line per problem and a summary, and exits 1 if there was any.
"""

import json
import os
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

DUCK = {
    "int64": "BIGINT",
    "double": "DOUBLE",
    "timestamp[us, tz=UTC]": "TIMESTAMP WITH TIME ZONE",
    "string": "VARCHAR",
    "bool": "BOOLEAN",
    "list<int64>": "BIGINT[]",
    "list<double>": "DOUBLE[]",
    "list<string>": "VARCHAR[]",
}

problems = []


def problem(msg):
    problems.append(msg)
    if len(problems) <= 50:
        print(msg)


def escape(s):
    return (
        s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r").replace('"', '\\"')
    )


def real(x):
    """tapstat's f64_value: 3 decimals, half away from zero."""
    a = abs(x) * 1000.0
    if a >= 1e18:
        return f"{x:.3f}"
    w = int(a)
    t = w + (1 if a - w >= 0.5 else 0)
    sign = "-" if x < 0 and t != 0 else ""
    return f"{sign}{t // 1000}.{t % 1000:03d}"


def micros(us):
    return f"{us // 1000}.{us % 1000:03d}"


def render(ty, v):
    """A value of a column of Parquet type `ty` as TSV writes it (timestamps come as
    integer µs)."""
    if v is None:
        return ""
    if ty == "int64":
        return str(v)
    if ty == "double":
        return real(v)
    if ty.startswith("timestamp"):
        return micros(v)
    if ty == "string":
        return escape(v)
    if ty == "bool":
        return "1" if v else "0"
    if ty == "list<int64>":
        return "[" + ",".join(str(x) for x in v) + "]"
    if ty == "list<double>":
        return "[" + ",".join(real(x) for x in v) + "]"
    if ty == "list<string>":
        return "[" + ",".join(escape(x) for x in v) + "]"
    raise ValueError(ty)


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", f"{path}: no line end at the end"
    header = lines[0].split("\t")
    return header, [l.split("\t") for l in lines[1:-1]]


def compare(path, reader, header, types, columns, tsv_rows):
    """`columns`: one list of values per column (timestamps as µs)."""
    n = len(columns[0]) if columns else 0
    if n != len(tsv_rows):
        problem(f"{path}: {reader} reads {n} rows, TSV has {len(tsv_rows)}")
        return 0
    shown = 0
    values = 0
    for j, c in enumerate(header):
        ty = types[c]
        for i, v in enumerate(columns[j]):
            values += 1
            got = render(ty, v)
            if got != tsv_rows[i][j]:
                shown += 1
                if shown <= 3:
                    problem(f"{path}: {reader}, row {i + 1}, {c} ({ty}): {got!r}, TSV {tsv_rows[i][j]!r}")
    if shown > 3:
        problem(f"{path}: {reader}: {shown} values differ from TSV in all")
    return values


def check(schema, tsv_dir, pq_dir, totals):
    logs = {l["name"]: l["columns"] for l in schema["logs"]}
    # The schema's log_tcp_complete says log_tcp_nocomplete has its columns.
    logs["log_tcp_nocomplete"] = logs["log_tcp_complete"]
    for name in sorted(os.listdir(tsv_dir)):
        if name not in logs:
            continue
        path = os.path.join(pq_dir, name + ".parquet")
        if not os.path.isfile(path):
            problem(f"{path}: missing (the TSV run wrote {name})")
            continue
        header, rows = read_tsv(os.path.join(tsv_dir, name))
        spec = {c["name"]: c for c in logs[name]}
        types = {c: spec[c]["parquet_type"] for c in header}

        # pyarrow
        f = pq.ParquetFile(path)
        kv = {k.decode(): v.decode() for k, v in (f.metadata.metadata or {}).items()}
        want = {
            "tapstat.version": schema["tapstat_version"],
            "tapstat.schema_version": str(schema["schema_version"]),
            "tapstat.log": name,
        }
        for k, v in want.items():
            if kv.get(k) != v:
                problem(f"{path}: metadata {k} is {kv.get(k)!r}, not {v!r}")
        table = f.read()
        if table.column_names != header:
            problem(f"{path}: pyarrow columns {table.column_names[:3]}..., TSV header {header[:3]}...")
            continue
        for field in table.schema:
            t = str(field.type).replace("item: ", "")
            if t != types[field.name]:
                problem(f"{path}: pyarrow type of {field.name} is {t}, the schema says {types[field.name]}")
            unit = (field.metadata or {}).get(b"unit", b"").decode()
            if unit != spec[field.name]["unit"]:
                problem(f"{path}: unit of {field.name} is {unit!r}, the schema says {spec[field.name]['unit']!r}")
        cols = []
        for c in header:
            col = table.column(c)
            if pa.types.is_timestamp(col.type):
                col = col.cast(pa.int64())
            cols.append(col.to_pylist())
        totals["values"] += compare(path, "pyarrow", header, types, cols, rows)
        totals["row_groups"] = max(totals["row_groups"], f.metadata.num_row_groups)

        # DuckDB
        rel = duckdb.read_parquet(path)
        duck_types = dict(zip(rel.columns, (str(t) for t in rel.types)))
        if rel.columns != header:
            problem(f"{path}: DuckDB columns {rel.columns[:3]}..., TSV header {header[:3]}...")
            continue
        for c in header:
            if duck_types[c] != DUCK[types[c]]:
                problem(f"{path}: DuckDB type of {c} is {duck_types[c]}, not {DUCK[types[c]]} ({types[c]})")
        quoted = path.replace("'", "''")
        select = ", ".join(
            f'epoch_us("{c}")' if types[c].startswith("timestamp") else f'"{c}"' for c in header
        )
        fetched = duckdb.sql(f"SELECT {select} FROM read_parquet('{quoted}')").fetchall()
        cols = [[r[j] for r in fetched] for j in range(len(header))] if fetched else [[] for _ in header]
        totals["values"] += compare(path, "DuckDB", header, types, cols, rows)
        meta = dict(
            (k.decode(), v.decode())
            for k, v in duckdb.sql(f"SELECT key, value FROM parquet_kv_metadata('{quoted}')").fetchall()
        )
        for k, v in want.items():
            if meta.get(k) != v:
                problem(f"{path}: DuckDB reads metadata {k} as {meta.get(k)!r}, not {v!r}")
        totals["logs"] += 1
        totals["rows"] += len(rows)


def main():
    schema = json.load(open(sys.argv[1]))
    assert schema["schema_version"] == 1, schema["schema_version"]
    dirs = sys.argv[2:]
    assert dirs and len(dirs) % 2 == 0, "pairs of TSV and Parquet directories"
    totals = {"logs": 0, "rows": 0, "values": 0, "row_groups": 0}
    for tsv_dir, pq_dir in zip(dirs[::2], dirs[1::2]):
        check(schema, tsv_dir, pq_dir, totals)
    print(
        f"checked {totals['logs']} Parquet logs, {totals['rows']} rows, {totals['values']} values "
        f"(pyarrow {pa.__version__} and DuckDB {duckdb.__version__}): {len(problems)} problems"
    )
    sys.exit(1 if problems or totals["logs"] == 0 else 0)


if __name__ == "__main__":
    main()
