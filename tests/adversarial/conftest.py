"""The adversarial suite's plumbing lives in tests/conftest.py (so that it also runs in pytest-xdist's
controller, which loads no conftest below tests/): slow tests only with ``-m slow``, and one line of
totals per run (``adversarial: N cases, 0 crashes, 0 changed bytes, 0 escapes, ...``) at the end of the
pytest output and in ``test-artifacts/adversarial.txt`` (``$SAMCTL_ARTIFACTS`` overrides the folder).
"""
