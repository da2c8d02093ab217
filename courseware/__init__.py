"""The course's authoring tools: what `make` uses to build the course from its sources, never
what a learner imports (that is fxcourse, the learner's package, which imports nothing of this
one: tests/test_packages.py). The chapter builder (authoring), the student edition (edition), the
website (website), the notebooks' stamps and cleaning (notebooks), the translations (i18n, with
their catalogs in locale/)."""
