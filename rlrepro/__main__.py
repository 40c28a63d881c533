"""``python -m rlrepro``."""

from rlrepro.cli import main

raise SystemExit(main())
