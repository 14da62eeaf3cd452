"""``python -m envgym``: the same as the ``envgym`` command."""

from envgym.cli import main

raise SystemExit(main())
