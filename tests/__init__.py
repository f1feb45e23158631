"""The suite's machine settings, set here because this runs before any test module or
conftest imports polars, which sizes its thread pool once, at import.

`-n auto` starts one worker more than the machine has cores (tests/conftest.py), and each
worker's polars and DuckDB would start a thread per core for every query besides: on two cores,
three workers' query threads fought over them, in futex waits and yields the kernel counted as
system time. One thread each, measured on the reconciliation, sync, fault and alert tests (115
tests, four pairs run in turn): 72.0 -> 68.2 s, 131.5 -> 126.4 CPU-s; the whole suite 271 ->
261 s in one pair. What a test proves does not depend on it.

Children inherit both. A test that gives a child a user's environment (every CREDITLENS_*
variable removed) adds SUITE_VARIABLES back, through ``creditlens_variables`` or by hand.
"""

import os

SUITE_VARIABLES = {"CREDITLENS_DUCKDB_THREADS": "1"}

os.environ.setdefault("POLARS_MAX_THREADS", "1")
for _name, _value in SUITE_VARIABLES.items():
    os.environ.setdefault(_name, _value)
