#!/bin/bash
source $HOME/.local/bin/env
uv init
uv add pytest==8.4.1 numpy
uv run pytest $TEST_DIR/test_outputs.py -rA
