"""One part file: a columnar Block written straight to parquet bytes through pyarrow (no DataFrame).

The file is plain parquet that pandas, pyarrow, DuckDB and Polars read: numbers as float64/int64,
labels dictionary-encoded (pandas reads them as categoricals), text inputs as strings, the grid
index as the `point` column, and pandas metadata so `pandas.read_parquet` restores the index.

Why these encodings (measured on 131k-point chunks of the BTA space, every column): a column
without nulls is declared non-nullable, which halves the writer's per-value work (no definition
levels); floats are BYTE_STREAM_SPLIT (sign-exponent and mantissa bytes apart) with lz4: 51 ms
and 12.9 MB per chunk, against 88 ms and 20.4 MB for PLAIN with lz4 and 240 ms and 21.7 MB for
pandas' default dictionary encoding, which overflows on the many columns that vary with every
axis and then falls back after hashing every value. Labels and text are dictionary-encoded; the
point index is delta-encoded (nearly free).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from wsemoe.store.block import Block, Labels, Text

COMPRESSION = "lz4"
WRITE_BATCH = 65_536  # values the writer encodes per call (its default of 1,024 costs 10% more)


def _arrow(col, typ: pa.DataType) -> pa.Array:
    if isinstance(col, Text):
        arr = pa.array(col.categories, type=pa.string()).take(pa.array(col.codes))
    elif isinstance(col, Labels):
        codes = col.codes.astype(np.int32)
        arr = pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), pa.array(col.categories, type=pa.string()))
    else:
        arr = pa.array(col)
    return arr if arr.type == typ else arr.cast(typ)


def _signature(block: Block) -> tuple:
    return tuple((n, type(c).__name__, None if isinstance(c, (Labels, Text)) else c.dtype.str)
                 for n, c in block.columns.items())


_SCHEMAS: dict = {}  # signature -> schema: chunks of one sweep share one (a dict is thread-safe enough here)


def schema(block: Block) -> pa.Schema:
    """The arrow schema and pandas metadata pandas itself would write for this block, derived from
    its first row once per kind of block (names and types), with every label column's dictionary
    indices 32-bit: pandas gives a categorical 8-bit codes up to 127 categories and wider ones beyond,
    and parts written with different widths could not be read as one dataset."""
    sig = _signature(block)
    if sig not in _SCHEMAS:
        if len(_SCHEMAS) > 64:
            _SCHEMAS.clear()
        sch = pa.Schema.from_pandas(block.take(slice(0, 1)).to_frame(), preserve_index=True)
        _SCHEMAS[sig] = pa.schema([f.with_type(pa.dictionary(pa.int32(), pa.string()))
                                   if pa.types.is_dictionary(f.type) else f for f in sch], metadata=sch.metadata)
    return _SCHEMAS[sig]


def _codes_type(n: int) -> str:
    """The integer type pandas gives the codes of a categorical of `n` categories (its `coerce_indexer_dtype`:
    the narrowest signed type whose maximum is above n)."""
    return next(t for t in ("int8", "int16", "int32", "int64") if n < np.iinfo(t).max)


def _metadata(sch: pa.Schema, block: Block) -> dict:
    """The shared schema's pandas metadata with each label column's category count (and codes type) this block's
    own, as pandas would write it for this part: the shared schema was derived from whichever chunk a process
    encoded first, so its counts made a part's bytes depend on what the process had encoded before (a part
    recomputed by `--resume`, or by another worker, came out different and failed its manifest checksum)."""
    counts = {n: len(c.categories) for n, c in block.columns.items() if type(c) is Labels}
    if not counts:
        return sch.metadata
    meta = json.loads(sch.metadata[b"pandas"])
    for col in meta["columns"]:
        if col["name"] in counts and col.get("pandas_type") == "categorical":
            col["metadata"] = {**col["metadata"], "num_categories": counts[col["name"]]}
            col["numpy_type"] = _codes_type(counts[col["name"]])
    return {**sch.metadata, b"pandas": json.dumps(meta).encode()}


def to_table(block: Block) -> pa.Table:
    """The block as an arrow table with the schema (and pandas metadata) pandas itself would write;
    columns without nulls are declared non-nullable."""
    sch = schema(block)
    arrays = [_arrow(c, f.type) for c, f in zip([*block.columns.values(), block.index], sch)]
    fields = [f.with_nullable(a.null_count > 0) for f, a in zip(sch, arrays)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=_metadata(sch, block)))


def to_bytes(block: Block) -> memoryview:
    """The part file's bytes (a view of arrow's buffer: hashed and written without a copy)."""
    table = to_table(block)
    labels = [n for n, c in block.columns.items() if isinstance(c, Labels)]
    encoding = {n: "BYTE_STREAM_SPLIT" for n, f in zip(table.column_names, table.schema) if pa.types.is_floating(f.type)}
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=COMPRESSION, use_dictionary=labels, write_batch_size=WRITE_BATCH,
                   column_encoding={**encoding, "point": "DELTA_BINARY_PACKED"}, write_statistics=["point"])
    return memoryview(sink.getvalue())
