"""The grader's tools: measurements run by hand or by make (`make bench-grading`, `make
hub-sizing`), above every layer of the grader. They may import any of them; nothing in the grader
imports a tool (tests/test_grader_layout.py)."""
