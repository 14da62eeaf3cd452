"""The task folders under taskdirs/ hold terminal-bench and Harbor tests
(tests/test_outputs.py) that only a task's grader runs, on the task's tree:
envgym's own test run never collects them."""

collect_ignore_glob = ["taskdirs/*"]
