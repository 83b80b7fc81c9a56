"""``python -m llmdisc``: the command-line interface."""

from llmdisc.cli import main

raise SystemExit(main())
