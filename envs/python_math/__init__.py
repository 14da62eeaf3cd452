"""PythonMath: exact-answer math problems, with Python in a sandbox (``envgym/PythonMath-v0``).

`generators` makes the problems and their answers, `answers` reads a reply's
answer as an exact number, `code_runs` runs the agent's code in a sandbox pool;
`datasets` loads the public sets' files (``problems=``), whose LaTeX answers
`latex_answers` checks with math-verify in a `latex_worker` process.
"""

from envgym.envs.python_math.python_math import RUN_PYTHON_TOOL, MathPreset, PythonMathEnv

__all__ = ["RUN_PYTHON_TOOL", "MathPreset", "PythonMathEnv"]
