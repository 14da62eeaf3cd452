"""Terminal and repository tasks (issue 31, in progress): the shared task type
(`task.py`) and the trusted grader (`grade.py`). No id is registered yet."""
