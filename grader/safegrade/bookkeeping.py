"""nbgrader's bookkeeping without the work it repeats for every submission of a batch.

Profiling ``make autograde`` showed the grading process, which bounds a batch on two cores,
spending a third of each submission's CPU on work whose result never changes within a batch:

* nbgrader opens its gradebook about nine times per submission, each time with a new SQLAlchemy
  engine, so every statement is compiled again (an engine keeps the compiled statements); here
  the gradebooks of one database URL share one engine for the batch. Each gradebook still has its
  own session and runs the same statements, so what the gradebook holds is the same.
* nbgrader validates every cell's metadata with ``jsonschema.validate``, which first checks
  nbgrader's own, constant schema against the JSON Schema meta-schema, every cell; here each
  schema is checked once and its validator kept. Each cell is validated as before, and a
  cell that fails raises the same error (jsonschema's best match).

``batch_bookkeeping()`` applies both for the duration of a batch and undoes them after, so plain
``nbgrader autograde`` and the formgrader are unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def batch_bookkeeping() -> Iterator[None]:
    import nbgrader.api
    import nbgrader.nbgraderformat.common as nbformat_common

    engine_before = nbgrader.api.create_engine
    schema_before = nbformat_common.jsonschema
    nbgrader.api.create_engine = SharedEngines(engine_before)
    nbformat_common.jsonschema = CachedSchemas(schema_before)
    try:
        yield
    finally:
        nbgrader.api.create_engine = engine_before
        nbformat_common.jsonschema = schema_before


class SharedEngines:
    """``create_engine`` for nbgrader.api: one engine per URL and options (SQLAlchemy engines
    are thread-safe; each gradebook makes its own session of it)."""

    def __init__(self, create_engine):
        self.create_engine, self.engines, self.lock = create_engine, {}, threading.Lock()

    def __call__(self, url, **options):
        key = (str(url), tuple(sorted(options.items())))
        with self.lock:
            if key not in self.engines:
                self.engines[key] = self.create_engine(url, **options)
            return self.engines[key]


class CachedSchemas:
    """The ``jsonschema`` module as nbgrader's metadata validation uses it, with ``validate``
    checking each schema once (by identity: nbgrader's schemas are loaded once and never
    changed) and reusing its validator."""

    def __init__(self, jsonschema):
        self.jsonschema, self.validators, self.lock = jsonschema, {}, threading.Lock()

    def __getattr__(self, name: str):
        return getattr(self.jsonschema, name)

    def validate(self, instance, schema, cls=None, *args, **kwargs) -> None:
        if cls is not None or args or kwargs:
            return self.jsonschema.validate(instance, schema, cls, *args, **kwargs)
        with self.lock:
            entry = self.validators.get(id(schema))
            if entry is None or entry[0] is not schema:
                kind = self.jsonschema.validators.validator_for(schema)
                kind.check_schema(schema)
                entry = self.validators[id(schema)] = (schema, kind(schema))
        error = self.jsonschema.exceptions.best_match(entry[1].iter_errors(instance))
        if error is not None:
            raise error
