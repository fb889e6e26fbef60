"""Boards: the global board every view counts on, and the category boards a view names."""

from __future__ import annotations

import re

GLOBAL_BOARD = "global"
# A board name: 1-64 of [a-z0-9_.:-] ("cats", "user:123"); no '#', so keys that embed it stay unambiguous.
BOARD_NAME = re.compile(r"[a-z0-9_.:-]{1,64}")
MAX_BOARDS_PER_VIEW = 8
# N per board: the global board keeps the deployment's TopN, category boards their own (CategoryTopN).
