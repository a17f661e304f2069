"""Spark 4.3's semantics, in one bottom-layer home every engine path uses.

Each rule lives here once; the Variant codec (casts, JSON), the expression layer, the
shredding and table DDL and the Spark planner import it (``tests/semantics`` checks the
rules against a live Spark). Imports: the standard library, pyarrow and ``varlake.errors``.

- ``zones``: time-zone ids as ``DateTimeUtils.getZoneId`` resolves them; offsets at any instant
- ``numbers``: Java's ``Double.toString``/``Float.toString``, decimal text, float32 rounding
- ``string_casts``: string -> integer/double/decimal/boolean
- ``calendar``: epoch-day and epoch-microsecond arithmetic over any year
- ``datetime_text``: date/timestamp text out, string -> date/timestamp/time in
- ``types``: Spark type strings (parse, canonical text, identifier quoting)
- ``json_text``: JSON string escaping as Spark's Jackson writes it
- ``partition_values``: Delta partition values (rendering, parsing, escaping)
"""
