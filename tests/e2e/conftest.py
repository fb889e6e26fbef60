"""End-to-end tests on Amazon DynamoDB Local: the engine fixtures (`engine`, `local_env`, `make_local`, `local`) live in
tests/conftest.py, so one session starts one engine for these tests and tests/contract alike."""
